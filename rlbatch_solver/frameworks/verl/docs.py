"""The introduction of this framework's rules page (docs/rules-*.md, written by ``rlbatch rules``)."""


def _unknown_keys(framework: str) -> str:
    """The pages' paragraph on keys the release's trainer config lacks (struct_keys.py), with the rule's id."""
    return (
        "A key one typing slip from a key of the release's trainer config, under a section that config holds "
        f"completely (`trainer.totl_epochs`), is `{framework}.launch.unknown_key` (did you mean "
        "`trainer.total_epochs`?): Hydra's struct config refuses it at launch (`Could not override ... is not in "
        "struct`); so is a key outside every section (`foo.bar`: Key 'foo' is not in struct), unless verl's recipe "
        "entry points add its section (`async_training`, `rollout`); so is a new key under an empty mapping, null or "
        "other value of that config, or under a mapping of the user's own keys (`actor_rollout_ref.rollout."
        "engine_kwargs.vllm.enable_expert_parallel`, `override_config.*`: write `+key=value`, as verl's own scripts "
        "do); and, under a release you name (`--framework verl==0.9.0`), a key only other releases' trainer configs "
        "have (0.9.1's `fsdp_config.use_no_sync_for_gradient_accumulation`), bar those verl's DAPO recipe adds "
        "(`data.gen_batch_size`, `algorithm.filter_groups.*`); a release judged by another's rules whose keys we list "
        "reads its own (0.7.0, 0.7.1's rules: 0.7.0's top-level `reward_manager.*` is taken, 0.7.1's `reward.*` "
        "refused), and one we hold no list of (0.6.0, judged by 0.6.1's rules) refuses only the keys the listed "
        "releases on both sides of it (0.5.0, 0.6.1) lack, and none where there is no list before it (0.4.x); "
        "either way the refusal names the release you named, and where that release has the same key one section up "
        "or down (0.7.1's `reward.reward_manager.*`, 0.7.0's `reward_manager.*`) fix renames it. `+` keys, other releases' keys under a release dated "
        "from the config or taken by default, and keys under a section far from every key of the release are never "
        "flagged. The key lists (0.5.0 to 0.9.1, and 0.7.0) are the releases' own "
        "`verl/trainer/config/_generated_ppo_trainer.yaml` and `_generated_ppo_megatron_trainer.yaml`, written to "
        "`rlbatch_solver/frameworks/verl/config_keys/` by `benchmarks/verl_config_keys.py`."
    )


INTRO = (
    "Every batch-size and parallelism rule verl 0.9.1 enforces on the FSDP/FSDP2 path, in the order a "
    "run meets them: the driver's `validate_config` at launch, the GPU workers starting (model engines, "
    "then the rollout engine and its replicas), the first training step of the default v1 trainer "
    "(`trainer.use_v1=True`). Sizes: `train_batch_size` and `ppo_mini_batch_size` count "
    "prompts (global); `*_per_gpu` sizes and token budgets count samples per GPU. Rules marked (warning) "
    "are ours on purpose: verl does not check them. Memory rules (`verl.memory.*`) come from the cost "
    "model (docs/cost-model.md) when a GPU and model are given. A pasted config that selects the Megatron "
    "backend (`model_engine=megatron`, `actor_rollout_ref.actor.strategy=megatron` or "
    "`--config-name=ppo_megatron_trainer`) is checked against the Megatron rules instead of the FSDP-only "
    "ones: see docs/rules-verl-megatron.md. A config group override (`actor@actor_rollout_ref.actor=megatron_actor`, "
    "`model_engine=veomni`) is taken where the release's trainer config lets Hydra apply it (an entry of its "
    "defaults list, an option its config folder ships, or any option beside a `hydra.searchpath`) and refused "
    "otherwise, as Hydra stops the launch; an engine we do not model (torchtitan, veomni, mindspeed, Megatron Lite's "
    "mlite_actor) has its batch sizes checked and its memory not evaluated. Sources are paths inside the verl 0.9.1 "
    "wheel. "
    + _unknown_keys("verl")
)


INTRO_MEGATRON = (
    "Every batch-size and parallelism rule verl 0.9.1 enforces on the Megatron backend "
    "(`model_engine=megatron`), in the order a run meets them: the driver's `validate_config` at launch, "
    "the GPU workers starting (megatron-core's process groups and `TransformerConfig`, the rollout engine), "
    "the first training step of the default v1 trainer. The rules without `megatron` in their id are the "
    "ones verl applies on both backends (docs/rules-verl.md), read here with Megatron's layout: dp = "
    "N/(TP*PP*CP), token budgets per GPU times CP. `ppo_micro_batch_size_per_gpu` counts samples per "
    "data-parallel rank. megatron-core's parallel state is process-global, so the critic (built first), "
    "reference and actor engines must use the same TP/PP/CP/EP/ETP/VPP. Head, layer and expert rules need "
    "`--model`. Dynamic context parallel and custom pipeline layouts (`pipeline_model_parallel_layout`) are "
    "not modelled. Sources are paths inside the verl 0.9.1 wheel and megatron-core 0.16.1. There is no "
    "Megatron memory model yet. "
    + _unknown_keys("verl-megatron")
)


