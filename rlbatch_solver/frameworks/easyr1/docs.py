"""The introduction of EasyR1's rules page (docs/rules-easyr1.md)."""

INTRO = """EasyR1 (github.com/hiyouga/EasyR1) is a fork of verl for R1-style RL on language and vision-language
models. Its config is a YAML file plus dotted overrides (`python3 -m verl.trainer.main
config=examples/config.yaml worker.rollout.n=8 ...`; the command line wins over the file). Its keys map onto verl's:
`data.rollout_batch_size` is verl's `data.train_batch_size`, `worker.actor.global_batch_size` verl's
`ppo_mini_batch_size` (both count prompts), `micro_batch_size_per_device_for_update` / `_for_experience` verl's
per-GPU micro batches. The rules below are EasyR1 0.3.2's own (tag v0.3.2): it checks the rollout batch against
the update and experience sizes in its trainer, floors the per-GPU update batch in its workers (where verl asserts
a whole one), and the rest surfaces as `DataProto.chunk` / `split` assertions in the first step. Dynamic batching
(on by default) turns each micro batch size into a token budget of that many longest samples; the divisibility
checks still apply. Memory and time are verl's FSDP cost terms with EasyR1's defaults (vLLM asleep at level 1,
max_model_len = prompt + response). `--framework easyr1` reads `config=examples/config.yaml` as EasyR1 0.3.2's
published example when that file is not on this machine; another config file is read when it is. The trainer's and
workers' start-up rules are held to EasyR1's own code (its config merge, `RayPPOTrainer.__init__`,
`FSDPWorker._init_dist_mesh`, `_build_rollout` and `vLLMRollout.__init__`) on 2,000 generated configs by
`tests/parity/test_parity_easyr1.py` (docs/parity.md), where EasyR1's source tree is at hand: EasyR1 is not on
PyPI (its package builds as `verl` 0.3.2), so CI, which installs from PyPI only, does not run it and says so. v0.3.2
is EasyR1's newest release tag."""
