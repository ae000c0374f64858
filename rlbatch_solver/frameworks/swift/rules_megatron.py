"""Every batch-size and parallelism rule ms-swift 4.6.0 enforces on its Megatron GRPO path.

``megatron rlhf --rlhf_type grpo`` (GSPO: ``--importance_sampling_level
sequence``). Each rule cites the file and function (paths inside the
``ms-swift`` 4.6.0 wheel, or inside ``megatron-core`` >= 0.16, which ms-swift's
``megatron`` extra requires and delegates the parallel-size checks to) and the
stage at which a run dies:

* ``driver``: argument parsing. ``MegatronArguments.__post_init__`` first runs
  ``RLHFMegatronArgumentsMixin._init_grpo`` (unsupported options,
  ``resolve_generation_batch_size``, and, since the process group already
  exists, ``validate_batch_dp_alignment``), then ``_init_distributed``
  (megatron-core's ``initialize_model_parallel``, then the global-batch check);
* ``worker_init``: building the model (megatron-core's ``TransformerConfig``)
  and the trainer's vLLM engine;
* ``first_step`` / ``runtime``: asserts in the GRPO trainer that no argument
  check covers (``get_local_rollout_batch``; the eval rollout);
* ``advice``: ours on purpose.

Here ``global_batch_size`` and ``micro_batch_size`` count completions;
``dp = W // (TP*PP*CP)`` (EP is not in it); the rollout group of one DP rank is
its ``TP*PP*CP`` ranks. The note in ``docs/source_en/Megatron-SWIFT/GRPO.md``
that ``global_batch_size / num_generations / dp`` must be a multiple of
``micro_batch_size`` is not enforced by any code (the official
``dense_colocate.sh`` breaks it and runs), so it is not a rule here.

The rules shared with the HF path are built by ``rules.py``'s builders.
"""

from __future__ import annotations

from dataclasses import replace

from ...rules.base import Derived, Rule, RuleSet, Severity, Stage, is_set
from ...rules.expr import BoolVar, IntVar, divides, if_then_else, maximum
from .rules import (SHARED_VARS, VERSION, G, PathSpec, W, generation_rules, rollout_rules, shared_derived,
                    var_specs)

MEGATRON_VARS = [
    ("micro_batch_size", "micro_batch_size", "int", 1, False, "completions per GPU per forward/backward"),
    ("global_batch_size", "global_batch_size", "int", 16, False, "completions per optimizer step (all DP ranks)"),
    ("tp", "tensor_model_parallel_size", "int", 1, False, "tensor parallel size"),
    ("pp", "pipeline_model_parallel_size", "int", 1, False, "pipeline parallel size"),
    ("cp", "context_parallel_size", "int", 1, False, "context parallel size"),
    ("ep", "expert_model_parallel_size", "int", 1, False, "expert parallel size"),
    ("etp", "expert_tensor_parallel_size", "int", 1, False, "expert tensor parallel size"),
    ("vpp", "virtual_pipeline_model_parallel_size", "int", None, True, "virtual pipeline stages per PP rank (1: unset)"),
    ("first_pp_layers", "decoder_first_pipeline_num_layers", "int", None, True, "layers of the first PP stage"),
    ("last_pp_layers", "decoder_last_pipeline_num_layers", "int", None, True, "layers of the last PP stage"),
    ("num_iterations", "num_iterations", "int", 1, False, "updates per rollout batch (only 1 is supported)"),
    ("sync_ref_model", "sync_ref_model", "bool", False, False, "periodic reference-model sync"),
    ("loss_real", "loss_type", "bool", False, False, "loss_type is real (REAL)"),
    ("kl_on", "beta", "bool", True, False, "beta != 0 (a reference model runs; GRPO default beta 0.04)"),
    ("num_layers", "model.num_hidden_layers", "int", None, False, "decoder layers"),
    ("num_experts", "model.num_experts", "int", None, False, "routed experts (0: dense)"),
]

