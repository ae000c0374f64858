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
    "`--server.data_parallel_size` and the job's GPUs as `--gpus` to check the budget. TRL before 1.0 also "
    "required the per-step global batch to hold whole prompt groups (trl #2858, #3061); 1.16 requires it of "
    "the generation batch only. `GRPOConfig` refuses sequence-dimension parallelism (`parallelism_config` with "
    "`cp_size` or `sp_size` > 1), which accelerate sets from Python only: not a flag, not a rule here. Sources "
    "are paths inside the trl 1.16.0 wheel."
)
