"""ms-swift 4.6.0's own error messages (and megatron-core's, where it delegates), mapped to our rules.

``tests/test_explain.py`` checks that every rule id exists in the ms-swift rule sets and that each
pattern matches the message the framework really prints (``example``).
"""

from __future__ import annotations

from ...costmodel.phase import Phase
from ..error_text import ErrorPattern, _near, group_sizes, some_divisors


n = r"\((?P<{}>\d+)\)".format
hf_gen = "swift/rlhf_trainers/args_mixin.py:RolloutTrainerArgumentsMixin._init_generation_batch_params"
mg_gen = "swift/megatron/arguments/megatron_args.py:RLHFMegatronArgumentsMixin"
liger_args = "swift/arguments/rlhf_args.py:RLHFArguments._check_grpo"
colocate = ErrorPattern(
    "swift", rf"vllm_tensor_parallel_size {n('tp')} must divide world size {n('world')} evenly",
    ("swift.rollout.colocate_tp_divides_world",), "swift/rlhf_trainers/rollout_mixin.py:RolloutTrainerMixin._prepare_vllm",
    "ValueError: vllm_tensor_parallel_size (3) must divide world size (8) evenly.",
    hint=lambda x: (f"in colocate mode vLLM engines are built from groups of --vllm_tensor_parallel_size {x['tp']} "
                    f"training ranks, which must divide the {x['world']} ranks (NPROC_PER_NODE x NNODES); use one "
                    f"of {some_divisors(x['world'])}."),
    numbers=("tp", "world"))
trainer_3 = "swift/trainers/rlhf_trainer/grpo_trainer.py:GRPOTrainer.__init__"


def _trainer_batch(what: str, names: str, flag: str):
    """The hint of 3.2-3.4's GRPOTrainer.__init__ batch message: the completions it counts, the group sizes that
    split them, and the flag to change."""
    def hint(x: dict[str, int | str]) -> str:
        total = 1
        for k in ("w", "b", "ga"):
            total *= int(x.get(k, 1))
        return (f"{names} = {total} completions per {what} do not split into groups of {x['g']}; num_generations "
                f"that divide it: {group_sizes(total)} (or change {flag})")
    return hint


