"""Every batch-size, generation and parallelism rule TRL 1.16.0's GRPO enforces.

``accelerate launch [--num_processes N] [--num_machines M] [--config_file F] grpo.py --flag value ...``
(or ``trl grpo ...``; the flags are ``GRPOConfig`` fields). Each rule cites the file and function (paths
inside the ``trl`` 1.16.0 wheel) that enforces it, and the stage at which a run dies:

* ``driver``: ``GRPOConfig.__post_init__`` (argument parsing, seconds after launch);
* ``trainer_init``: ``GRPOTrainer.__init__`` after the model is loaded;
* ``worker_init``: the vLLM engine starting inside the trainer (``VLLMGeneration._init_vllm``);

Sizes count completions. ``W`` = accelerate's ``--num_processes`` (the processes of all machines, one per
GPU). The generation-batch resolution is ms-swift's (whose ``GRPOConfig`` subclasses TRL's) with one
difference: TRL refuses ``generation_batch_size`` and ``steps_per_generation`` together. vLLM in ``server``
mode runs on other GPUs (``trl vllm-serve``), in ``colocate`` mode inside the training processes.
"""

from __future__ import annotations

from ...rules.base import Derived, Rule, RuleSet, Stage, is_set
from ...rules.expr import BoolVar, IntVar, divides, if_then_else
from ..swift.rules import var_specs, shared_derived

VERSION = "1.16.0"

# name in rules -> (native key, kind, default, optional, description); native keys are GRPOConfig fields and
# accelerate launch flags, without ``--``; names in parentheses are decided from other flags
VARS = [
    ("gpus_per_node", "(num_processes / num_machines)", "int", 1, False, "training processes per machine"),
    ("nnodes", "num_machines", "int", 1, False, "machines (accelerate --num_machines)"),
    ("cluster_num_gpus", "--gpus", "int", None, True,
     "GPUs available to the job in all (training plus a server-mode `trl vllm-serve`)"),
    ("per_device_train_batch_size", "per_device_train_batch_size", "int", 8, False,
     "completions per GPU per forward/backward (TrainingArguments default 8)"),
    ("gradient_accumulation_steps", "gradient_accumulation_steps", "int", 1, False,
     "micro steps per optimizer step"),
    ("per_device_eval_batch_size", "per_device_eval_batch_size", "int", 8, False, "completions per GPU in eval"),
    ("num_generations", "num_generations", "int", 8, False, "completions per prompt (G)"),
    ("generation_batch_size", "generation_batch_size", "int", None, True,
     "completions per rollout (unset: per_device_train_batch_size*W*steps_per_generation)"),
    ("steps_per_generation", "steps_per_generation", "int", None, True,
     "optimizer micro steps that reuse one rollout (unset: gradient_accumulation_steps)"),
    ("num_generations_eval", "num_generations_eval", "int", None, True, "completions per prompt in eval (unset: G)"),
    ("eval_on", "(eval_strategy != no)", "bool", False, False,
     "evaluation runs (an eval strategy other than 'no' turns do_eval on, whatever --do_eval says)"),
    ("frontend_check", "(trl grpo)", "bool", False, False,
     "the `trl grpo` command builds GRPOConfig in its own process, at world size 1, before it launches the ranks"),
    ("auto_find_batch_size", "auto_find_batch_size", "bool", False, False,
     "halve the batch on out-of-memory (TrainingArguments)"),
    ("use_vllm", "use_vllm", "bool", False, False, "vLLM generates the rollouts"),
    ("vllm_server", "vllm_mode", "bool", False, False, "vllm_mode is server (False: colocate, the default)"),
    ("vllm_tp", "vllm_tensor_parallel_size", "int", 1, False, "tensor parallel size of the colocated vLLM engine"),
    ("server_tp", "server.tensor_parallel_size", "int", 1, False,
     "the `trl vllm-serve` server's --tensor_parallel_size (server mode)"),
    ("server_dp", "server.data_parallel_size", "int", 1, False,
     "the `trl vllm-serve` server's --data_parallel_size (server mode)"),
    ("sync_ref_model", "sync_ref_model", "bool", False, False, "the reference model follows the policy (TR-DPO)"),
    ("kl_on", "(beta != 0)", "bool", False, False, "a KL term: beta != 0 (default 0.0: no reference model)"),
    ("use_peft", "use_peft", "bool", False, False, "LoRA adapters (TRL's ModelConfig --use_peft)"),
    ("removed_fields", "(fields older GRPOConfigs had)", "bool", False, False,
     "the config sets fields of older GRPOConfigs (REMOVED_FIELDS)"),
    # model constants (from the model card), present only when a model is known
    ("num_heads", "model.num_attention_heads", "int", None, False, "attention heads"),
    ("num_kv_heads", "model.num_key_value_heads", "int", None, False, "key/value heads (query groups)"),
] + [
    # the Liger flag (versions.liger_flags: use_liger_loss 0.17-0.27, use_liger_kernel from 0.25) where the release
    # the config runs refuses a setting beside it (versions.LIGER_REFUSES: each check's [first, end))
    (gate, f"(Liger flag, TRL {span})", "bool", False, False,
     f"the Liger flag is on in a release that refuses {what} beside it") for gate, (span, what) in {
        "liger_peft_refused": ("0.17", "a PEFT model"), "liger_bnpo_only": ("0.17", "a loss_type other than bnpo"),
        "liger_no_two_sided": ("0.18-1.3", "delta (two-sided clipping)"),
        "liger_no_entropy_mask": ("0.20-1.13", "top_entropy_quantile < 1"),
        "liger_token_level_only": ("0.20-0.29", "importance_sampling_level other than token"),
        "liger_no_off_policy_mask": ("0.27-1.13", "off_policy_mask_threshold"),
        "liger_no_fused_ce": ("1.15 on", "liger_kernel_config's fused_linear_cross_entropy"),
    }.items()
] + [
    # the settings those checks read
    ("loss_bnpo", "(loss_type == bnpo)", "bool", True, False, "loss_type is bnpo"),
    ("two_sided", "(delta set)", "bool", False, False, "delta is set: two-sided GRPO clipping"),
    ("entropy_mask", "(top_entropy_quantile < 1)", "bool", False, False,
     "top_entropy_quantile < 1.0: only the highest-entropy tokens train"),
    ("token_level_is", "(importance_sampling_level == token)", "bool", True, False,
     "importance_sampling_level is token (the default)"),
    ("off_policy_mask", "(off_policy_mask_threshold set)", "bool", False, False,
     "off_policy_mask_threshold is set: off-policy sequence masking"),
    ("liger_fused_ce", "(liger_kernel_config fused_linear_cross_entropy)", "bool", False, False,
     "liger_kernel_config turns fused_linear_cross_entropy on"),
]
VARIABLES = var_specs(VARS)

