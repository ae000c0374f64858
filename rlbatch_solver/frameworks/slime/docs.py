"""The introduction of slime's rules page (docs/rules-slime.md)."""

INTRO = """slime (github.com/THUDM/slime) trains LLMs with RL on Megatron-LM and generates with SGLang, on Ray. Its
command line (`python3 train.py --flag value ...`, usually through `ray job submit`) is Megatron-LM's parser plus
slime's arguments plus SGLang's server arguments prefixed `--sglang-`. The rules below are slime 0.3.1's (tag
v0.3.1): `slime_validate_args`, Megatron-LM's `validate_args` at the commit slime's Dockerfile pins (1dcf0da), SGLang's
checks in slime's wrapper, the placement group, Megatron's micro-batch calculator and the per-rollout data-parallel
schedule. `--rollout-batch-size` counts prompts; `--global-batch-size` and `--micro-batch-size` count samples; an
unset global batch is `rollout_batch_size x n_samples_per_prompt // num_steps_per_rollout`, or Megatron's
`micro_batch_size x dp`. Memory and time are verl-megatron's cost terms read through slime's arguments (SGLang's
KV pool from `--sglang-mem-fraction-static`, or SGLang's own default for the GPU; the reference's weights on the host;
`--colocate` offloads Megatron and releases SGLang between phases). Pass `--gpus` with the Ray cluster's GPU count to
check the placement: `--colocate` shares the actor's GPUs, otherwise the engines take `--rollout-num-gpus` more.
`tests/parity/test_parity_slime.py` (docs/parity.md) holds the start-up rules to slime's own `slime_validate_args`,
its SGLang checks and `build_dp_schedule` where slime's source tree is at hand, and to megatron-core's micro-batch
calculator everywhere: slime is not on PyPI (the name belongs to another project), so CI, which installs from PyPI
only, runs the calculator alone and says so."""