PATTERNS: list[ErrorPattern] = [
    # ms-swift before 3.5 (no generation batch) prints TRL 0.15-0.17's messages from its own GRPOTrainer.__init__
    # (the 3.3.1 and 3.4.1 wheels): the global batch W x B in 3.2-3.3, the optimizer step's W x B x GA in 3.4
    ErrorPattern("swift", rf"global train batch size \((?P<w>\d+) x (?P<b>\d+)\) must be evenly divisible by the "
                          rf"number of generations per prompt {n('g')}",
                 ("swift.trainer.batch_divisible_by_num_generations",), f"{trainer_3} (ms-swift 3.2-3.3)",
                 "ValueError: The global train batch size (8 x 2) must be evenly divisible by the number of "
                 "generations per prompt (16). Given the current train batch size, the valid values for the number "
                 "of generations are: [2, 4, 8, 16].",
                 hint=_trainer_batch("step", "NPROC_PER_NODE x per_device_train_batch_size",
                                     "--per_device_train_batch_size"),
                 numbers=("w", "b", "g"), versions=("3.3.1",)),
    ErrorPattern("swift", rf"effective train batch size \((?P<w>\d+) x (?P<b>\d+) x (?P<ga>\d+)\) must be evenly "
                          rf"divisible by the number of generations per prompt {n('g')}",
                 ("swift.trainer.batch_divisible_by_num_generations",), f"{trainer_3} (ms-swift 3.4)",
                 "ValueError: The effective train batch size (8 x 1 x 1) must be evenly divisible by the number of "
                 "generations per prompt (16). Given the current effective train batch size, the valid values for "
                 "the number of generations are: [2, 4, 8].",
                 hint=_trainer_batch("optimizer step", "NPROC_PER_NODE x per_device_train_batch_size x "
                                     "gradient_accumulation_steps", "--gradient_accumulation_steps"),
                 numbers=("w", "b", "ga", "g"), versions=("3.4.1", "3.4.0")),
    # their eval check, where an eval split is set: W x per_device_eval_batch_size ("global" in 3.3.1, "effective" in
    # 3.4.1)
    ErrorPattern("swift", rf"global eval batch size \((?P<w>\d+) x (?P<b>\d+)\) must be evenly divisible by the "
                          rf"number of generations per prompt {n('g')}",
                 ("swift.trainer.eval_batch_divisible_by_num_generations",), f"{trainer_3} (ms-swift 3.2-3.3)",
                 "ValueError: The global eval batch size (8 x 1) must be evenly divisible by the number of "
                 "generations per prompt (16). Given the current eval batch size, the valid values for the number of "
                 "generations are: [2, 4, 8].",
                 hint=_trainer_batch("eval batch", "NPROC_PER_NODE x per_device_eval_batch_size",
                                     "--per_device_eval_batch_size"),
                 numbers=("w", "b", "g"), versions=("3.3.1",)),
    ErrorPattern("swift", rf"effective eval batch size \((?P<w>\d+) x (?P<b>\d+)\) must be evenly divisible by the "
                          rf"number of generations per prompt {n('g')}",
                 ("swift.trainer.eval_batch_divisible_by_num_generations",), f"{trainer_3} (ms-swift 3.4)",
                 "ValueError: The effective eval batch size (8 x 1) must be evenly divisible by the number of "
                 "generations per prompt (16). Given the current effective eval batch size, the valid values for the "
                 "number of generations are: [2, 4, 8].",
                 hint=_trainer_batch("eval batch", "NPROC_PER_NODE x per_device_eval_batch_size",
                                     "--per_device_eval_batch_size"),
                 numbers=("w", "b", "g"), versions=("3.4.1", "3.4.0")),
    ErrorPattern("swift", rf"generation_batch_size {n('gen')} must be divisible by the global batch size {n('gbs')}",
                 ("swift.args.gen_divisible_by_base",), hf_gen,
                 "ValueError: generation_batch_size (500) must be divisible by the global batch size (16).",
                 hint=lambda x: (f"--generation_batch_size {x['gen']} is not a whole number of training steps of "
                                 f"{x['gbs']} completions (per_device_train_batch_size x world size); use "
                                 f"{_near(x['gen'], x['gbs'])}, or set --steps_per_generation instead."),
                 numbers=("gen", "gbs")),
    ErrorPattern("swift", rf"generation_batch_size {n('gen')} must equal per_device_train_batch_size \* world_size"
                 r"(?:[^=\n]*= (?P<want>\d+))?",
                 ("swift.args.gen_equals_base_times_spg",), hf_gen,
                 "ValueError: generation_batch_size (96) must equal per_device_train_batch_size * world_size * "
                 "steps_per_generation = 64.",
                 hint=lambda x: (f"--generation_batch_size {x['gen']} and --steps_per_generation disagree: "
                                 "generation_batch_size must be per_device_train_batch_size x world size x "
                                 "steps_per_generation" + (f" = {x['want']}" if "want" in x else "")
                                 + "; set only one of the two, or make them agree."),
                 numbers=("gen", "want")),
    ErrorPattern("swift", rf"generation_batch_size {n('gen')} must be evenly divisible by num_generations {n('g')}",
                 ("swift.args.gen_divisible_by_num_generations",), hf_gen,
                 "ValueError: generation_batch_size (16) must be evenly divisible by num_generations (12). "
                 "Valid values: [2, 4, 8, 16].",
                 hint=lambda x: (f"--generation_batch_size {x['gen']} completions do not split into groups of "
                                 f"--num_generations {x['g']}; use a num_generations that divides {x['gen']} "
                                 f"({group_sizes(x['gen'])}), or a generation batch that is a multiple of {x['g']} "
                                 "(unset, it is per_device_train_batch_size x world size x steps_per_generation, "
                                 "which defaults to gradient_accumulation_steps)."),
                 numbers=("gen", "g")),
    ErrorPattern("swift", r"global eval batch size .{0,40}must be\s+evenly divisible by num_generations_eval",
                 ("swift.args.eval_batch_divisible_by_num_generations_eval",), hf_gen,
                 "ValueError: The global eval batch size (4 x 1) must be evenly divisible by num_generations_eval "
                 "(8). Valid values: [1, 2, 4].",
                 hint=lambda x: ("the eval batch (--per_device_eval_batch_size x world size) must be a multiple "
                                 "of --num_generations_eval (num_generations unless set); raise "
                                 "per_device_eval_batch_size, or set --num_generations_eval to one of the valid "
                                 "values the message lists.")),
    ErrorPattern("swift", r"num_generations must be greater than 1 for GRPO",
                 ("swift.args.num_generations_at_least_two",), "swift/arguments/rlhf_args.py:RLHFArguments._check_teacher",
                 "ValueError: num_generations must be greater than 1 for GRPO",
                 hint=lambda x: ("GRPO without a --teacher_model compares several answers to one prompt; set "
                                 "--num_generations to 2 or more.")),
    ErrorPattern("swift", r"vllm_mode is required when use_vllm is true", ("swift.args.vllm_mode_required",),
                 "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                 "ValueError: vllm_mode is required when use_vllm is true",
                 hint=lambda x: ("--use_vllm true needs --vllm_mode (no default since ms-swift 3.12): add "
                                 "--vllm_mode colocate (vLLM on the training GPUs) or --vllm_mode server (a "
                                 "separate `swift rollout` server).")),
    ErrorPattern("swift", r"vllm_mode is not supported when use_vllm is false",
                 ("swift.args.vllm_mode_needs_use_vllm",), "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                 "ValueError: vllm_mode is not supported when use_vllm is false",
                 hint=lambda x: ("--vllm_mode is set while --use_vllm is false; add --use_vllm true, or drop "
                                 "--vllm_mode.")),
    ErrorPattern("swift", r"async generate require vllm_mode == server", ("swift.args.async_generate_needs_server",),
                 "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                 "AssertionError: async generate require vllm_mode == server, ",
                 hint=lambda x: ("--async_generate needs a separate `swift rollout` server: set --vllm_mode "
                                 "server (with --vllm_server_host), or drop --async_generate.")),
    colocate,
    ErrorPattern("swift-megatron", colocate.pattern, colocate.rules,
                 "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin._init_rollout_engine", colocate.example,
                 hint=colocate.hint),
    ErrorPattern("swift-megatron",
                 rf"generation_batch_size {n('gen')} must be divisible by global_batch_size {n('gbs')}",
                 ("swift.args.gen_divisible_by_base",), f"{mg_gen}.resolve_generation_batch_size",
                 "ValueError: generation_batch_size (100) must be divisible by global_batch_size (16)",
                 hint=lambda x: (f"--generation_batch_size {x['gen']} is not a whole number of steps of "
                                 f"--global_batch_size {x['gbs']}; use {_near(x['gen'], x['gbs'])}, or set "
                                 "--steps_per_generation instead."),
                 numbers=("gen", "gbs")),
    ErrorPattern("swift-megatron", rf"generation_batch_size {n('gen')} must equal global_batch_size {n('gbs')}"
                 rf"(?: \* steps_per_generation {n('spg')} = (?P<want>\d+))?",
                 ("swift.args.gen_equals_base_times_spg",), f"{mg_gen}.resolve_generation_batch_size",
                 "ValueError: generation_batch_size (96) must equal global_batch_size (16) * steps_per_generation "
                 "(4) = 64.",
                 hint=lambda x: (f"--generation_batch_size {x['gen']} must equal --global_batch_size {x['gbs']} x "
                                 "--steps_per_generation" + (f" = {x['want']}" if "want" in x else "")
                                 + "; set only one of generation_batch_size and steps_per_generation, or make them "
                                 "agree."),
                 numbers=("gen", "gbs", "want")),
    ErrorPattern("swift-megatron", rf"generation_batch_size {n('gen')} must be divisible by num_generations {n('g')}",
                 ("swift.args.gen_divisible_by_num_generations",), f"{mg_gen}.resolve_generation_batch_size",
                 "ValueError: generation_batch_size (16) must be divisible by num_generations (3).",
                 hint=lambda x: (f"--generation_batch_size {x['gen']} completions do not split into groups of "
                                 f"--num_generations {x['g']}; use a num_generations that divides {x['gen']} "
                                 f"({group_sizes(x['gen'])}), or a generation batch that is a multiple of {x['g']} "
                                 "(unset, it is --global_batch_size x --steps_per_generation)."),
                 numbers=("gen", "g")),
    ErrorPattern("swift-megatron", rf"num_rollout_prompt {n('prompts')} = generation_batch_size .{{0,80}}must be "
                 rf"divisible by dp_size {n('dp')}",
                 ("swift_megatron.args.rollout_prompts_divisible_by_dp",), f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: num_rollout_prompt (4) = generation_batch_size (16) // num_generations (4) must be "
                 "divisible by dp_size (8). Please adjust generation_batch_size/steps_per_generation/num_generations.",
                 hint=lambda x: (f"the {x['prompts']} prompts of a rollout (generation_batch_size // "
                                 f"num_generations) do not split over the {x['dp']} data-parallel ranks (GPUs / "
                                 f"(TP x PP x CP)); make it a multiple of {x['dp']} by raising "
                                 "--generation_batch_size (unset, it is --global_batch_size x "
                                 "--steps_per_generation), or lower the data-parallel size."),
                 numbers=("prompts", "dp")),
    ErrorPattern("swift-megatron", r"per_device_num_rollout_prompt \((?P<prompts>\d+)\) must be (>= 1|greater than)",
                 ("swift_megatron.args.rollout_prompts_per_dp_at_least_one",),
                 f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: per_device_num_rollout_prompt (0) must be >= 1, please adjust "
                 "generation_batch_size/steps_per_generation/num_generations.",
                 hint=lambda x: (f"each data-parallel rank would get {x['prompts']} prompts per rollout: "
                                 "generation_batch_size // num_generations is below the data-parallel size; raise "
                                 "--generation_batch_size (unset, it is --global_batch_size x "
                                 "--steps_per_generation) to at least num_generations x the data-parallel size."),
                 numbers=("prompts",)),
    ErrorPattern("swift-megatron", rf"Per-device rollout prompt count {n('prompts')} .{{0,160}}must be divisible by "
                 rf"micro_batch_size {n('micro')}",
                 ("swift_megatron.args.rollout_prompts_per_dp_divisible_by_micro",),
                 f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: Per-device rollout prompt count (3) = (generation_batch_size (96) // num_generations "
                 "(4)) // dp_size (8) must be divisible by micro_batch_size (2).",
                 hint=lambda x: (f"each data-parallel rank gets {x['prompts']} prompts per rollout, not a multiple "
                                 f"of --micro_batch_size {x['micro']}; use a micro_batch_size that divides "
                                 f"{x['prompts']} ({some_divisors(x['prompts'])}), or raise "
                                 "--generation_batch_size (unset, it is --global_batch_size x "
                                 "--steps_per_generation)."),
                 numbers=("prompts", "micro")),
    ErrorPattern("swift-megatron", r"per_device_generation_batch_size \((?P<per_device>\d+)\) must be >= 1",
                 ("swift_megatron.args.generation_per_device_at_least_one",), f"{mg_gen}.validate_batch_dp_alignment",
                 "ValueError: per_device_generation_batch_size (0) must be >= 1.",
                 hint=lambda x: ("--generation_batch_size is below the GPU count, so each GPU would generate "
                                 f"{x['per_device']} completions; raise --generation_batch_size to a multiple of "
                                 "NPROC_PER_NODE x NNODES."),
                 numbers=("per_device",)),
    ErrorPattern("swift-megatron", rf"global batch size {n('gbs')} is not divisible by micro batch size {n('micro')} "
                 rf"times data parallel size {n('dp')}",
                 ("swift_megatron.args.global_batch_divisible_by_micro_dp",),
                 "swift/megatron/arguments/megatron_args.py:MegatronArguments._init_distributed",
                 "ValueError: global batch size (12) is not divisible by micro batch size (2) times data parallel "
                 "size (4).",
                 hint=lambda x: (f"--global_batch_size {x['gbs']} is not a whole number of --micro_batch_size "
                                 f"{x['micro']} x {x['dp']} data-parallel ranks = {x['micro'] * x['dp']}; use "
                                 f"{_near(x['gbs'], x['micro'] * x['dp'])}, or a micro_batch_size that fits."),
                 numbers=("gbs", "micro", "dp")),
    ErrorPattern("swift-megatron", rf"world_size {n('world')} is not divisible by (?P<mp>\d+)\b",
                 ("swift_megatron.mcore.world_divisible_by_model_parallel",),
                 "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)",
                 "RuntimeError: world_size (8) is not divisible by 3",
                 hint=lambda x: (f"the {x['world']} GPUs do not split into model-parallel groups of {x['mp']} "
                                 "(--tensor_model_parallel_size x --pipeline_model_parallel_size x "
                                 f"--context_parallel_size); use sizes whose product divides {x['world']}: "
                                 f"{some_divisors(x['world'])}."),
                 numbers=("world", "mp")),
    ErrorPattern("swift-megatron", rf"world_size {n('world')} is not divisible by "
                 rf"expert_tensor_model_pipeline_parallel size {n('expert_mp')}",
                 ("swift_megatron.mcore.world_divisible_by_expert_parallel",),
                 "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)",
                 "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (6)",
                 hint=lambda x: (f"the {x['world']} GPUs do not split into expert groups of {x['expert_mp']} "
                                 "(--expert_tensor_parallel_size x --expert_model_parallel_size x "
                                 f"--pipeline_model_parallel_size); use sizes whose product divides {x['world']}: "
                                 f"{some_divisors(x['world'])}."),
                 numbers=("world", "expert_mp")),
    ErrorPattern("swift-megatron", r"Invalid vllm_mode: None", ("swift_megatron.rollout.vllm_mode_required",),
                 "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin._init_rollout_engine",
                 "ValueError: Invalid vllm_mode: None",
                 hint=lambda x: ("Megatron GRPO with --use_vllm true needs --vllm_mode: add --vllm_mode colocate "
                                 "or --vllm_mode server.")),
    ErrorPattern("swift-megatron", r"use_vllm must be True for Megatron GRPO",
                 ("swift_megatron.args.use_vllm_required",), f"{mg_gen}._init_grpo",
                 "AssertionError: use_vllm must be True for Megatron GRPO",
                 hint=lambda x: ("Megatron GRPO generates with vLLM only: add --use_vllm true (with --vllm_mode "
                                 "colocate or server).")),
    ErrorPattern("swift-megatron", r"GRPO currently does not support VPP", ("swift_megatron.step.vpp_needs_beta_zero",),
                 "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer._maybe_compute_logps",
                 "AssertionError: GRPO currently does not support VPP.",
                 hint=lambda x: ("GRPO's reference log-probs do not run with virtual pipeline stages: drop "
                                 "--virtual_pipeline_model_parallel_size, or set --beta 0 so no reference model "
                                 "runs.")),
    ErrorPattern("swift-megatron", r"rollout_group_size \* per_device_batch_size == len\(global_rollout_batch\)",
                 ("swift_megatron.runtime.generation_divisible_by_world", "swift_megatron.runtime.eval_rollout_slice"),
                 "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer.get_local_rollout_batch (an assert "
                 "without a message: the traceback shows the line)",
                 "    assert rollout_group_size * per_device_batch_size == len(global_rollout_batch)\n"
                 "AssertionError",
                 hint=lambda x: ("--generation_batch_size is not a multiple of the GPU count (NPROC_PER_NODE x "
                                 "NNODES), so a rollout group's slices miss completions (the trainer's assert, no "
                                 "message; in evaluation the same with steps_per_generation); make "
                                 "--generation_batch_size a multiple of the GPU count.")),
    ErrorPattern("swift-megatron", r"num_iters_per_step=0 <= 0", ("swift_megatron.runtime.eval_rollout_prompts",),
                 "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer.get_num_iters_per_step",
                 "AssertionError: num_iters_per_step=0 <= 0. This means no prompts will be generated",
                 hint=lambda x: ("evaluation would generate no prompts: --global_batch_size // data-parallel size "
                                 "// --num_generations_eval // --micro_batch_size is 0; raise "
                                 "--global_batch_size, or lower --num_generations_eval or --micro_batch_size.")),
    ErrorPattern("swift-megatron", rf"num_attention_heads {n('heads')} must be a multiple of "
                 rf"tensor_model_parallel_size {n('tp')}",
                 ("swift_megatron.mcore.heads_divisible_by_tp",),
                 "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)",
                 "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).",
                 hint=lambda x: (f"the model's {x['heads']} attention heads do not split over "
                                 f"--tensor_model_parallel_size {x['tp']}; use a divisor of {x['heads']}: "
                                 f"{some_divisors(x['heads'])}."),
                 numbers=("heads", "tp")),
    ErrorPattern("swift-megatron", rf"num_query_groups {n('groups')} must be a multiple or divisor of "
                 rf"tensor_model_parallel_size {n('tp')}",
                 ("swift_megatron.mcore.query_groups_vs_tp",),
                 "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)",
                 "ValueError: num_query_groups (4) must be a multiple or divisor of tensor_model_parallel_size (7).",
                 hint=lambda x: (f"the model's {x['groups']} key/value head groups and "
                                 f"--tensor_model_parallel_size {x['tp']} must divide one another; use a divisor "
                                 f"of {x['groups']} ({some_divisors(x['groups'])}) or a multiple of it that "
                                 "divides the attention heads."),
                 numbers=("groups", "tp")),
    *[ErrorPattern(fw, r"local_device_count \((?P<devices>\d+)\) must be greater than or equal to the product of "
                   r"vllm_data_parallel_size \((?P<dp>\d+)\) and vllm_tensor_parallel_size \((?P<tp>\d+)\)",
                   ("swift.gpus.budget",), "swift/arguments/deploy_args.py:RolloutArguments._check_device_count",
                   "ValueError: Error: local_device_count (2) must be greater than or equal to the product of "
                   "vllm_data_parallel_size (2) and vllm_tensor_parallel_size (2). Current required_device_count = 4.",
                   hint=lambda x: (f"the `swift rollout` server needs --vllm_data_parallel_size {x['dp']} x "
                                   f"--vllm_tensor_parallel_size {x['tp']} = {x['dp'] * x['tp']} GPUs but sees "
                                   f"{x['devices']} (CUDA_VISIBLE_DEVICES); give it {x['dp'] * x['tp']} GPUs "
                                   "besides the training ranks', lower vllm_data_parallel_size / "
                                   "vllm_tensor_parallel_size, or run vLLM inside training with --vllm_mode "
                                   "colocate."),
                   numbers=("devices", "dp", "tp"))
      for fw in ("swift", "swift-megatron")],
    ErrorPattern("swift", r"assert not self\.use_vllm or self\.vllm_server_host is not None",
                 ("swift.rollout.server_needs_host",), "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout "
                 "(an assert without a message)",
                 "    assert not self.use_vllm or self.vllm_server_host is not None or self.vllm_server_base_url "
                 "is not None\nAssertionError",
                 hint=lambda x: ("--vllm_mode server needs the `swift rollout` server's address: add "
                                 "--vllm_server_host (and --vllm_server_port) or --vllm_server_base_url.")),
    ErrorPattern("swift-megatron", r"num_iterations > 1 is not supported for Megatron GRPO",
                 ("swift_megatron.args.num_iterations_unsupported",), f"{mg_gen}._init_grpo",
                 "ValueError: num_iterations > 1 is not supported for Megatron GRPO right now",
                 hint=lambda x: "Megatron GRPO does one update per rollout: set --num_iterations 1."),
    ErrorPattern("swift-megatron", r"async_generate is not supported for Megatron GRPO",
                 ("swift_megatron.args.async_generate_unsupported",), f"{mg_gen}._init_grpo",
                 "ValueError: async_generate is not supported for Megatron GRPO right now",
                 hint=lambda x: ("Megatron GRPO cannot generate asynchronously: drop --async_generate (set it "
                                 "false).")),
    ErrorPattern("swift-megatron", r"sync_ref_model is not supported for Megatron GRPO",
                 ("swift_megatron.args.sync_ref_model_unsupported",), f"{mg_gen}._init_grpo",
                 "ValueError: sync_ref_model is not supported for Megatron GRPO right now",
                 hint=lambda x: "Megatron GRPO has no reference-model sync: drop --sync_ref_model (set it false)."),
    ErrorPattern("swift-megatron", rf"REAL loss requires that the training micro_batch_size {n('micro')} is a "
                 rf"multiple of num_generations {n('g')}",
                 ("swift_megatron.args.real_loss_micro_divisible_by_num_generations",), f"{mg_gen}._init_grpo",
                 "AssertionError: \"REAL loss requires that the training micro_batch_size (4) is a multiple of "
                 "num_generations (8). Please adjust your batch parameters.",
                 hint=lambda x: ("--loss_type real needs whole prompt groups in each micro batch: "
                                 f"--micro_batch_size {x['micro']} must be a multiple of --num_generations "
                                 f"{x['g']}; use {_near(x['micro'], x['g'])}, or another loss_type."),
                 numbers=("micro", "g")),
    ErrorPattern("swift-megatron", r"num_layers should be divisible by pipeline_model_parallel_size",
                 ("swift_megatron.mcore.layers_divisible_by_pp",),
                 "megatron/core/transformer/transformer_block.py:get_num_layers_to_build (megatron-core)",
                 "AssertionError: num_layers should be divisible by pipeline_model_parallel_size",
                 hint=lambda x: ("the model's layers do not split evenly over --pipeline_model_parallel_size; use "
                                 "a size that divides the model's num_hidden_layers.")),
    # RLHFArguments._check_grpo beside --use_liger_kernel (versions.LIGER_REFUSES_FROM: from 3.5.3, 3.6.0, 3.10.0)
    ErrorPattern("swift", r"Liger loss does not support sequence parallel", ("swift.liger.no_sequence_parallel",),
                 liger_args, "ValueError: Liger loss does not support sequence parallel yet.",
                 hint=lambda x: ("Liger's GRPO loss (--use_liger_kernel true) runs on whole sequences: drop "
                                 "--use_liger_kernel, or set --sequence_parallel_size 1.")),
    ErrorPattern("swift", r"Liger loss does not support padding free", ("swift.liger.no_padding_free",),
                 liger_args, "ValueError: Liger loss does not support padding free yet.",
                 hint=lambda x: ("Liger's GRPO loss (--use_liger_kernel true) takes padded batches: drop "
                                 "--use_liger_kernel, or --padding_free (and --packing, which turns it on).")),
    ErrorPattern("swift", r"Liger loss currently only support grpo advantage estimator",
                 ("swift.liger.grpo_advantage_only",), liger_args,
                 "ValueError: Liger loss currently only support grpo advantage estimator",
                 hint=lambda x: ("Liger's GRPO loss (--use_liger_kernel true) takes --advantage_estimator grpo only: "
                                 "drop --use_liger_kernel to run rloo or reinforce_plus_plus.")),
]


# ----------------------------------------------------------------------------- out of memory (frameworks/oom_text.py)
# ms-swift's GRPO trainer (swift/rlhf_trainers/grpo_trainer.py, rollout_mixin.py): the loss, the log-prob passes
# (the reference's call names ref_model / ref_per_token_logps), generation; the Megatron trainer's forward_backward.
# transformers' Trainer.training_step is the outer frame of generation too (it prepares the inputs), so it names
# no phase; the weight sync into vLLM (move_model_to_vllm) runs inside the loss's frames' parent, first.
OOM_FRAMES = (
    (r"ref_per_token_logps\s*=|self\.ref_model|null_ref_context", Phase.REF),
    (r"move_model_to_vllm|_move_model_to_vllm|load_weights", "rollout"),  # the weight sync before generating
    (r"compute_loss|_compute_loss|forward_backward_func|\.backward\(|optimizer\.step|torch/optim/|_multi_tensor_adam"
     r"|step_with_ready_grads", Phase.ACTOR_UPDATE),
    (r"_get_per_token_logps|old_per_token_logps", Phase.OLD_LOG_PROB),
    (r"_generate_completions|_fast_infer|_infer_single_or_multi_turn|_generate_and_score|vllm|\.generate\(",
     Phase.ROLLOUT),
)
OOM_ADVICE = {
    Phase.ROLLOUT: (
        "--vllm_gpu_memory_utilization lower (colocate: the trainer's states come on top)",
        "--sleep_level 1 and --offload_model true / --offload_optimizer true: the trainer leaves the GPU while "
        "vLLM generates",
        "--vllm_tensor_parallel_size higher, or --vllm_mode server on GPUs of its own",
        "--vllm_max_model_len lower"),
    "engine_start": (
        "--vllm_max_model_len lower: one sequence of it must fit the KV cache",
        "--vllm_gpu_memory_utilization higher, where the trainer's states leave room (--offload_model true)",
        "--vllm_tensor_parallel_size higher"),
    Phase.OLD_LOG_PROB: (
        "--per_device_train_batch_size lower: the log-prob passes run on the same micro batch",
        "--padding_free true: no padding tokens"),
    Phase.REF: (
        "--per_device_train_batch_size lower",
        "--beta 0: no reference model (or LoRA: the reference is the model with its adapter off)"),
    Phase.ACTOR_UPDATE: (
        "--per_device_train_batch_size lower (keep the batch with --gradient_accumulation_steps)",
        "--gradient_checkpointing true",
        "--deepspeed zero3 (or zero3_offload): states sharded (and on the CPU)",
        "--train_type lora: adapter states only"),
    Phase.HOST: (
        "--sleep_level 1 backs vLLM's weights up in host RAM: --sleep_level 2 does not",
        "--deepspeed zero3_offload keeps the optimizer in host RAM: plain zero3 where it fits the GPU",
        "more nodes for the same GPUs, or nodes with more RAM (--host-mem to check a node)"),
}
MEGATRON_OOM_ADVICE = {
    **OOM_ADVICE,
    Phase.ACTOR_UPDATE: (
        "--micro_batch_size lower (keep --global_batch_size)",
        "--recompute_granularity full (--recompute_method uniform --recompute_num_layers 1)",
        "--tensor_model_parallel_size / --pipeline_model_parallel_size / --context_parallel_size higher",
        "--optimizer_cpu_offload true"),
}
