"""The introduction of this framework's rules page (docs/rules-trl.md, written by ``rlbatch rules``)."""

INTRO = (
    "Every batch-size, generation and parallelism rule TRL 1.16.0's GRPO enforces (`accelerate launch ... "
    "grpo.py` or `trl grpo`, the flags being `GRPOConfig` fields), in the order a run meets them: "
    "`GRPOConfig.__post_init__` (argument parsing), `GRPOTrainer.__init__`, then the colocated vLLM engine "
    "starting. Sizes count completions. The world size W is accelerate's `--num_processes` (the processes of "
    "all machines), else its config file's `num_processes`, else `--gpus`. The generation batch defaults to "
    "`per_device_train_batch_size*W*steps_per_generation` with `steps_per_generation` = "
    "`gradient_accumulation_steps`; `generation_batch_size` and `steps_per_generation` may not both be set. "
    "The default `beta` is 0.0, so no reference model is loaded unless `--beta` is given. In server mode "
    "`trl vllm-serve` runs on other GPUs: give its sizes as `--server.tensor_parallel_size` / "
    "`--server.data_parallel_size` and the job's GPUs as `--gpus` to check the budget. TRL 0.15-0.16 "
    "required the per-step global batch to hold whole prompt groups (open-r1 #249, trl #2858, #3061), 0.17 the "
    "optimizer step's (x gradient_accumulation_steps), 0.14 nothing; 1.16 requires it of the generation batch only (the releases we follow before 1.16: the appendix). "
    "`GRPOConfig` refuses sequence-dimension parallelism (`parallelism_config` with "
    "`cp_size` or `sp_size` > 1), which accelerate sets from Python only: not a flag, not a rule here. Under "
    "`trl grpo` a flag that is no option of its grpo script is `trl.launch.unknown_key` (HfArgumentParser: "
    "`Some specified arguments are not used`), named with the flag it likely misspells; pasted flags that a "
    "script of your own may read get a note instead. Sources are paths inside the trl 1.16.0 wheel."
)


def versions_markdown() -> str:
    """docs/rules-trl.md's appendix: what each older release we follow does differently (versions.py)."""
    from ..docs import rule_changes_table
    from .versions import NEWEST, PACKS, RELEASES, VERSIONS, changes, prompt_cut, prompt_field_ignored

    lines = ["## Other releases: what changes from 1.16.0", "",
             "`--framework trl==0.29.1` (or 0.19.1, 0.18.2, 0.17.0, 0.16.1, 0.15.2, 0.14.0; a patch release we do not "
             "list reads its series' rules) checks with that release's rules and prices memory with its defaults. "
             "With no release named, `check`, `fix` and `explain` date the config by the GRPOConfig fields only some "
             "releases have (each minor release's own fields from 0.14 to 0.29, 1.0.0 and 1.16.0, read from its "
             "wheel: `frameworks/trl/release_fields.py`; a `scale_rewards` word dates it 0.22 or later, a `loss_type` the first minor release that has it) and say which "
             f"they used: {NEWEST} when it has them all (nothing says the config is old), else the *oldest* release "
             "that has them all (the fields were there when the config was written: open-r1's recipes with "
             "`max_prompt_length` and `vllm_mode` read as 0.18.2, which they ran). A release without a pack of its "
             "own is checked with its neighbour's (0.20-0.21: 0.19.1's; 0.22-0.28: 0.29.1's; 1.0: "
             f"{NEWEST}'s), its own fields kept. Checked with an older release, the report's `upgrade:` line says what "
             f"{NEWEST} refuses. When nothing dates the config, {NEWEST}. Sources are paths inside that release's "
             "wheel.", "",
             "| release | per_device_train_batch_size counts | beta (reference model) | `--use_vllm` without "
             "`--vllm_mode` | max_completion_length | max_prompt_length | gradient_checkpointing |",
             "|---|---|---|---|---|---|---|"]
    where = {"colocate": "colocate (in the training processes)", "server": "server (`trl vllm-serve`, GPUs of its own)",
             "device": "one engine on `vllm_device` (default: the GPU after the training ranks)",
             "server_only": "server (`trl vllm-serve`; no other mode)"}
    for version in VERSIONS:
        rel = RELEASES[version]
        ref = "always built (beta 0.04 weighs the KL)" if rel.ref_always else (
            f"{rel.beta} ({'a reference model' if rel.beta else 'none'})")
        lines.append(f"| {version} | {'prompts (x num_generations completions)' if rel.batch_counts_prompts else 'completions'}"
                     f" | {ref} | {where[rel.vllm_mode]} | {rel.completion_length} | "
                     f"{prompt_cut(version) or ('never read' if prompt_field_ignored(version) else '(no such field)')} | "
                     f"{'on' if rel.grad_ckpt else 'off (transformers TrainingArguments default)'} |")
    lines.append("")
    for version in VERSIONS[1:]:
        pack, diff = PACKS[version], changes(version)
        lines += [f"### TRL {version}", "", f"What differs: {pack.summary}.", ""]
        if not any(diff.values()):
            lines += [f"Its rules are {NEWEST}'s (messages name {version}); its defaults above change what runs "
                      "where, and so the memory.", ""]
            continue
        lines += [*rule_changes_table(diff, NEWEST, "release"), ""]
    return "\n".join(lines)