W = IntVar("W")
G = IntVar("num_generations")
GEN = IntVar("generation_batch_size")
GEN_BASE = IntVar("gen_base")
GEN_EFF = IntVar("gen")
B = IntVar("per_device_train_batch_size")
USE_VLLM = BoolVar("use_vllm")
SERVER = BoolVar("vllm_server")

# the same resolution as ms-swift's HF path (frameworks/swift/rules.py shared_derived): gen_base = B*W,
# steps_per_generation defaults to gradient_accumulation_steps
DERIVED = shared_derived(
    B * W, "per_device_train_batch_size*W", IntVar("gradient_accumulation_steps"), "gradient_accumulation_steps",
) + [
    Derived("opt_batch", B * W * IntVar("gradient_accumulation_steps"), "completions per optimizer step: "
            "per_device_train_batch_size*W*gradient_accumulation_steps"),
    Derived("eval_batch", IntVar("per_device_eval_batch_size") * W,
            "completions per eval step: per_device_eval_batch_size*W"),
    # the generation batch as `trl grpo`'s front-end resolves it, at world size 1 (trl/cli/commands/training.py
    # TrainingCommand.run parses the flags into GRPOConfig before accelerate starts the ranks)
    Derived("spg_w1", if_then_else(is_set("steps_per_generation"), IntVar("steps_per_generation"),
                                   if_then_else(is_set("generation_batch_size"), GEN // B,
                                                IntVar("gradient_accumulation_steps"))),
            "steps_per_generation at world size 1"),
    Derived("gen_w1", if_then_else(is_set("generation_batch_size"), GEN, B * IntVar("spg_w1")),
            "generation_batch_size at world size 1"),
    Derived("vllm_max_num_seqs", B * IntVar("vllm_tp") * IntVar("spg"),
            "the colocated engine's max_num_seqs: per_device_train_batch_size*vllm_tensor_parallel_size*"
            "steps_per_generation (GRPOTrainer.__init__)"),
]

