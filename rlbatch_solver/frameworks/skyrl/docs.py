"""The introduction of SkyRL's rules page (docs/rules-skyrl.md)."""

INTRO = """SkyRL (github.com/NovaSky-AI/SkyRL; the `skyrl-train` package, 0.3.1) trains with Ray workers on FSDP,
FSDP2, DeepSpeed or Megatron and generates with vLLM or SGLang engines, colocated with the trainer
(`trainer.placement.colocate_all=true`, the default) or on GPUs of their own. Its config is Hydra's
`ppo_base_config.yaml` under dotted overrides (`uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base
trainer.train_batch_size=1024 ...`). Its batch keys are verl's in other words: `trainer.train_batch_size` and
`trainer.policy_mini_batch_size` count prompts, `generator.n_samples_per_prompt` is verl's rollout.n,
`trainer.micro_train_batch_size_per_gpu` (policy and critic) and `micro_forward_batch_size_per_gpu` count samples per
GPU. The rules below are the checks of `validate_cfg` (skyrl_train/utils/utils.py: `validate_generator_cfg` first,
then `validate_batch_sizes` and the placement checks) that concern batches, parallel sizes, placement and the
training strategy, plus the two the workers make (the Ulysses mesh and heads). SkyRL floors each per-GPU division and
asks divisibility of the floored values. Its checks on names (policy loss, advantage estimator, loss reduction),
checkpoints, logging, TIS and remote engines are not batch rules and are not listed. Memory and time are verl's FSDP
cost terms through a key map (frameworks/skyrl/cost.py): with colocate_all the models leave the GPU while the engines
generate and the engines sleep; without it the engines get `num_inference_engines x tensor x pipeline x data
parallel` GPUs of their own. DeepSpeed ZeRO-3 is priced as FSDP sharding; the Megatron strategy's tensor and
pipeline split is not priced (its memory is FSDP's over the same GPUs). A script of SkyRL's unified `skyrl` package
(`-m skyrl.train.entrypoints.main_base`, the engine's keys under `generator.inference_engine.`) is read in these names
(frameworks/skyrl/unified.py: `generator.inference_engine.num_engines` as `generator.num_inference_engines`, and so
on; its defaults that differ written in) and checked with these rules; `fix --write` writes its own names back."""
