"""The introduction of this framework's rules page (docs/rules-*.md, written by ``rlbatch rules``)."""

INTRO = (
    "Every batch-size and parallelism rule OpenRLHF 0.11.2 (`python -m openrlhf.cli.train_ppo_ray`) "
    "enforces, in the order a run meets them: the asserts after argument parsing, `train()` building the "
    "placement groups, each model group's DeepSpeed init (DeepSpeed 0.19.6's batch assertion runs once per "
    "group: actor and critic unless dynamic batch is on, reference, reward model and EMA always when they "
    "run), the first rollout. Sizes: `rollout.batch_size` counts prompts; `train.batch_size` and the micro "
    "batch sizes count samples. Flags are the dotted 0.11.2 names; the pre-0.10.2 underscore names are "
    "accepted, mapped, and reported by a warning (0.11.2 rejects them). `runtime` rules are hangs, not "
    "errors. Rules marked (warning) are ours on purpose: OpenRLHF does not check them."
)
