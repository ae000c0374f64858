"""The introduction of this framework's rules page (docs/rules-*.md, written by ``rlbatch rules``)."""

INTRO = (
    "Every batch-size and parallelism rule OpenRLHF 0.11.2 (`python -m openrlhf.cli.train_ppo_ray`) "
    "enforces, in the order a run meets them: the asserts after argument parsing, `train()` building the "
    "placement groups, each model group's DeepSpeed init (DeepSpeed 0.19.6's batch assertion runs once per "
    "group: actor and critic unless dynamic batch is on, reference, reward model and EMA always when they "
    "run), the first rollout. Sizes: `rollout.batch_size` counts prompts; `train.batch_size` and the micro "
    "batch sizes count samples. Flags are the dotted 0.11.2 names; the pre-0.10.2 underscore names are "
    "accepted, mapped, and reported by a warning (0.11.2 rejects them). `runtime` rules are hangs, not "
    "errors. Rules marked (warning) are ours on purpose: OpenRLHF does not check them. A flag the release's "
    "`train_ppo_ray` does not have at all (`release_flags.py` lists every release's) is "
    "`openrlhf.launch.unknown_key` (argparse: `error: unrecognized arguments`), named with the flag it likely "
    "misspells. LoRA (`--ds.lora.rank`) is priced for the actor (an adapter on every linear layer over its frozen "
    "base), and 4-bit loading (`--ds.load_in_4bit`) with it prices the actor's base, the reference and the reward "
    "model at bitsandbytes NF4 bytes (docs/cost-model.md section 9.3); the critic's LoRA and a 4-bit model trained "
    "without LoRA are priced as full-parameter bf16 training, which the check says."
)


def versions_markdown() -> str:
    """docs/rules-openrlhf.md's appendix: what each older release we follow does differently (versions.py)."""
    from ..docs import rule_changes_table
    from .versions import NEWEST, PACKS, RELEASES, VERSIONS, changes, ruleset_for

    lines = ["## Other releases: what changes from 0.11.2", "",
             "`--framework openrlhf==0.10.4` (or 0.9.10, 0.8.11, 0.7.5, 0.6.2, 0.5.9, 0.4.0; a patch release we do not list "
             "reads its series' rules) checks "
             "with that release's rules and prices memory with its defaults. With no release named, `check`, `fix` "
             "and `explain` date the config by the train_ppo_ray flags only some releases have (read from each "
             f"release's wheel: `frameworks/openrlhf/release_flags.py`): {NEWEST} when it has them all, else the oldest "
             "release that has them all and takes the config's advantage estimator (docs/architecture.md, one "
             "policy with TRL and ms-swift), say which release they used and what breaks "
             f"on {NEWEST} (the `upgrade:` line); when nothing dates it, {NEWEST}. Sources are paths inside that "
             "release's wheel. `recommend` with a release "
             "named searches from that release's defaults, writes only flags its train_ppo_ray has (in its names), "
             "refuses an `--algo` whose advantage estimator or switches it lacks (an algorithm's KL placement it "
             "lacks is left out), solves no colocated layout without `--colocate_all_models` (0.4.0), and runs "
             "vLLM engines on GPUs of their own synchronously (no `--async_train` before 0.8); input errors name "
             "the release's flags.", "",
             "| release | DeepSpeed | micro_train_batch_size | micro_rollout_batch_size | vLLM memory share | "
             "gradient accumulation dtype | reference model | log-probs (costmodel `logits_impl`) | "
             "advantage estimators |",
             "|---|---|---|---|---|---|---|---|---|"]
    for version in VERSIONS:
        rel, variables = RELEASES[version], ruleset_for(version).variables
        lines.append(f"| {version} | {rel.deepspeed} | {variables['micro_train_batch_size'].default} | "
                     f"{variables['micro_rollout_batch_size'].default} | "
                     f"{variables['gmu_permille'].default / 1000:g} | "
                     f"{'fp32 (ZeRO-1: unpartitioned fp32 gradients)' if rel.grad_accum_fp32 else 'the weights (bf16)'} | "
                     f"{'always built' if rel.ref_always else 'when the KL coefficient > 0'} | `{rel.logits}` | "
                     f"{', '.join(rel.estimators) if rel.has_estimator else 'none (PPO with a critic)'} |")
    lines.append("")
    for version in VERSIONS[1:]:
        pack = PACKS[version]
        lines += [f"### OpenRLHF {version}", "", f"What differs: {pack.summary}.", ""]
        lines += rule_changes_table(changes(version), NEWEST, "release")
        lines.append("")
    return "\n".join(lines)