CONFIG = "trl/trainer/grpo_config.py:GRPOConfig.__post_init__"
FRONTEND = ("trl/trainer/grpo_config.py:GRPOConfig.__post_init__ (via trl/cli/commands/training.py:TrainingCommand.run, "
            "in the `trl grpo` process at world size 1)")
TRAINER = "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__"
VLLM = "trl/generation/vllm_generation.py:VLLMGeneration._init_vllm"


# GRPOConfig fields of older TRL releases (open-r1's recipes and many scripts set them) that 1.16.0's
# GRPOConfig and TrainingArguments do not have
REMOVED_FIELDS = ("max_prompt_length", "vllm_device", "vllm_dtype", "vllm_max_model_len", "vllm_guided_decoding_regex",
                  "vllm_enable_prefix_caching", "wandb_log_unique_prompts", "use_liger_loss")


def _rules() -> list[Rule]:
    gen_set, spg_set = is_set("generation_batch_size"), is_set("steps_per_generation")
    return [
        # ---------------- driver: GRPOConfig.__post_init__ --------------------------------------
        Rule(
            "trl.config.removed_fields",
            ~BoolVar("removed_fields"),
            "the config sets fields that TRL 1.16.0's GRPOConfig no longer has (of "
            + ", ".join(REMOVED_FIELDS) + "; the note names them): a --config YAML stops with 'Unknown arguments "
            "from config file', flags with HfArgumentParser's 'Some specified arguments are not used'",
            Stage.DRIVER, "trl/scripts/utils.py:TrlParser.parse_args_and_config (fail_with_unknown_args)",
            explanation="Written for older TRL (e.g. open-r1's recipes: max_prompt_length, vllm_device): drop them; "
                        "vllm_max_model_len is now vllm_max_model_length.",
        ),
        Rule(
            "trl.config.auto_find_batch_size_unsupported",
            ~BoolVar("auto_find_batch_size"),
            "auto_find_batch_size = {auto_find_batch_size}: GRPO refuses it (halving the batch on out-of-memory "
            "would break the generation batch's whole prompt groups); lower per_device_train_batch_size instead",
            Stage.DRIVER, CONFIG,
        ),
        Rule(
            "trl.config.gen_and_spg_exclusive",
            ~(gen_set & spg_set),
            "generation_batch_size = {generation_batch_size} and steps_per_generation = {steps_per_generation} "
            "are both set: TRL takes one of them ('can not be both configured at the same time')",
            Stage.DRIVER, CONFIG,
            explanation="Unlike ms-swift (since 4.4.0), TRL refuses the pair even when they agree.",
        ),
        Rule(
            "trl.config.gen_divisible_by_global_batch",
            divides(GEN_BASE, GEN),
            "generation_batch_size = {generation_batch_size} is not divisible by the global batch "
            "per_device_train_batch_size*num_processes = {per_device_train_batch_size}*{W} = {gen_base}",
            Stage.DRIVER, CONFIG, when=gen_set & ~spg_set,
            explanation="Only generation_batch_size is set: steps_per_generation = generation_batch_size / the "
                        "global batch must be whole.",
        ),
        Rule(
            "trl.config.eval_batch_divisible_by_num_generations_eval",
            divides(IntVar("num_generations_eval_eff"), IntVar("eval_batch")),
            "the global eval batch per_device_eval_batch_size*num_processes = {per_device_eval_batch_size}*{W} = "
            "{eval_batch} is not divisible by the generations used for evaluation = {num_generations_eval_eff}",
            Stage.DRIVER, CONFIG, when=BoolVar("eval_on"),
        ),
        Rule(
            "trl.config.gen_divisible_by_num_generations",
            divides(G, GEN_EFF),
            "generation_batch_size = {gen} is not divisible by num_generations = {num_generations} "
            "(per_device_train_batch_size*num_processes = {gen_base}, steps_per_generation = {spg}): a rollout "
            "must hold whole prompt groups",
            Stage.DRIVER, CONFIG,
            explanation="TRL 0.15-0.16 checked the per-step batch instead, in GRPOTrainer.__init__: 'The global train "
                        "batch size (W x B) must be evenly divisible by the number of generations per prompt' (trl "
                        "#2858, #3061, open-r1 #249; --framework trl==0.16.1); 0.17 checked W x B x "
                        "gradient_accumulation_steps there (--framework trl==0.17.0).",
        ),
        # ---------------- driver: `trl grpo`'s front-end, GRPOConfig at world size 1 ----------------
        # (its global-batch check at 1 holds whenever the ranks' does: per_device_train_batch_size divides
        # per_device_train_batch_size*W)
        Rule(
            "trl.frontend.gen_divisible_by_num_generations",
            divides(G, IntVar("gen_w1")),
            "generation_batch_size at world size 1 = {gen_w1} is not divisible by num_generations = "
            "{num_generations}: `trl grpo` builds GRPOConfig at world size 1 before it launches the ranks "
            "(per_device_train_batch_size*1*steps_per_generation = {per_device_train_batch_size}*{spg_w1})",
            Stage.DRIVER, FRONTEND, when=BoolVar("frontend_check"),
        ),
        Rule(
            "trl.frontend.eval_batch_divisible_by_num_generations_eval",
            divides(IntVar("num_generations_eval_eff"), IntVar("per_device_eval_batch_size")),
            "the eval batch at world size 1 = per_device_eval_batch_size = {per_device_eval_batch_size} is not "
            "divisible by the generations used for evaluation = {num_generations_eval_eff}: `trl grpo` builds "
            "GRPOConfig at world size 1 before it launches the ranks",
            Stage.DRIVER, FRONTEND, when=BoolVar("frontend_check") & BoolVar("eval_on"),
        ),
        Rule(
            "trl.config.num_generations_at_least_two",
            G >= 2,
            "num_generations = {num_generations}: GRPO needs at least 2 generations per prompt to compute "
            "advantages",
            Stage.DRIVER, CONFIG,
        ),
        # ---------------- trainer init ------------------------------------------------------------
        Rule(
            "trl.trainer.sync_ref_model_needs_beta",
            BoolVar("kl_on"),
            "sync_ref_model = {sync_ref_model} with beta = 0: there is no reference model to synchronize",
            Stage.TRAINER_INIT, TRAINER, when=BoolVar("sync_ref_model"),
        ),
        Rule(
            "trl.trainer.sync_ref_model_not_with_peft",
            ~BoolVar("use_peft"),
            "sync_ref_model = {sync_ref_model} with a PEFT model: the reference is the policy with its adapter "
            "disabled, there is no separate model to synchronize (NotImplementedError)",
            Stage.TRAINER_INIT, TRAINER, when=BoolVar("sync_ref_model") & BoolVar("kl_on"),
        ),
    ] + _liger_rules() + [
        # ---------------- worker init: vLLM ------------------------------------------------------
        Rule(
            "trl.vllm.colocate_tp_divides_world",
            divides(IntVar("vllm_tp"), W),
            "vllm_tensor_parallel_size = {vllm_tp} must divide the world size num_processes = {W} in colocate mode",
            Stage.WORKER_INIT, VLLM, when=USE_VLLM & ~SERVER,
            explanation="The colocated engines are built from groups of vllm_tensor_parallel_size ranks.",
        ),
        Rule(
            "trl.vllm.heads_divisible_by_tp",
            divides(IntVar("engine_tp"), IntVar("num_heads")),
            "num_attention_heads = {num_heads} is not divisible by the vLLM tensor parallel size {engine_tp}",
            Stage.WORKER_INIT, "vLLM model loading (its error: attention heads must be divisible by tensor "
            "parallel size)", when=USE_VLLM,
        ),
        Rule(
            "trl.gpus.budget",
            IntVar("gpus_needed") <= IntVar("cluster_num_gpus"),
            "the job needs {gpus_needed} GPUs (num_processes = {W} training ranks, plus tensor_parallel_size*"
            "data_parallel_size = {server_tp}*{server_dp} for a server-mode `trl vllm-serve`) but "
            "{cluster_num_gpus} are given: server mode takes GPUs away from training",
            Stage.DRIVER, "trl/scripts/vllm_serve.py (the server's GPUs) and accelerate launch (one GPU per "
            "process)", when=is_set("cluster_num_gpus"),
        ),
    ]