# Megatron GRPO always uses vLLM: use_vllm defaults to True here.
VARIABLES = {name: (replace(spec, default=True) if name == "use_vllm" else spec)
             for name, spec in var_specs(SHARED_VARS + MEGATRON_VARS).items()}

MBS = IntVar("micro_batch_size")
GBS = IntVar("global_batch_size")
TP, PP, CP, EP, ETP, VPP = (IntVar(n) for n in ("tp", "pp", "cp", "ep", "etp", "vpp"))
MP, DP, GEN, SPG = IntVar("mp"), IntVar("dp"), IntVar("gen"), IntVar("spg")
LAYERS = IntVar("num_layers")
FIRST, LAST = IntVar("first_pp_layers"), IntVar("last_pp_layers")
first_set, last_set, vpp_set = is_set("first_pp_layers"), is_set("last_pp_layers"), is_set("vpp")
uneven = first_set | last_set

MEGATRON_ARGS = "swift/megatron/arguments/megatron_args.py"
MIXIN = f"{MEGATRON_ARGS}:RLHFMegatronArgumentsMixin"
TRAINER = "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer"
ROLLOUT = "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin"
MCORE_PS = "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core, called by " \
           "swift/megatron/utils/megatron_lm_utils.py:_initialize_mpu)"
MCORE_CFG = "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core, " \
            "built by swift/megatron/model/utils.py:get_mcore_model_config)"
MCORE_BLOCK = "megatron/core/transformer/transformer_block.py:get_num_layers_to_build (megatron-core)"

MEGATRON_PATH = PathSpec(
    resolver=f"{MIXIN}.resolve_generation_batch_size (from _init_grpo)",
    base_name="global_batch_size",
    base_text="global_batch_size = {gen_base}",
    colocate_source=f"{ROLLOUT}._init_rollout_engine",
    colocate_stage=Stage.WORKER_INIT,
    server_host_source="swift/megatron/pipelines/train/rlhf.py:MegatronRLHF._prepare_vllm_client (VLLMClient "
                       "gets hosts=None)",
    server_host_stage=Stage.WORKER_INIT,
    pair_since="4.2.0",  # 4.0-4.1's resolve_generation_batch_size: "cannot be both configured"
)