def versions_markdown() -> str:
    """docs/rules-verl.md's table of what each older version we follow does differently (versions.py)."""
    from ..docs import rule_changes_table
    from .versions import NEWEST, PACKS, VERSIONS, changes

    lines = ["## Other versions: what changes from 0.9.1", "",
             f"`--framework verl==0.8.0` (or 0.7.1, 0.6.1, 0.5.0, 0.3.0, 0.2.0, 0.1.0; a patch release we do not list reads its series' rules) "
             f"checks with that version's rules; with no version, `check`, `fix` and `explain` read it from what "
             f"dates the config: keys that only some versions have (`trainer.use_legacy_worker_impl`: 0.5-0.7; "
             f"`critic.model.fsdp_config.*`: up to 0.7; `critic.fsdp.*`: 0.8+; `rollout.data_parallel_size`, `rollout.expert_parallel_size`: "
             f"0.6+; `trainer.use_v1`: 0.9; Megatron's "
             f"`*.megatron.grad_offload`, `*.load_weight`: up to 0.8; keys only releases before 0.6 have: "
             f"`actor.fsdp_config.grad_offload`, `*.megatron.num_layers_per_virtual_pipeline_stage`: 0.2.0; "
             f"`ref.param_offload`, `reward_model.param_offload`, `actor.checkpoint.contents`: 0.3.0; `ray_init.*`, "
             f"`actor.profile.*`, `trainer.profile_steps`, `rollout.engine_kwargs.vllm.swap_space`: 0.5.0, which "
             f"reads 0.4.x too), values only some accept (the global `actor.ppo_micro_batch_size`, "
             f"`rollout.log_prob_micro_batch_size`, `ref.log_prob_micro_batch_size`: 0.7.1, the newest whose legacy "
             f"workers convert them, 0.8's engine workers refuse them; `rollout.mode=sync`: 0.4-0.6; `rollout.name=hf`: "
             f"up to 0.7; `sglang_async`: 0.4; `trtllm`: 0.7+), or the "
             f"error message, and say which they used; otherwise {NEWEST}. A config checked with an older version "
             f"also gets one line, `upgrade: on verl {NEWEST} this config fails: ...`, naming the {NEWEST} rules it "
             "breaks that its own version does not (JSON: `upgrade`). Each version's default code path, and its "
             "rules against 0.9.1's (sources inside that version's wheel). Upgrading: a rule under *added* is one "
             "your config meets for the last time; one under *absent* is one 0.9.1 will hold it to. verl 0.2.0 "
             "(0.2.0.post2, the base of TinyZero, Search-R1, Logic-RL, PRIME and SimpleRL; 0.1.x configs too) is "
             "read from a config by its own keys or where the critic's global `critic.ppo_micro_batch_size` is set "
             "alone (a critic trains; 0.6.1 and later refuse it). Its memory differs too: its bundled vLLM sizes the KV cache as "
             "gpu_memory_utilization x the memory free at start-up, and drops its weights after every rollout; "
             "its actor update always computes the entropy with its gradient (whatever `entropy_coeff`), and it always "
             "runs a reference model. verl 0.1.0 (verl 0.1, and the verl of January 2025 the forks above ship as 0.1) "
             "is 0.2.0 with 0.1's defaults: gradient checkpointing off for the actor and the critic, and a reference "
             "kept on the GPU unless `ref.fsdp_config.param_offload`; name it with `--framework verl==0.1`. verl 0.5.0 "
             "(0.4.x too: `--framework verl==0.4.1`) is 0.6.1's rules with its defaults: `rollout.enforce_eager` True, "
             "so vLLM captures no CUDA graphs (False from verl PR #2956, 2025-08-08: a run of main after that date "
             "is 0.6.1's); verl 0.3.0 is 0.5.0 with an actor update that computes the entropy whatever "
             "`entropy_coeff`. A config with no key of a release before 0.6 is never dated to one (most 0.3-0.5 "
             "configs set only keys 0.6.1 has too): name it. A key only some releases' trainer config has by the lists of "
             "0.5.0-0.9.1's keys (config_keys/, 0.9.1's `fsdp_config.use_no_sync_for_gradient_accumulation`) dates "
             "nothing (the lists stop at 0.5.0, and a recipe's config may add it): a config with no other dating key "
             "is checked with 0.9.1 and the note names the key and the releases that have it.", ""]
    for version in VERSIONS[1:]:
        pack, diff = PACKS[version], changes(version)
        lines += [f"### verl {version}", "", f"Default code path: {pack.summary}.", "",
                  *rule_changes_table(diff, NEWEST, "version"), ""]
    return "\n".join(lines)
