"""Every batch-size and parallelism rule ms-swift 4.6.0 enforces on its HF/DeepSpeed GRPO path.

``swift rlhf --rlhf_type grpo`` (GSPO is the same trainer with
``--importance_sampling_level sequence``). Each rule cites the file and function
(paths inside the ``ms-swift`` 4.6.0 wheel) that enforces it, and the stage at
which a run dies:

* ``driver``: argument parsing (``RLHFArguments.__post_init__`` and the
  ``GRPOConfig`` it builds), seconds after launch;
* ``worker_init``: the trainer starting after the model is loaded (vLLM engine,
  sequence-parallel device mesh);
* ``advice``: ours on purpose, ms-swift does not check it.

Sizes count completions, not prompts. ``W`` = ``NPROC_PER_NODE * NNODES``, the
training processes; vLLM in ``server`` mode runs on other GPUs (``swift
rollout``), in ``colocate`` mode on the training GPUs.

The rules the Megatron path (``rules_megatron.py``) shares are written once
here, by the ``*_rules`` builders: the generation-batch resolution (the same
cases with a different base batch and default ``steps_per_generation``), the
vLLM colocate/server layout and the GPU budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...rules.base import Derived, Rule, RuleSet, Stage, VarSpec, is_set
from ...rules.expr import BoolVar, IntExpr, IntVar, divides, if_then_else

VERSION = "4.6.0"

# ---------------------------------------------------------------------------- shared
# name in rules -> (native key, kind, default, optional, description). Keys are the
# ``swift rlhf`` / ``megatron rlhf`` flags without ``--``; NPROC_PER_NODE and NNODES are the
# launcher's environment variables; names in parentheses are decided from other flags.
SHARED_VARS = [
    ("gpus_per_node", "NPROC_PER_NODE", "int", 1, False, "training processes per node (one per GPU)"),
    ("nnodes", "NNODES", "int", 1, False, "nodes"),
    ("cluster_num_gpus", "--gpus", "int", None, True,
     "GPUs available to the job in all (training plus a server-mode rollout server)"),
    ("num_generations", "num_generations", "int", 8, False, "completions per prompt (G)"),
    ("generation_batch_size", "generation_batch_size", "int", None, True,
     "completions per rollout (unset: derived from steps_per_generation)"),
    ("steps_per_generation", "steps_per_generation", "int", None, True,
     "training steps that reuse one rollout (unset: derived)"),
    ("num_generations_eval", "num_generations_eval", "int", None, True, "completions per prompt in eval (unset: G)"),
    ("eval_on", "(val_dataset / split_dataset_ratio > 0, eval_strategy != no)", "bool", False, False,
     "evaluation runs (a validation set exists)"),
    ("use_vllm", "use_vllm", "bool", False, False, "vLLM generates the rollouts"),
    ("vllm_mode_given", "(vllm_mode is set)", "bool", False, False, "vllm_mode was given"),
    ("vllm_server", "vllm_mode", "bool", False, False, "vllm_mode is server (False: colocate)"),
    ("server_host_given", "vllm_server_host", "bool", False, False,
     "vllm_server_host or vllm_server_base_url was given"),
    ("async_generate", "async_generate", "bool", False, False, "rollout overlaps training (server mode)"),
    ("vllm_tp", "vllm_tensor_parallel_size", "int", 1, False, "tensor parallel size of the colocated vLLM engine"),
    ("server_tp", "rollout.vllm_tensor_parallel_size", "int", 1, False,
     "the `swift rollout` server's --vllm_tensor_parallel_size (server mode)"),
    ("server_dp", "rollout.vllm_data_parallel_size", "int", 1, False,
     "the `swift rollout` server's --vllm_data_parallel_size (server mode)"),
    ("teacher", "teacher_model / teacher_model_server", "bool", False, False,
     "a teacher is set (on-policy distillation as RL)"),
    # model constants (from the model card), present only when a model is known
    ("num_heads", "model.num_attention_heads", "int", None, False, "attention heads"),
    ("num_kv_heads", "model.num_key_value_heads", "int", None, False, "key/value heads (query groups)"),
]

HF_VARS = [
    ("per_device_train_batch_size", "per_device_train_batch_size", "int", 1, False,
     "completions per GPU per forward/backward"),
    ("gradient_accumulation_steps", "gradient_accumulation_steps", "int", 1, False,
     "micro steps per optimizer step (GRPO default 1)"),
    ("per_device_eval_batch_size", "per_device_eval_batch_size", "int", 1, False, "completions per GPU in eval"),
    ("sequence_parallel_size", "sequence_parallel_size", "int", 1, False, "Ulysses/ring sequence parallel size"),
    ("padding_free", "padding_free", "bool", False, False, "flattened batches (packing also turns it on)"),
    # --use_liger_kernel where the release refuses a setting beside Liger's GRPO loss (versions.LIGER_REFUSES_FROM)
    ("liger_no_sp", "(use_liger_kernel, ms-swift 3.5.3 on)", "bool", False, False,
     "--use_liger_kernel in a release that refuses sequence parallelism beside it"),
    ("liger_no_padding_free", "(use_liger_kernel, ms-swift 3.6.0 on)", "bool", False, False,
     "--use_liger_kernel in a release that refuses padding_free beside it"),
    ("liger_grpo_only", "(use_liger_kernel, ms-swift 3.10.0 on)", "bool", False, False,
     "--use_liger_kernel in a release that takes only the grpo advantage estimator beside it"),
    ("advantage_grpo", "(advantage_estimator)", "bool", True, False,
     "advantage_estimator is grpo (the default; not rloo nor reinforce_plus_plus)"),
]


def var_specs(rows) -> dict[str, VarSpec]:
    return {name: VarSpec(name, key, kind, default, optional, desc) for name, key, kind, default, optional, desc in rows}


VARIABLES = var_specs(SHARED_VARS + HF_VARS)


W = IntVar("W")
G = IntVar("num_generations")
GEN = IntVar("generation_batch_size")
SPG = IntVar("steps_per_generation")
GEN_BASE = IntVar("gen_base")
GEN_EFF = IntVar("gen")
SPG_EFF = IntVar("spg")
SERVER = BoolVar("vllm_server")
USE_VLLM = BoolVar("use_vllm")


def shared_derived(base: IntExpr, base_text: str, default_spg: IntExpr, default_text: str) -> list[Derived]:
    """World size and the resolved generation batch (ms-swift's two resolvers, one definition).

    ``base``: the batch one training step consumes (HF: per_device_train_batch_size*W, no
    gradient accumulation; Megatron: global_batch_size). ``default_spg``: steps_per_generation
    when neither it nor generation_batch_size is given (HF: gradient_accumulation_steps;
    Megatron: 1).
    """
    gen_set, spg_set = is_set("generation_batch_size"), is_set("steps_per_generation")
    return [
        Derived("W", IntVar("gpus_per_node") * IntVar("nnodes"), "world size: NPROC_PER_NODE*NNODES training ranks"),
        Derived("gen_base", base, f"completions one training step consumes: {base_text}"),
        Derived("spg", if_then_else(spg_set, SPG, if_then_else(gen_set, GEN // GEN_BASE, default_spg)),
                f"steps_per_generation as resolved (default: {default_text})"),
        Derived("gen", if_then_else(gen_set, GEN, GEN_BASE * SPG_EFF),
                "generation_batch_size as resolved (default: gen_base*steps_per_generation)"),
        Derived("server_gpus", IntVar("server_tp") * IntVar("server_dp"), "GPUs of the server-mode rollout server"),
        Derived("gpus_needed", W + if_then_else(USE_VLLM & SERVER, IntVar("server_gpus"), 0),
                "training ranks plus the rollout server's GPUs in server mode"),
        Derived("engine_tp", if_then_else(SERVER, IntVar("server_tp"), IntVar("vllm_tp")),
                "tensor parallel size of the vLLM engine that generates"),
        Derived("num_generations_eval_eff",
                if_then_else(is_set("num_generations_eval"), IntVar("num_generations_eval"), G),
                "completions per prompt in eval (num_generations_eval or num_generations)"),
    ]


@dataclass(frozen=True)
class PathSpec:
    """What differs between the two GRPO paths for a shared rule."""

    resolver: str  # the function resolving generation_batch_size
    base_name: str  # the base batch's name in messages
    base_text: str  # ... with its numbers
    colocate_source: str
    colocate_stage: Stage
    server_host_source: str
    server_host_stage: Stage
    pair_since: str  # the first release whose resolver takes generation_batch_size and steps_per_generation together


HF_PATH = PathSpec(
    resolver="swift/rlhf_trainers/args_mixin.py:RolloutTrainerArgumentsMixin._init_generation_batch_params "
             "(called by GRPOConfig.__post_init__)",
    base_name="per_device_train_batch_size*world_size",
    base_text="per_device_train_batch_size*world_size = {per_device_train_batch_size}*{W} = {gen_base}",
    colocate_source="swift/rlhf_trainers/rollout_mixin.py:RolloutTrainerMixin._prepare_vllm",
    colocate_stage=Stage.WORKER_INIT,
    server_host_source="swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
    server_host_stage=Stage.DRIVER,
    pair_since="4.4.0",  # 4.0-4.3's GRPOConfig runs TRL's __post_init__ first, which refuses the pair (versions.py)
)


def generation_rules(path: PathSpec) -> list[Rule]:
    """generation_batch_size vs steps_per_generation vs num_generations (H1 / M3)."""
    gen_set, spg_set = is_set("generation_batch_size"), is_set("steps_per_generation")
    return [
        Rule(
            "swift.args.gen_divisible_by_base",
            divides(GEN_BASE, GEN),
            "generation_batch_size = {generation_batch_size} is not divisible by " + path.base_text,
            Stage.DRIVER, path.resolver, when=gen_set & ~spg_set,
            explanation="Only generation_batch_size is set: steps_per_generation = generation_batch_size / "
                        "(the batch one training step consumes) must be a whole number.",
        ),
        Rule(
            "swift.args.gen_equals_base_times_spg",
            GEN.eq(GEN_BASE * SPG),
            "generation_batch_size = {generation_batch_size} must equal " + path.base_text
            + " times steps_per_generation = {steps_per_generation}",
            Stage.DRIVER, path.resolver, when=gen_set & spg_set,
            explanation="Both generation_batch_size and steps_per_generation are set (allowed since ms-swift "
                        f"{path.pair_since}): they must agree.",
        ),
        Rule(
            "swift.args.gen_divisible_by_num_generations",
            divides(G, GEN_EFF),
            "generation_batch_size = {gen} is not divisible by num_generations = {num_generations} ("
            + path.base_name + " = {gen_base}, steps_per_generation = {spg})",
            Stage.DRIVER, path.resolver, when=G > 1,
            explanation="A rollout holds whole groups: its completions must split into groups of num_generations.",
        ),
    ]


def rollout_rules(path: PathSpec) -> list[Rule]:
    """vLLM layout rules both paths enforce (H4/M7, H3/M7 server host, H5 GPU budget)."""
    colocate = USE_VLLM & BoolVar("vllm_mode_given") & ~SERVER
    server = USE_VLLM & BoolVar("vllm_mode_given") & SERVER
    return [
        Rule(
            "swift.rollout.colocate_tp_divides_world",
            divides(IntVar("vllm_tp"), W),
            "vllm_tensor_parallel_size = {vllm_tp} must divide the world size {W} (NPROC_PER_NODE*NNODES) "
            "in colocate mode",
            path.colocate_stage, path.colocate_source, when=colocate,
            explanation="Colocated vLLM engines are built from groups of vllm_tensor_parallel_size training ranks.",
        ),
        Rule(
            "swift.rollout.server_needs_host",
            BoolVar("server_host_given"),
            "vllm_mode = server needs --vllm_server_host (or --vllm_server_base_url) of the `swift rollout` "
            "server (given: {server_host_given})",
            path.server_host_stage, path.server_host_source, when=server,
        ),
        Rule(
            "swift.gpus.budget",
            IntVar("gpus_needed") <= IntVar("cluster_num_gpus"),
            "the job needs {gpus_needed} GPUs (NPROC_PER_NODE*NNODES = {W} training ranks, plus "
            "vllm_tensor_parallel_size*vllm_data_parallel_size = {server_tp}*{server_dp} for a server-mode "
            "`swift rollout` server) but {cluster_num_gpus} are given: server mode takes GPUs away from training",
            Stage.DRIVER,
            "swift/arguments/deploy_args.py:RolloutArguments._check_device_count (the rollout server needs "
            "dp*tp visible devices; torchrun needs one GPU per training rank)",
            when=is_set("cluster_num_gpus"),
        ),
        Rule(
            "swift.vllm.heads_divisible_by_tp",
            divides(IntVar("engine_tp"), IntVar("num_heads")),
            "num_attention_heads = {num_heads} is not divisible by the vLLM tensor parallel size {engine_tp}",
            Stage.WORKER_INIT,
            "vLLM model loading (its error: attention heads must be divisible by tensor parallel size)",
            when=USE_VLLM,
        ),
    ]


# ---------------------------------------------------------------------------- HF path
B = IntVar("per_device_train_batch_size")
GA = IntVar("gradient_accumulation_steps")
SP = IntVar("sequence_parallel_size")

DERIVED = shared_derived(
    B * W, "per_device_train_batch_size*W (no gradient accumulation)", GA, "gradient_accumulation_steps",
) + [
    Derived("eval_batch", IntVar("per_device_eval_batch_size") * W, "completions per eval step: "
            "per_device_eval_batch_size*W"),
    Derived("opt_batch", B * W * GA, "completions per optimizer step: "
            "per_device_train_batch_size*W*gradient_accumulation_steps"),
    Derived("effective_ga", GA * SP, "gradient accumulation the trainer runs with: gradient_accumulation_steps "
            "times sequence_parallel_size (GRPOTrainer.__init__)"),
]

RLHF_ARGS = "swift/arguments/rlhf_args.py:RLHFArguments"
SP_SRC = "swift/sequence_parallel/sequence_parallel.py:SequenceParallel"


def _hf_rules() -> list[Rule]:
    r = generation_rules(HF_PATH)
    add = r.append
    mode_given = BoolVar("vllm_mode_given")
    add(Rule(
        "swift.args.eval_batch_divisible_by_num_generations_eval",
        divides(IntVar("num_generations_eval_eff"), IntVar("eval_batch")),
        "the global eval batch per_device_eval_batch_size*world_size = {per_device_eval_batch_size}*{W} = "
        "{eval_batch} is not divisible by num_generations_eval = {num_generations_eval_eff}",
        Stage.DRIVER, HF_PATH.resolver, when=BoolVar("eval_on") & (G > 1),
        explanation="Runs only when a validation set exists (val_dataset or split_dataset_ratio > 0).",
    ))
    add(Rule(
        "swift.args.num_generations_at_least_two",
        G > 1,
        "num_generations = {num_generations}: GRPO without a teacher needs num_generations > 1",
        Stage.DRIVER, f"{RLHF_ARGS}._check_teacher",
        when=~BoolVar("teacher"),
    ))
    add(Rule(
        "swift.args.vllm_mode_required",
        mode_given,
        "use_vllm = {use_vllm} but vllm_mode is not set: 'vllm_mode is required when use_vllm is true' "
        "(no default since ms-swift 3.12; add --vllm_mode colocate or --vllm_mode server)",
        Stage.DRIVER, f"{RLHF_ARGS}._init_rollout", when=USE_VLLM,
        explanation="'vllm_mode is required when use_vllm is true': older examples that omit --vllm_mode "
                    "stop at argument parsing.",
    ))
    add(Rule(
        "swift.args.vllm_mode_needs_use_vllm",
        USE_VLLM,
        "vllm_mode is set but use_vllm = {use_vllm}: 'vllm_mode is not supported when use_vllm is false'",
        Stage.DRIVER, f"{RLHF_ARGS}._init_rollout", when=mode_given,
    ))
    add(Rule(
        "swift.args.async_generate_needs_server",
        USE_VLLM & mode_given & SERVER,
        "async_generate = {async_generate} requires vllm_mode = server (a `swift rollout` server); it is "
        "colocate or unset (use_vllm = {use_vllm})",
        Stage.DRIVER, f"{RLHF_ARGS}._init_rollout", when=BoolVar("async_generate"),
    ))
    r += rollout_rules(HF_PATH)
    # RLHFArguments._check_grpo's refusals beside --use_liger_kernel, Liger's GRPO loss (ValueError at argument time;
    # 3.9.0 on also assert in GRPOTrainer.compute_liger_loss); each from the release versions.LIGER_REFUSES_FROM names
    liger_src = f"{RLHF_ARGS}._check_grpo (if self.use_liger_kernel)"
    for rule_id, holds, setting, said, switch, fix in (
        ("swift.liger.no_sequence_parallel", SP <= 1, "sequence_parallel_size = {sequence_parallel_size}",
         "Liger loss does not support sequence parallel yet.", "liger_no_sp",
         "it runs on whole sequences: drop --use_liger_kernel or set --sequence_parallel_size 1"),
        ("swift.liger.no_padding_free", ~BoolVar("padding_free"),
         "padding_free = {padding_free} (--packing turns it on)", "Liger loss does not support padding free yet.",
         "liger_no_padding_free",
         "it reads padded [batch, length] completions: drop --use_liger_kernel, or --padding_free and --packing"),
        ("swift.liger.grpo_advantage_only", BoolVar("advantage_grpo"),
         "an advantage_estimator other than grpo (advantage_grpo = {advantage_grpo}: rloo or reinforce_plus_plus)",
         "Liger loss currently only support grpo advantage estimator", "liger_grpo_only",
         "RLOO and REINFORCE++ run without it: drop --use_liger_kernel"),
    ):
        add(Rule(rule_id, holds, "use_liger_kernel = true with " + setting + ": '" + said + "'", Stage.DRIVER,
                 liger_src, when=BoolVar(switch), explanation="Liger's GRPO loss: " + fix + "."))
    add(Rule(
        "swift.sp.world_divisible_by_sp",
        divides(SP, W),
        "the world size {W} is not divisible by sequence_parallel_size = {sequence_parallel_size}",
        Stage.WORKER_INIT, f"{SP_SRC}._init_device_mesh (device mesh of data x sequence ranks)",
        when=SP > 1,
    ))
    add(Rule(
        "swift.sp.ring_attention_needs_padding_free",
        BoolVar("padding_free"),
        "sequence_parallel_size = {sequence_parallel_size} does not divide num_key_value_heads = {num_kv_heads}: "
        "ms-swift runs the remaining factor as ring attention, which needs --padding_free true",
        Stage.WORKER_INIT, f"{SP_SRC}.prepare (Ulysses size = gcd(kv heads, sp), the rest ring attention)",
        when=(SP > 1) & ~divides(SP, IntVar("num_kv_heads")),
    ))
    return r


RULES = _hf_rules()

RULESET = RuleSet("swift", VERSION, VARIABLES, DERIVED, RULES)