DERIVED = shared_derived(GBS, "global_batch_size", 1, "1") + [
    Derived("mp", TP * PP * CP, "model-parallel ranks of one data-parallel replica: TP*PP*CP"),
    # max(1, .) keeps a broken layout from dividing by 0 (world_divisible_by_model_parallel reports it)
    Derived("dp", maximum(1, W // MP), "data-parallel size: W // (TP*PP*CP)"),
    Derived("expert_mp", ETP * EP * PP, "expert model-parallel ranks: ETP*EP*PP"),
    Derived("rollout_prompts", GEN // G, "prompts per rollout: generation_batch_size // num_generations"),
    Derived("prompts_per_dp", IntVar("rollout_prompts") // DP, "rollout prompts per DP rank"),
    Derived("per_device_gen", GEN // W, "completions per rank: generation_batch_size // W"),
    Derived("num_microbatches", GBS // (MBS * DP), "micro batches per optimizer step per DP rank"),
    Derived("eval_iters", GBS // DP // IntVar("num_generations_eval_eff") // MBS,
            "eval micro batches per DP rank: global_batch_size // dp // num_generations_eval // micro_batch_size"),
    Derived("eval_completions", IntVar("eval_iters") * MBS * IntVar("num_generations_eval_eff"),
            "eval completions one DP rank's rollout group receives"),
    Derived("eval_slice", MP * (GEN // W // maximum(1, SPG)),
            "eval completions the rollout group's slices cover: TP*PP*CP * (generation_batch_size // W // "
            "steps_per_generation)"),
    Derived("layers_per_stage", LAYERS // PP, "layers per PP stage (even split)"),
    Derived("middle_layers", LAYERS - if_then_else(first_set, FIRST, 0) - if_then_else(last_set, LAST, 0),
            "layers left for the middle PP stages"),
    Derived("middle_stages", PP - if_then_else(first_set, 1, 0) - if_then_else(last_set, 1, 0),
            "PP stages without a fixed layer count"),
]


def _rules() -> list[Rule]:
    r: list[Rule] = []
    add = r.append
    # ---------------- driver: _init_grpo ------------------------------------------------
    grpo = f"{MIXIN}._init_grpo"
    add(Rule(
        "swift_megatron.args.num_iterations_unsupported",
        IntVar("num_iterations").eq(1),
        "num_iterations = {num_iterations}: 'num_iterations > 1 is not supported for Megatron GRPO right now'",
        Stage.DRIVER, grpo,
    ))
    add(Rule(
        "swift_megatron.args.async_generate_unsupported",
        ~BoolVar("async_generate"),
        "async_generate = {async_generate}: 'async_generate is not supported for Megatron GRPO right now'",
        Stage.DRIVER, grpo,
    ))
    add(Rule(
        "swift_megatron.args.sync_ref_model_unsupported",
        ~BoolVar("sync_ref_model"),
        "sync_ref_model = {sync_ref_model}: 'sync_ref_model is not supported for Megatron GRPO right now'",
        Stage.DRIVER, grpo,
    ))
    add(Rule(
        "swift_megatron.args.real_loss_micro_divisible_by_num_generations",
        divides(G, MBS),
        "loss_type = real needs micro_batch_size = {micro_batch_size} to be a multiple of num_generations = "
        "{num_generations}",
        Stage.DRIVER, grpo, when=BoolVar("loss_real"),
    ))
    r.extend(generation_rules(MEGATRON_PATH))
    align = f"{MIXIN}.validate_batch_dp_alignment (from _init_generation_batch_params)"
    add(Rule(
        "swift_megatron.args.rollout_prompts_divisible_by_dp",
        divides(DP, IntVar("rollout_prompts")),
        "num_rollout_prompt = generation_batch_size // num_generations = {gen} // {num_generations} = "
        "{rollout_prompts} is not divisible by dp = W // (TP*PP*CP) = {W} // {mp} = {dp}",
        Stage.DRIVER, align,
        explanation="Every data-parallel rank must get the same number of whole prompt groups.",
    ))
    add(Rule(
        "swift_megatron.args.rollout_prompts_per_dp_at_least_one",
        IntVar("prompts_per_dp") >= 1,
        "per_device_num_rollout_prompt = {rollout_prompts} // dp {dp} = {prompts_per_dp} must be >= 1",
        Stage.DRIVER, align,
    ))
    add(Rule(
        "swift_megatron.args.rollout_prompts_per_dp_divisible_by_micro",
        divides(MBS, IntVar("prompts_per_dp")),
        "per-device rollout prompt count (generation_batch_size // num_generations) // dp = "
        "({gen} // {num_generations}) // {dp} = {prompts_per_dp} is not divisible by micro_batch_size = "
        "{micro_batch_size}",
        Stage.DRIVER, align,
    ))
    add(Rule(
        "swift_megatron.args.generation_per_device_at_least_one",
        IntVar("per_device_gen") >= 1,
        "per_device_generation_batch_size = generation_batch_size // W = {gen} // {W} = {per_device_gen} "
        "must be >= 1",
        Stage.DRIVER, align,
    ))
    add(Rule(
        "swift_megatron.args.use_vllm_required",
        BoolVar("use_vllm"),
        "use_vllm = {use_vllm}: 'use_vllm must be True for Megatron GRPO'",
        Stage.DRIVER, grpo,
    ))
    # ---------------- driver: _init_distributed (megatron-core) --------------------------
    add(Rule(
        "swift_megatron.mcore.world_divisible_by_model_parallel",
        divides(MP, W),
        "world_size {W} is not divisible by TP*PP*CP = {tp}*{pp}*{cp} = {mp}",
        Stage.DRIVER, MCORE_PS,
    ))
    add(Rule(
        "swift_megatron.mcore.world_divisible_by_expert_parallel",
        divides(IntVar("expert_mp"), W),
        "world_size {W} is not divisible by expert_tensor_model_pipeline_parallel size ETP*EP*PP = "
        "{etp}*{ep}*{pp} = {expert_mp}",
        Stage.DRIVER, MCORE_PS,
    ))
    add(Rule(
        "swift_megatron.mcore.vpp_needs_pp",
        PP > 1,
        "virtual_pipeline_model_parallel_size = {vpp} needs pipeline_model_parallel_size > 1 (it is {pp})",
        Stage.DRIVER, MCORE_PS, when=vpp_set,
    ))
    add(Rule(
        "swift_megatron.args.first_last_layers_need_pp",
        PP > 1,
        "decoder_first_pipeline_num_layers = {first_pp_layers} / decoder_last_pipeline_num_layers = "
        "{last_pp_layers} need pipeline_model_parallel_size > 1 (it is {pp})",
        Stage.DRIVER, f"{MEGATRON_ARGS}:MegatronArguments.__post_init__", when=uneven,
    ))
    add(Rule(
        "swift_megatron.args.global_batch_divisible_by_micro_dp",
        divides(MBS * DP, GBS),
        "global batch size ({global_batch_size}) is not divisible by micro batch size ({micro_batch_size}) times "
        "data parallel size ({dp})",
        Stage.DRIVER, f"{MEGATRON_ARGS}:MegatronArguments._init_distributed",
    ))
    # ---------------- worker init: rollout engine, model build ------------------------------
    add(Rule(
        "swift_megatron.rollout.vllm_mode_required",
        BoolVar("vllm_mode_given"),
        "use_vllm = {use_vllm} but vllm_mode is not set: the trainer raises 'Invalid vllm_mode: None' "
        "(add --vllm_mode colocate or --vllm_mode server)",
        Stage.WORKER_INIT, f"{ROLLOUT}._init_rollout_engine", when=BoolVar("use_vllm"),
    ))
    r.extend(rollout_rules(MEGATRON_PATH))
    add(Rule(
        "swift_megatron.mcore.heads_divisible_by_tp",
        divides(TP, IntVar("num_heads")),
        "num_attention_heads ({num_heads}) must be a multiple of tensor_model_parallel_size ({tp})",
        Stage.WORKER_INIT, MCORE_CFG,
    ))
    kv = IntVar("num_kv_heads")
    add(Rule(
        "swift_megatron.mcore.query_groups_vs_tp",
        divides(TP, kv) | divides(kv, TP),
        "num_query_groups ({num_kv_heads}) must be a multiple or divisor of tensor_model_parallel_size ({tp})",
        Stage.WORKER_INIT, MCORE_CFG,
    ))
    add(Rule(
        "swift_megatron.mcore.layers_divisible_by_pp",
        divides(PP, LAYERS),
        "num_layers = {num_layers} should be divisible by pipeline_model_parallel_size = {pp}",
        Stage.WORKER_INIT, MCORE_BLOCK, when=~uneven,
    ))
    add(Rule(
        "swift_megatron.mcore.stage_layers_divisible_by_vpp",
        divides(VPP, IntVar("layers_per_stage")),
        "layers per pipeline stage num_layers // pp = {num_layers} // {pp} = {layers_per_stage} are not divisible "
        "by virtual_pipeline_model_parallel_size = {vpp}",
        Stage.WORKER_INIT, MCORE_BLOCK, when=vpp_set & ~uneven,
    ))
    mid, stages = IntVar("middle_layers"), IntVar("middle_stages")
    add(Rule(
        "swift_megatron.mcore.uneven_pp_layers",
        (mid >= 0) & ((mid.eq(0) & stages.eq(0)) | (mid.ne(0) & stages.ne(0)))
        & (stages.eq(0) | divides(maximum(1, stages), maximum(0, mid))),
        "uneven pipeline: {middle_layers} layers left for {middle_stages} middle stages (num_layers {num_layers}, "
        "first stage {first_pp_layers}, last stage {last_pp_layers}, pp {pp}): they must split evenly, and "
        "middle layers need middle stages",
        Stage.WORKER_INIT, MCORE_CFG, when=uneven & (PP > 1),
    ))
    add(Rule(
        "swift_megatron.mcore.uneven_pp_vpp",
        (~first_set | divides(VPP, FIRST)) & (~last_set | divides(VPP, LAST))
        & ((stages <= 0) | divides(VPP, maximum(0, mid) // maximum(1, stages))),
        "virtual_pipeline_model_parallel_size = {vpp} must divide the first stage's {first_pp_layers} layers, "
        "the last stage's {last_pp_layers} and each middle stage's ({middle_layers} over {middle_stages})",
        Stage.WORKER_INIT, MCORE_CFG, when=vpp_set & uneven & (PP > 1),
    ))
    add(Rule(
        "swift_megatron.mcore.experts_divisible_by_ep",
        divides(EP, IntVar("num_experts")),
        "num_moe_experts = {num_experts} is not divisible by expert_model_parallel_size = {ep}",
        Stage.WORKER_INIT, "megatron/core/transformer/moe/moe_layer.py:BaseMoELayer.__init__ (megatron-core)",
        when=IntVar("num_experts") > 0,
    ))
    # ---------------- first step / runtime ---------------------------------------------------
    add(Rule(
        "swift_megatron.step.vpp_needs_beta_zero",
        ~BoolVar("kl_on"),
        "virtual_pipeline_model_parallel_size = {vpp} with beta != 0: the reference log-probs assert "
        "'GRPO currently does not support VPP.' (set --beta 0 or drop VPP)",
        Stage.FIRST_STEP, f"{TRAINER}._maybe_compute_logps", when=vpp_set,
    ))
    add(Rule(
        "swift_megatron.runtime.generation_divisible_by_world",
        divides(W, GEN),
        "generation_batch_size = {gen} is not divisible by the world size {W}: get_local_rollout_batch gives "
        "each of the TP*PP*CP = {mp} ranks of a rollout group generation_batch_size // W = {per_device_gen} "
        "completions, which does not cover the group's generation_batch_size / dp = {gen} / {dp}, and the "
        "assert (no message) stops the first step",
        Stage.RUNTIME, f"{TRAINER}.get_local_rollout_batch",
        explanation="Not validated up front: validate_batch_dp_alignment only asks generation_batch_size // W "
                    ">= 1; the trainer's assert needs TP*PP*CP*(gen // W) == gen / dp, i.e. gen % W == 0.",
    ))
    add(Rule(
        "swift_megatron.runtime.eval_rollout_prompts",
        IntVar("eval_iters") >= 1,
        "eval: global_batch_size // dp // num_generations_eval // micro_batch_size = {global_batch_size} // {dp} "
        "// {num_generations_eval_eff} // {micro_batch_size} = {eval_iters}: no prompts would be generated",
        Stage.RUNTIME, f"{TRAINER}.get_num_iters_per_step", when=BoolVar("eval_on"),
    ))
    add(Rule(
        "swift_megatron.runtime.eval_rollout_slice",
        IntVar("eval_slice").eq(IntVar("eval_completions")),
        "eval: the rollout group's slices TP*PP*CP*(generation_batch_size // W // steps_per_generation) = "
        "{mp}*({gen} // {W} // {spg}) = {eval_slice} do not match the {eval_completions} eval completions of a "
        "DP rank",
        Stage.RUNTIME, f"{TRAINER}.get_local_rollout_batch", when=BoolVar("eval_on"),
    ))
    # ---------------- ours on purpose ---------------------------------------------------------
    add(Rule(
        "swift_megatron.advice.num_generations_at_least_two",
        G > 1,
        "num_generations = {num_generations}: without a teacher, group-relative advantages of one completion per "
        "prompt are 0 (Megatron GRPO does not check this; the HF path rejects it)",
        Stage.ADVICE, f"{MIXIN}._init_grpo (no num_generations > 1 check)",
        when=~BoolVar("teacher"), severity=Severity.WARNING,
    ))
    return r


RULES = _rules()

RULESET = RuleSet("swift-megatron", VERSION, VARIABLES, DERIVED, RULES)

__all__ = ["RULESET", "VARIABLES", "DERIVED", "RULES", "MEGATRON_PATH"]