def _liger_rules() -> list[Rule]:
    """What TRL refuses beside its Liger switch (versions.liger_flags), each rule gated by the variable that says
    the release the config runs has the check (versions.LIGER_REFUSES: the spans, read in each wheel)."""
    liger = "the Liger flag (use_liger_loss up to TRL 0.24, use_liger_kernel from 0.25)"
    out = []
    for rule_id, holds, setting, said, stage, source, gate, fix in (
        ("trl.liger.no_peft", ~BoolVar("use_peft"), "a PEFT model (use_peft = {use_peft})",
         "TypeError: Liger loss is not supported with a PEFT model.", Stage.TRAINER_INIT, TRAINER,
         "liger_peft_refused", "TRL 0.17 runs it on full weights only: drop use_peft or use_liger_loss (0.18 takes "
         "both)"),
        ("trl.liger.bnpo_loss_only", BoolVar("loss_bnpo"), "a loss_type other than bnpo (loss_bnpo = {loss_bnpo})",
         "The provided loss type is not supported with `use_liger_loss`. Liger loss only supports `bnpo` for now.",
         Stage.TRAINER_INIT, TRAINER, "liger_bnpo_only",
         "set loss_type bnpo (0.17's default) or drop use_liger_loss (0.18 hands loss_type to Liger's loss)"),
        ("trl.liger.no_two_sided", ~BoolVar("two_sided"), "delta set (two_sided = {two_sided})",
         "Liger loss does not support two-sided GRPO loss yet.", Stage.DRIVER, CONFIG, "liger_no_two_sided",
         "drop delta or the Liger flag (1.4 hands delta to Liger's loss)"),
        ("trl.liger.no_entropy_mask", ~BoolVar("entropy_mask"),
         "top_entropy_quantile below 1.0 (entropy_mask = {entropy_mask})",
         "NotImplementedError: Liger Kernels don't currently support masking token positions based on entropy.",
         Stage.TRAINER_INIT, TRAINER, "liger_no_entropy_mask",
         "Liger's loss computes no entropy: set top_entropy_quantile 1.0 or drop the Liger flag"),
        ("trl.liger.token_level_only", BoolVar("token_level_is"),
         "importance_sampling_level other than token (token_level_is = {token_level_is})",
         "NotImplementedError: Liger Kernels currently only support token-level importance sampling.",
         Stage.TRAINER_INIT, TRAINER, "liger_token_level_only",
         "set importance_sampling_level token or drop the Liger flag (1.0 takes sequence too)"),
        ("trl.liger.no_off_policy_mask", ~BoolVar("off_policy_mask"),
         "off_policy_mask_threshold set (off_policy_mask = {off_policy_mask})",
         "Liger kernel does not support off-policy sequence masking yet.", Stage.TRAINER_INIT, TRAINER,
         "liger_no_off_policy_mask", "drop off_policy_mask_threshold or use_liger_kernel"),
        ("trl.liger.no_fused_linear_cross_entropy", ~BoolVar("liger_fused_ce"),
         "liger_kernel_config {{\"fused_linear_cross_entropy\": true}} (liger_fused_ce = {liger_fused_ce})",
         "it replaces the model's forward, which this trainer patches with a fused LM head.", Stage.TRAINER_INIT,
         TRAINER, "liger_no_fused_ce",
         "GRPOTrainer applies Liger's layer kernels only: drop fused_linear_cross_entropy from liger_kernel_config"),
    ):
        out.append(Rule(rule_id, holds, f"{liger} is on with {setting}: '{said}'", stage, source,
                        when=BoolVar(gate), explanation=fix[0].upper() + fix[1:] + "."))
    return out


RULES = _rules()

RULESET = RuleSet("trl", VERSION, VARIABLES, DERIVED, RULES)
