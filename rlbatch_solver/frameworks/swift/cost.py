"""ms-swift 4.6.0 GRPO values -> cost-model ``Plan`` per phase (``swift`` and ``swift-megatron``).

One RL step is one rollout of ``generation_batch_size`` completions, trained in
``steps_per_generation`` optimizer steps. vLLM runs colocated on the training GPUs (``--vllm_mode
colocate``, TP ``vllm_tensor_parallel_size``) or on a ``swift rollout`` server of its own GPUs
(``server``). ``--sleep_level`` 1/2 frees the engine's KV cache (and weights) during training,
0 keeps its whole ``vllm_gpu_memory_utilization`` share (swift/rlhf_trainers/rollout_mixin.py
``_prepare_vllm``, swift/rlhf_trainers/utils.py ``sleep_vllm_engine``); ``--offload_model`` /
``--offload_optimizer`` move the policy (and reference) weights / optimizer to the CPU during a
colocated engine's rollout and back for training (rollout_mixin ``offload_context``; without it nothing moves).

HF path (swift/rlhf_trainers/grpo_trainer.py on transformers' Trainer): DeepSpeed ZeRO from
``--deepspeed zero0..zero3[_offload]`` (DeepSpeed's own byte counts, ``memory.deepspeed_states``;
``_offload`` is ZeRO-Offload of the optimizer, and of the params at stage 3), or plain DDP when it
is unset: the model is loaded in bf16 and AdamW keeps bf16 moments (``Plan.trainer = "bf16"``); a LoRA adapter is
fp32 (peft's upcast, ``Plan.lora_dtype_bytes``) with fp32 gradients and moments, and ``--optim adamw_8bit`` /
``paged_adamw_8bit`` keeps bitsandbytes' 8-bit moments (``Plan.optimizer_8bit``).
Megatron path (swift/megatron/trainers/grpo_trainer.py): the megatron-core memory of
``frameworks/verl/cost_megatron.py`` (one definition, ``Plan.trainer = "megatron"``) with ms-swift's defaults:
distributed optimizer on, sequence parallel off, ``recompute_granularity`` selective.

Cost-only variables (no rule reads them; parsed from the flags, printed by export):
``max_length`` (prompt limit), ``max_completion_length``, ``ds_stage`` / ``ds_offload`` (HF),
``gmu_permille``, ``sleep_level``, ``offload_model``, ``offload_optimizer``, ``grad_ckpt`` (HF),
``kl_on`` (HF: beta != 0), ``recompute`` / ``recompute_modules`` (bit set, cost_common.modules_code) /
``cpu_optimizer_permille`` (Megatron).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...costmodel import constants as C
from ...costmodel.host import HostLayout
from ...costmodel.memory import model_consts
from ...costmodel.phase import Phase
from ...catalog.gpus import GPU
from ...catalog.models import ModelCard
from ...costmodel.plan import Plan
from ...costmodel.tables import TWO_POOLS, CostSpec
from ...errors import InputError
from ...release_numbers import release_numbers
from ...rules.base import Value
from ..bnb import quantized_cost_spec
from ..cost_common import DEFAULT_RECOMPUTE_MODULES, modules_code, recompute_modules
from ..overrides import flag_bool, memory_share_permille, whole_number

DEFAULT_MAX_LENGTH = 2048  # --max_length unset: the template keeps the model's limit; we assume 2048
RECOMPUTE = {0: "none", 1: "selective", 2: "full"}
_DS = {None: (0, False), "": (0, False)}
for _stage in range(4):
    _DS[f"zero{_stage}"] = (_stage, False)
    _DS[f"zero{_stage}_offload"] = (_stage, True)

# The `swift rollout` server's vLLM memory share: its own --vllm_gpu_memory_utilization (arguments/deploy_args.py
# RolloutArguments < InferArguments < VllmArguments, default 0.9; pipelines/infer/rollout.py passes
# args.get_vllm_engine_kwargs() to its engines). The trainer's --vllm_gpu_memory_utilization sizes the colocated
# engine alone: rlhf_trainers/rollout_mixin.py ``_prepare_vllm`` builds an engine in its colocate branch only (the
# server branch asks the server for its settings), ms-swift 4.6.0. Our flag for it, beside
# --rollout.vllm_tensor_parallel_size: --rollout.vllm_gpu_memory_utilization.
SERVER_GMU_PERMILLE = 900

HF_COST_DEFAULTS: dict[str, Value] = {
    "max_length": DEFAULT_MAX_LENGTH, "max_completion_length": 512, "ds_stage": 0, "ds_offload": False,
    "gmu_permille": 900, "sleep_level": 0, "offload_model": False, "offload_optimizer": False, "grad_ckpt": True,
    "server_gmu_permille": SERVER_GMU_PERMILLE,
    "kl_on": True, "weights_fp32": False,  # ms-swift loads the checkpoint's dtype (bf16)
    # --kl_in_reward (RLHFArguments: None resolves to False for grpo, True for rloo and reinforce_plus_plus): before
    # 3.11 the trainer computes the old log-probs for it too (old_log_prob_runs)
    "kl_in_reward": False,
    # single-turn rollouts (no --multi_turn_scheduler); see multi_turn_context
    "multi_turn_len": 0,
    "materialized_logits": True,  # trl 0.29's selective_log_softmax over the whole logits (LOGIT_BYTES "swift-*")
    "liger_loss": False,  # the update's loss is Liger's chunked GRPO loss (LIGER_LOSS_FROM)
    # read for TRL only (trl/cost.py cost_values); ms-swift's own forward goes by its release (temperature_copy)
    "temperature_copy": False,
    # ``swift rlhf`` trains LoRA unless told otherwise: swift/arguments/base_args/base_args.py BaseArguments
    # (tuner_type default 'lora'), swift/arguments/tuner_args.py TunerArguments (lora_rank 8, all-linear)
    "lora_rank": 8,
    # the adapter stays fp32 (peft's upcast) unless --lora_dtype bfloat16 on 4.5.0 or later (LORA_DTYPE_KEPT_FROM)
    "lora_bf16": False,
    # transformers' --optim (TrainingArguments, default adamw_torch): bitsandbytes' 8-bit AdamW (OPTIM_8BIT)
    "optim_8bit": False,
    # transformers' Trainer saves every save_steps and at the end (trainer_callback.py DefaultFlowCallback: the last
    # step saves with save_strategy "steps", the default) unless save_strategy is "no"; save_only_model (default
    # False) skips DeepSpeed's optimizer checkpoint
    "saves": True, "save_optimizer": True,
    # --move_model_batches (default None: one group of every parameter; rlhf_args / trainers/arguments.py)
    "move_model_batches": 0,
    # --num_iterations (arguments/rlhf_args.py RLHFArguments, default 1): training passes per generation
    # (generation_reuse)
    "num_iterations": 1,
    # a bitsandbytes base (quantized_load, frameworks/bnb.py): none unless --quant_method bnb; double quantization on
    # by default (arguments/base_args/quant_args.py QuantizeArguments bnb_4bit_use_double_quant True)
    "load_bits": 16, "nested_quant": True, "engine_load_bits": 16,
}
MEGATRON_COST_DEFAULTS: dict[str, Value] = {
    "max_length": DEFAULT_MAX_LENGTH, "max_completion_length": 512, "gmu_permille": 900, "sleep_level": 0,
    "server_gmu_permille": SERVER_GMU_PERMILLE, "offload_model": False, "offload_optimizer": False, "recompute": 1, "cpu_optimizer_permille": 0,
    # --recompute_modules (MegatronArguments default ['core_attn']), copied into megatron-core's TransformerConfig
    # by name (swift/megatron/model/utils.py: every provider field from the matching argument)
    "recompute_modules": DEFAULT_RECOMPUTE_MODULES,
    "weights_fp32": False, "materialized_logits": True, "multi_turn_len": 0,
    # ``megatron rlhf`` trains the full model unless told otherwise (swift/megatron/arguments/megatron_args.py:
    # tuner_type default 'full', lora_rank 8)
    "lora_rank": 0,
}
# Memory switches ``recommend`` searches when the user leaves them alone.
# ds_offload: DeepSpeed's CPU offload (--deepspeed zero2_offload / zero3_offload), searched with the stage: a config
# that only fits offloaded (ms-swift's internal_moe_full.sh) stays in the space ``recommend --from`` searches.
HF_KNOB_SEARCH: dict[str, list[Value]] = {"ds_stage": [2, 3], "ds_offload": [False, True],
                                          "gmu_permille": [400, 600, 800], "sleep_level": [0, 1]}
MEGATRON_KNOB_SEARCH: dict[str, list[Value]] = {"recompute": [1, 2], "gmu_permille": [400, 600, 800],
                                                "sleep_level": [0, 1]}
KNOB_FLAGS = {"ds_stage": ("deepspeed",), "ds_offload": ("deepspeed",), "gmu_permille": ("vllm_gpu_memory_utilization",),
              "sleep_level": ("sleep_level",), "recompute": ("recompute_granularity",)}


def _bool(key: str, raw: Any) -> bool:
    """A boolean flag; a null value reads as false here (the cost inputs' defaults are off)."""
    return False if str(raw).strip().lower() == "none" else flag_bool(key, raw)


def _num(key: str, raw: Any, kind=int):
    try:
        return kind(raw)
    except (TypeError, ValueError):
        raise InputError(key, f"'{raw}' is not a number.", f"write --{key} as a number.") from None


def multi_turn_context(flat: Mapping[str, Any]) -> int:
    """How long a multi-turn trajectory may grow: 0 for single-turn rollouts (or a colocated multi-turn run whose
    ``--completion_length_limit_scope total`` caps all rounds together at max_completion_length), else the engine's
    context: ``--vllm_max_model_len``, or -1 for the model's own limit (max_position_embeddings).

    With ``--multi_turn_scheduler`` each round may answer max_completion_length tokens, and the default scope is
    'per_round' (4.6.0 rlhf_trainers/args_mixin.py GRPOArgumentsMixin completion_length_limit_scope; 3.6.1
    trainers/arguments.py the same): only rollout_mixin.py ``multi_turn_completion_length_context`` (colocate, scope
    'total') caps the total, and a server-mode rollout is never capped there. The rounds stop when a round ends
    at its length limit or max_turns (default None) is reached (MultiTurnScheduler.check_finished), so the
    conversation grows up to the engine's context. The trainer then encodes the whole conversation without a length
    limit (``_template_context`` sets template.max_length to None) and computes log-probs from the first response
    token to the end (``logits_to_keep``): the trained response is the whole trajectory after the first prompt."""
    # 3.x's deprecated --multi_turn_func becomes the scheduler (3.6.1 llm/argument/rlhf_args.py _deprecated_warning)
    if flat.get("multi_turn_scheduler", flat.get("multi_turn_func")) in (None, "", "None", "none"):
        return 0
    server = str(flat.get("vllm_mode") or "").lower() == "server"
    if str(flat.get("completion_length_limit_scope") or "per_round").lower() == "total" and not server:
        return 0
    if not server and flat.get("vllm_max_model_len") not in (None, "", "None", "none"):
        return max(1, _num("vllm_max_model_len", flat["vllm_max_model_len"]))
    return -1  # the rollout server's own limit is not in the trainer's command: the model's


# the first release whose colocated vLLM quantizes a bnb 4-bit model's copy itself (quantized_load; read in the
# 4.0.0, 4.0.4, 4.1.0, 4.2.0, 4.3.2 and 4.6.0 wheels: 4.0.x pass no quantization)
QUANTIZED_ENGINE_FROM = (4, 1, 0)


def quantized_load(flat: Mapping[str, Any]) -> dict[str, Value]:
    """The bitsandbytes base of ``--quant_method bnb --quant_bits 4|8`` (frameworks/bnb.py's inputs).

    4.6.0 arguments/base_args/quant_args.py ``QuantizeArguments.get_quantization_config`` (3.x:
    llm/argument/base_args/quant_args.py, the same): no quantization unless ``quant_method`` is given (``quant_bits``
    alone loads the model as it is); 'bnb' hands transformers a ``BitsAndBytesConfig`` with ``load_in_4bit`` for 4
    bits, ``load_in_8bit`` for 8 (others raise), ``bnb_4bit_quant_type`` 'nf4' and ``bnb_4bit_use_double_quant``
    True by default. The modules left unquantized (the embedding, lm_head, norms) keep ``torch_dtype`` (the
    checkpoint's, bf16): ms-swift never calls peft's prepare_model_for_kbit_training, and casts only trainable fp16
    parameters to fp32 (pipelines/train/tuner.py). ms-swift builds its colocated vLLM engine with
    ``quantization='bitsandbytes'`` for a bnb 4-bit model from 4.1.0 on (rlhf_trainers/rollout_mixin.py
    ``_prepare_vllm``: ``vllm_quantization``), so the engine quantizes its own copy while loading
    (``engine_load_bits`` 4); 3.x's engine (trainers/rlhf_trainer/rollout_mixin.py, grpo_trainer.py) and 4.0.x's pass
    no quantization and load 16 bits (``Framework.to_values`` sets that before ``QUANTIZED_ENGINE_FROM``). Other
    methods (hqq, eetq, quanto, fp8; awq and gptq checkpoints) are not read here (``Framework.config_notes`` says
    so)."""
    method = str(flat.get("quant_method") or "").strip()
    if method.lower() == "bnb" and method != "bnb":
        # QuantizeArguments.quant_method is a Literal['bnb', 'hqq', 'eetq', 'quanto', 'fp8']: the argument parser
        # takes those spellings only
        raise InputError("quant_method", f"'{method}' is not one of ms-swift's choices (bnb, hqq, eetq, quanto, fp8; "
                         "quant_args.py QuantizeArguments.quant_method): its argument parser refuses it.",
                         "write --quant_method bnb.")
    if method != "bnb":
        return {}
    if flat.get("quant_bits") in (None, "", "None", "none", "null"):
        raise InputError("quant_bits", "is not given with --quant_method bnb: ms-swift refuses it (quant_args.py "
                         "get_quantization_config: \"Please set the quant_bits\").",
                         "add --quant_bits 4 (NF4, QLoRA) or --quant_bits 8 (LLM.int8).")
    bits = _num("quant_bits", flat.get("quant_bits"))
    if bits not in (4, 8):
        raise InputError("quant_bits", f"{bits} is not a bitsandbytes width: ms-swift's bnb method loads 4 or 8 bits "
                         "(quant_args.py: \"bnb not support quant_bits\").", "write --quant_bits 4 or --quant_bits 8.")
    out: dict[str, Value] = {"load_bits": bits, "engine_load_bits": bits if bits == 4 else 16}
    if "bnb_4bit_use_double_quant" in flat:
        out["nested_quant"] = _bool("bnb_4bit_use_double_quant", flat["bnb_4bit_use_double_quant"])
    return out


# --use_liger_kernel makes ms-swift's GRPO loss Liger's chunked one (costmodel/constants.py LIGER_GRPO_*) from 3.5.0
# (trainers/rlhf_trainer/grpo_trainer.py GRPOTrainer.__init__ ``self.use_liger_loss = self.args.use_liger_kernel``;
# 4.6.0 rlhf_trainers/grpo_trainer.py _prepare_liger_loss); 3.3.1 to 3.4.1 have no Liger loss: the flag only patches
# the model's layers through transformers' Trainer, and the log-probs, computed without labels, still build the logits
LIGER_LOSS_FROM = "3.5.0"
# --lora_dtype bfloat16 keeps the LoRA adapter in bf16 from 4.5.0 (tuners/peft.py ``_cast_adapter_dtype_hook``: "Keep
# an explicitly configured Swift LoRA dtype from being upcast by PEFT"; absent from the 4.4.2 wheel). Before it the
# dtype is applied inside LoraModel.__init__ (``__new_init__`` -> ``_convert_dtype``) and PeftModel.__init__ then
# upcasts it (peft >= 0.12 ``_cast_adapter_dtype``); float16 is cast to fp32 in every release
# (pipelines/train/tuner.py, 3.x llm/train/tuner.py: trainable fp16 parameters -> fp32)
LORA_DTYPE_KEPT_FROM = "4.5.0"
# transformers' OptimizerNames that build bitsandbytes' 8-bit AdamW (trainer.py ``get_optimizer_cls_and_kwargs``:
# ADAMW_BNB / ADAMW_8BIT / PAGED_ADAMW_8BIT -> bnb.optim.AdamW with ``optim_bits`` 8), costmodel/constants.py
# ADAM_8BIT_STATE_BYTES
OPTIM_8BIT = ("adamw_bnb_8bit", "adamw_8bit", "paged_adamw_8bit")


def optim_8bit(flat: Mapping[str, Any]) -> bool:
    """Whether ``--optim`` names bitsandbytes' 8-bit AdamW (``OPTIM_8BIT``); DeepSpeed's own optimizer is priced as
    DeepSpeed counts it."""
    return str(flat.get("optim") or "").strip().lower() in OPTIM_8BIT


def cost_values(flat: Mapping[str, Any], megatron: bool, release: str | None = None) -> dict[str, Value]:
    """The cost-model inputs of a pasted ms-swift command, with ms-swift 4.6.0's defaults (``release``: the ms-swift
    release that runs it, None: the newest)."""
    out = dict(MEGATRON_COST_DEFAULTS if megatron else HF_COST_DEFAULTS)
    if flat.get("max_length") not in (None, "None", ""):
        out["max_length"] = _num("max_length", flat["max_length"])
    if flat.get("max_completion_length") not in (None, ""):
        out["max_completion_length"] = _num("max_completion_length", flat["max_completion_length"])
    if "vllm_gpu_memory_utilization" in flat:
        out["gmu_permille"] = memory_share_permille("vllm_gpu_memory_utilization", flat["vllm_gpu_memory_utilization"],
                                                    "write --vllm_gpu_memory_utilization 0.9 (vLLM's memory share).")
    if "rollout.vllm_gpu_memory_utilization" in flat:
        out["server_gmu_permille"] = memory_share_permille(
            "rollout.vllm_gpu_memory_utilization", flat["rollout.vllm_gpu_memory_utilization"],
            "write --rollout.vllm_gpu_memory_utilization 0.9 (the `swift rollout` server's memory share).")
    if "sleep_level" in flat:
        out["sleep_level"] = _num("sleep_level", flat["sleep_level"])
    # --train_type is the name older ms-swift scripts use for --tuner_type (4.6.0 knows only the new one)
    tuner = flat.get("tuner_type", flat.get("train_type"))
    if tuner is not None:
        rank = _num("lora_rank", flat.get("lora_rank", 8))
        # every tuner but 'full' trains adapters over a frozen base: modelled as LoRA of --lora_rank
        out["lora_rank"] = 0 if str(tuner).lower() == "full" else max(1, rank)
    elif "lora_rank" in flat and out["lora_rank"]:
        out["lora_rank"] = max(1, _num("lora_rank", flat["lora_rank"]))
    for key in ("offload_model", "offload_optimizer"):
        if key in flat:
            out[key] = _bool(key, flat[key])
    if megatron:
        gran = flat.get("recompute_granularity")
        if gran is not None:
            out["recompute"] = {"none": 0, "null": 0, "selective": 1, "full": 2}.get(str(gran).lower(), 1)
        if flat.get("recompute_modules") is not None:
            out["recompute_modules"] = modules_code(flat["recompute_modules"], "recompute_modules")
        if _bool("optimizer_cpu_offload", flat.get("optimizer_cpu_offload", False)):
            out["cpu_optimizer_permille"] = int(round(_num("optimizer_offload_fraction",
                                                           flat.get("optimizer_offload_fraction", 1.0), float) * 1000))
        return out
    out.update(save_values(flat))
    out["liger_loss"] = (_bool("use_liger_kernel", flat.get("use_liger_kernel", False))
                         and release_numbers(release or "9") >= release_numbers(LIGER_LOSS_FROM))
    out.update(quantized_load(flat))
    out["optim_8bit"] = optim_8bit(flat)
    out["lora_bf16"] = (str(flat.get("lora_dtype") or "").strip().lower() == "bfloat16"
                        and release_numbers(release or "9") >= release_numbers(LORA_DTYPE_KEPT_FROM))
    if flat.get("move_model_batches") not in (None, "", "None", "none"):
        out["move_model_batches"] = max(1, _num("move_model_batches", flat["move_model_batches"]))
    out["multi_turn_len"] = multi_turn_context(flat)
    out.update(iteration_values(flat))
    ds = flat.get("deepspeed")
    key = None if ds is None else str(ds)
    if key not in _DS:
        raise InputError("deepspeed", f"'{ds}' is not one of ms-swift's DeepSpeed presets.",
                         "use zero0, zero1, zero2, zero3, zero2_offload or zero3_offload.")
    out["ds_stage"], out["ds_offload"] = _DS[key]
    if ds is None:
        out["ds_stage"] = -1  # no DeepSpeed: DDP
    if "gradient_checkpointing" in flat:
        out["grad_ckpt"] = _bool("gradient_checkpointing", flat["gradient_checkpointing"])
    if "beta" in flat:
        out["kl_on"] = _num("beta", flat["beta"], float) != 0.0
    if flat.get("kl_in_reward") not in (None, "None", "none", ""):
        out["kl_in_reward"] = _bool("kl_in_reward", flat["kl_in_reward"])
    else:
        out["kl_in_reward"] = str(flat.get("advantage_estimator", "grpo")) in ("rloo", "reinforce_plus_plus")
    return out


def export_flags(solution: Mapping[str, Value], megatron: bool) -> list[str]:
    """The cost-model inputs that differ from ms-swift's defaults, as flags."""
    defaults = MEGATRON_COST_DEFAULTS if megatron else HF_COST_DEFAULTS
    out = []
    if not megatron and solution.get("ds_stage", -1) not in (-1, None):
        out.append(f"--deepspeed zero{solution['ds_stage']}{'_offload' if solution.get('ds_offload') else ''}")
    engine = solution.get("use_vllm", True)  # without vLLM no engine reads its share or sleep level
    if engine and solution.get("gmu_permille") not in (None, defaults["gmu_permille"]):
        out.append(f"--vllm_gpu_memory_utilization {int(solution['gmu_permille']) / 1000}")
    if engine and solution.get("sleep_level"):
        out.append(f"--sleep_level {solution['sleep_level']}")
    for key in ("offload_model", "offload_optimizer"):
        if solution.get(key):
            out.append(f"--{key} true")
    if megatron:
        if solution.get("recompute") not in (None, defaults["recompute"]):
            out.append(f"--recompute_granularity {RECOMPUTE[int(solution['recompute'])]}")
            if int(solution["recompute"]) == 2:
                out += ["--recompute_method uniform", "--recompute_num_layers 1"]
        if solution.get("cpu_optimizer_permille"):
            out += ["--optimizer_cpu_offload true",
                    f"--optimizer_offload_fraction {int(solution['cpu_optimizer_permille']) / 1000}"]
    return out


def rollout_layout(v: Mapping[str, Value], megatron: bool) -> tuple[int, int]:
    """(completions per rollout, optimizer steps per rollout) as ms-swift resolves them."""
    world = int(v.get("gpus_per_node") or 1) * int(v.get("nnodes") or 1)
    if megatron:
        base, default_spg = int(v.get("global_batch_size") or 1), 1
    else:
        base, default_spg = int(v.get("per_device_train_batch_size") or 1) * world, int(
            v.get("gradient_accumulation_steps") or 1)
    gen, spg = v.get("generation_batch_size"), v.get("steps_per_generation")
    if spg:
        spg = int(spg)
    elif gen:
        spg = max(1, int(gen) // max(1, base))
    else:
        spg = default_spg
    gen = int(gen) if gen else base * spg
    return max(1, gen), max(1, spg)


def generation_reuse(values: Mapping[str, Value]) -> int:
    """Training passes over one generation's completions (``CostSpec.generation_reuse``): ``num_iterations``. The HF
    trainer generates on every ``steps_per_generation x num_iterations``-th micro step and trains the micro steps in
    between on the buffered completions (4.6.0 rlhf_trainers/grpo_trainer.py ``GRPOTrainer._prepare_inputs``:
    ``generate_every``; TRL's the same, trl/trainer/grpo_trainer.py ``GRPOTrainer._prepare_inputs``, and TRL 0.16.0
    on every num_iterations-th optimizer step, ``self.state.global_step % self.num_iterations``), the sampler
    repeating each generation batch num_iterations times (``RepeatSampler`` ``repeat_count``). The reference and old
    log-probs and the weight sync run inside the generation (``_generate_and_score_completions``)."""
    return max(1, int(values.get("num_iterations") or 1))


def phases_run(values: Mapping[str, Value]) -> list[str]:
    phases = [Phase.ROLLOUT, Phase.OLD_LOG_PROB]
    if values.get("kl_on"):
        phases.append(Phase.REF)
    return phases + [Phase.ACTOR_UPDATE]


def old_log_prob_runs(values: Mapping[str, Value], release: str | None) -> bool:
    """Whether ms-swift ``release``'s HF GRPO trainer runs the old log-prob forward (its batch preparation in
    ``_prepare_inputs``), read in each release's swift/trainers/rlhf_trainer/grpo_trainer.py: 3.3.1 and 3.4.1 only
    ``if self.old_policy`` (``num_iterations > 1``); 3.10.3 (the pack judging 3.5-3.10) ``if self.old_policy() or
    self.kl_in_reward``, ``old_policy()`` being ``num_iterations > 1 or gradient_accumulation_steps %
    (steps_per_generation x sequence_parallel_size) != 0``; 3.12.6, 4.3.2 and 4.6.0 always (swift/rlhf_trainers/
    grpo_trainer.py ``_prepare_batch_inputs`` computes ``old_per_token_logps`` unconditionally)."""
    if not old_log_prob_gated(release):
        return True
    numbers = release_numbers(release or "")
    iterations = int(values.get("num_iterations") or 1)
    if numbers < (3, 5):
        return iterations > 1
    accumulation = max(1, int(values.get("gradient_accumulation_steps") or 1))
    steps = rollout_layout(values, False)[1] * max(1, int(values.get("sequence_parallel_size") or 1))
    return iterations > 1 or accumulation % steps != 0 or bool(values.get("kl_in_reward"))


# what the old log-prob forward's running reads (old_log_prob_runs, the TRL rule of trl/cost.py, hf_phases_run):
# a search that varies any of them prices the phase where it runs only (CostSpec.gated_phases)
OLD_LOG_PROB_GATE = ("num_iterations", "gradient_accumulation_steps", "per_device_train_batch_size",
                     "generation_batch_size", "steps_per_generation", "gpus_per_node", "nnodes",
                     "sequence_parallel_size", "kl_in_reward", "use_vllm", "vllm_server", "ds_stage",
                     "vllm_is_correction")


def old_log_prob_gated(release: str | None) -> bool:
    """Whether ``release``'s HF trainer runs the old log-prob forward for some values and not others (before 3.11:
    ``old_log_prob_runs``; from 3.11 and for the newest, None, every step)."""
    numbers = release_numbers(release or "")
    return bool(numbers) and numbers < (3, 11)


def hf_phases_run(release: str | None):
    """``phases_run`` of the HF trainer of ``release``: without the old log-prob forward where it skips it, unless
    the phase carries the weight sync's ZeRO-3 gather (an engine on GPUs of its own: the sync runs on the training
    ranks with that forward's residents, costmodel/memory.py): there the phase stays, its memory the sync's, and the
    step prices one forward more than the trainer runs."""
    def phases(values: Mapping[str, Value]) -> list[str]:
        sync_there = bool(values.get("use_vllm")) and bool(values.get("vllm_server")) and int(
            values.get("ds_stage", -1)) >= 3
        runs = sync_there or old_log_prob_runs(values, release)
        return [p for p in phases_run(values) if p != Phase.OLD_LOG_PROB or runs]
    return phases


def _response_len(v: Mapping[str, Value], model: ModelCard) -> int:
    """The longest trained response: max_completion_length, or for a multi-turn rollout that only the engine's
    context bounds (``multi_turn_context``) the rest of that context after a prompt at its max_length."""
    response = int(v.get("max_completion_length") or 512)
    context = int(v.get("multi_turn_len") or 0)
    if context < 0:
        context = model.max_position_embeddings
    return max(response, context - int(v.get("max_length") or DEFAULT_MAX_LENGTH))


# How ms-swift gathers the ZeRO-3 parameters for the weight sync to vLLM, by release (read in each release's code):
# * 3.3.1-3.4.x, an external server (--vllm_server_host): TRL 0.16's GRPOTrainer._move_model_to_vllm (the pinned
#   trl < 0.17; ms-swift's grpo_trainer.py ``_move_model_to_vllm_lmdeploy`` hands it over): a full model one parameter
#   at a time (``gather_if_zero3([param])``), a LoRA model every parameter at once; otherwise ms-swift's own loop,
#   ``unwrap_model_for_generation`` per group of ``split_batches``.
# * 3.5.0-3.9.x grpo_trainer.py ``_move_model_to_vllm``: a full model one parameter at a time, a LoRA model per group.
# * 3.10.0-3.11.x, 3.12.6 (#8091) and 4.x rollout_mixin.py ``_move_full_model_to_vllm`` (full and LoRA alike;
#   3.x: swift/trainers/rlhf_trainer/, 4.x: swift/rlhf_trainers/): per group.
# * 3.12.0-3.12.5 rollout_mixin.py: every parameter at once, whatever --move_model_batches says. 3.12.0's
#   ``_move_full_model_to_vllm`` calls ``_get_merged_state_dict_for_vllm`` per group, which opens
#   ``gather_if_zero3`` over ``self.model.parameters()`` each time; 3.12.1-3.12.5 open it once over every parameter
#   around the loop over the groups ("gather_if_zero3: once for the entire sync").
# Without --move_model_batches ``split_batches`` returns one group of every parameter.
SYNC_GATHER_SINCE = (("3.3.1", "external"), ("3.5.0", "param"), ("3.10.0", "groups"), ("3.12.0", "all"),
                     ("3.12.6", "groups"))
SYNC_GATHER_GROUPS = {"": 0, "param": -1, "all": 1}  # Plan.sync_gather_groups; "groups": --move_model_batches


def sync_gather(release: str | None, lora: bool, external_server: bool) -> str:
    """How ms-swift ``release`` gathers the ZeRO-3 parameters for its weight sync (``SYNC_GATHER_SINCE``): "param"
    (one at a time), "groups" (one group of --move_model_batches at a time), "all" (at once) or "" (a release before
    3.3.1, not read)."""
    kind = ""
    for first, how in SYNC_GATHER_SINCE:
        if release and release_numbers(release) >= release_numbers(first):
            kind = how
    if kind == "external":
        kind = ("all" if lora else "param") if external_server else "groups"
    elif kind == "param" and lora:
        kind = "groups"
    return kind


# ms-swift 3.1.1 (its first GRPO trainer; 3.1.0 has none) to 3.4.0 take the log-probs of a LoRA policy from the whole
# sequence's logits: grpo_trainer.py GRPOTrainer._get_per_token_logps hands over to TRL's
# ``_get_per_token_logps`` (``logits_to_keep + 1`` positions) only when ``'logits_to_keep'`` is a parameter of the
# unwrapped model's forward, and PEFT's PeftModelForCausalLM.forward (peft 0.14 peft_model.py: input_ids,
# attention_mask, ..., **kwargs) has none, so ``model(**inputs).logits`` is computed at every position and sliced to
# the response's (``logits[:, -(logits_to_keep + 1):-1, :]``). 3.4.1 reads the PEFT base model's forward instead
# (``unwrapped_model.base_model.model.forward``) and keeps the response's positions only.
WHOLE_SEQUENCE_LOGITS = ("3.1.0", "3.4.1")  # [first, fixed)
# A multimodal model (ModelCard.has_vision) takes that path in every release from 3.1.1 to 3.6.0, LoRA or full: the
# hand-over to TRL's forward also needs ``not unwrapped_model.model_meta.is_multimodal`` (3.1.1, 3.4.1, 3.5.0 and
# 3.6.0 grpo_trainer.py GRPOTrainer._get_per_token_logps), and the local forward ``model(**inputs).logits`` passes no
# ``logits_to_keep``. 3.7.0 (``self.model_kwarg_keys``, the forward's parameters: inspect.signature(model.forward);
# 4.0.0 and 4.6.0 rlhf_trainers/grpo_trainer.py the same) passes ``logits_to_keep + 1`` only when the model's forward
# takes it, which the installed transformers decides per model class (ModelCard.logits_to_keep_since): from 3.7.0
# priced where the newest transformers the release allows (``TRANSFORMERS_BELOW``) builds a forward without it.
WHOLE_SEQUENCE_LOGITS_MULTIMODAL = ("3.1.0", "3.7.0")  # [first, fixed where the forward takes logits_to_keep)

# The transformers each ms-swift release allows, ``transformers<X`` in its wheel's requirements (METADATA
# Requires-Dist): (first release, X), in force until the next row; the newest a release allows is the one priced
# (the same reading as the spans above). 3.1.1 < 4.50; 3.4.1 to 3.6.0 < 4.53; 3.7.0 < 4.56; 3.8.0 < 4.57; 3.9.0,
# 3.10.3 and 3.12.6 < 4.58; 4.0.0 < 5.3.0; 4.3.2 < 5.13.0; 4.6.0 < 5.20.0.
TRANSFORMERS_BELOW = (("3.1.0", "4.50"), ("3.4.1", "4.53"), ("3.7.0", "4.56"), ("3.8.0", "4.57"), ("3.9.0", "4.58"),
                      ("4.0.0", "5.3.0"), ("4.3.2", "5.13.0"), ("4.6.0", "5.20.0"))


def forward_keeps_logits(release: str | None, model: ModelCard) -> bool:
    """Whether the newest transformers ms-swift ``release`` allows (``TRANSFORMERS_BELOW``) builds ``model``'s forward
    with ``logits_to_keep`` (ModelCard.logits_to_keep_since, the first release that does): every text model; a
    vision-language model whose class gained it below the release's bound; a vision type not read: no."""
    if not model.has_vision:
        return True
    since = model.logits_to_keep_since
    if not (release and since):
        return False
    below = [b for first, b in TRANSFORMERS_BELOW if release_numbers(first) <= release_numbers(release)]
    return bool(below) and release_numbers(since) < release_numbers(below[-1])


# transformers' generate prefill of a vision-language model computes every prompt position's logits
# (Plan.generate_logits_every_position) where the model class's forward takes no ``logits_to_keep``
# (generation/utils.py ``generate`` sets it to 1 only where the forward has it): Qwen2VLForConditionalGeneration /
# Qwen2_5_VLForConditionalGeneration.forward in transformers 4.46.3, 4.49.0 and 4.52.4 (``logits =
# self.lm_head(hidden_states)``), so every transformers 3.1.1 to 3.6.0 install (``TRANSFORMERS_BELOW``); from 3.7.0
# the model class decides (``forward_keeps_logits``): Qwen2.5-VL's takes it from transformers 4.54.0, Qwen2-VL's
# only from 5.0.0 (ms-swift 4.0.0's bound).
GENERATE_LOGITS_EVERY_POSITION = ("3.1.0", "3.7.0")  # [first, fixed where the forward takes logits_to_keep)


# The ViT's dense SDPA mask (Plan.vision_sdpa_mask, constants.VIT_SDPA_MASK_BYTES_PER_PAIR): transformers 4.49.0 and
# 4.52.4 Qwen2_5_VLVisionSdpaAttention build it; the releases that pin transformers below 4.53
# (GENERATE_LOGITS_EVERY_POSITION's) run one of them; from 3.7.0 (< 4.56) not priced: the newest it allows, 4.55.4
# (and 4.54.1), splits q/k/v per image or window for a non-flash kernel (no mask) and takes logits_to_keep; 4.53.3 still
# builds a [1, 1, P, P] mask per block and all prefill logits (docs/cost-model.md).
VIT_SDPA_MASK = ("3.1.0", "3.7.0")  # [first, fixed)


# ms-swift 3.1 (the 3.1.1 wheel) starts its one vLLM engine on --vllm_device in training rank 0's process
# (trainers/rlhf_trainer/grpo_trainer.py GRPOTrainer.__init__: VllmEngine(..., device=fast_infer_device), 'auto' the
# GPU after the NPROC_PER_NODE training ranks; llm/infer/infer_engine/vllm_engine.py AsyncLLMEngine.from_engine_args)
# and its README's dependency table recommends vllm 0.7.2, whose single-GPU engine profiles the process's current
# GPU, not the engine's (uniproc_executor.py local_rank 0 -> worker.py Worker.init_device sets cuda:0;
# model_runner.py load_model measures the weights with DeviceMemoryProfiler() on the current GPU;
# Worker.determine_num_available_blocks: KV = total x gpu_memory_utilization - what that GPU's profile saw): the KV
# cache is util x total with the weights, activations and CUDA graphs on top (Plan.engine_kv_of_total, the class of
# TRL 0.14/0.15's vllm_device engine: frameworks/trl/versions.py). 3.2 on start their engines otherwise and recommend
# vLLM 0.7.3/0.8 (3.4.1's README), whose worker profiles its own GPU.
VLLM_DEVICE_KV_OF_TOTAL = ("3.1.0", "3.2.0")  # [first, fixed)


def vllm_device_kv_of_total(release: str | None, own_gpu: bool) -> bool:
    """Whether ms-swift ``release``'s vLLM engine on a GPU of its own sizes its KV cache as util x total
    (``VLLM_DEVICE_KV_OF_TOTAL``); None (TRL, Megatron): no."""
    return own_gpu and _in_span(release, VLLM_DEVICE_KV_OF_TOTAL)


def vit_sdpa_mask(release: str | None, sdpa: bool) -> bool:
    """Whether ms-swift ``release``'s ViT builds a dense SDPA mask (``VIT_SDPA_MASK``); None (TRL, Megatron): no."""
    return sdpa and _in_span(release, VIT_SDPA_MASK)


def generate_logits_every_position(release: str | None, model: ModelCard) -> bool:
    """Whether ms-swift ``release``'s transformers generate builds the prefill logits of every prompt position
    (``GENERATE_LOGITS_EVERY_POSITION``): a vision-language model before 3.7.0, and after it where the transformers
    allowed builds its forward without ``logits_to_keep`` (``forward_keeps_logits``). None (TRL, Megatron): no."""
    return model.has_vision and _vl_logits_span(release, GENERATE_LOGITS_EVERY_POSITION, model)


def _vl_logits_span(release: str | None, span: tuple[str, str], model: ModelCard) -> bool:
    """Whether ms-swift ``release`` is past ``span``'s first release and either before its fix or, from it, installs
    a forward of ``model`` without ``logits_to_keep`` (``forward_keeps_logits``)."""
    first = release_numbers(span[0])
    return bool(release and release_numbers(release) >= first
                and (_in_span(release, span) or not forward_keeps_logits(release, model)))


def _in_span(release: str | None, span: tuple[str, str]) -> bool:
    """Whether ms-swift ``release`` is in ``span`` ([first, fixed) releases); None (TRL, Megatron): no."""
    first, fixed = (release_numbers(r) for r in span)
    return bool(release and first <= release_numbers(release) < fixed)


def whole_sequence_logits(release: str | None, lora: bool, model: ModelCard | None = None) -> bool:
    """Whether ms-swift ``release``'s log-prob forward computes every position's logits (``WHOLE_SEQUENCE_LOGITS``):
    a LoRA policy before 3.4.1, a multimodal model before 3.7.0 and after it where the transformers allowed builds
    its forward without ``logits_to_keep`` (``WHOLE_SEQUENCE_LOGITS_MULTIMODAL``). None (TRL, Megatron): no."""
    return ((lora and _in_span(release, WHOLE_SEQUENCE_LOGITS))
            or (model is not None and model.has_vision
                and _vl_logits_span(release, WHOLE_SEQUENCE_LOGITS_MULTIMODAL, model)))


# ms-swift 3.3.0 to 4.1.x divide the response logits by the temperature out of place in their own log-prob forward
# (3.3.0 trainers/rlhf_trainer/grpo_trainer.py GRPOTrainer._get_per_token_logps ``logits = logits / self.temperature``;
# 4.0.4 and 4.1.0 rlhf_trainers/grpo_trainer.py ``_get_logps_via_local_forward`` ``logits[:, -(logits_to_keep + 1):-1,
# :] / self.temperature``); 4.2.0 divides in place (``logits.div_(self.temperature)``, as 4.6.0). 3.2.x's own forward
# does not divide (its hand-over to TRL's forward depends on the TRL installed: not priced).
TEMPERATURE_COPY = ("3.3.0", "4.2.0")  # [first, fixed)


def temperature_copy(release: str | None) -> bool:
    """Whether ms-swift ``release``'s log-prob forward divides the logits out of place (``TEMPERATURE_COPY``)."""
    return _in_span(release, TEMPERATURE_COPY)


# ms-swift 4.6.0's weight-sync bucket (rollout_mixin.py: int(os.environ.get('SWIFT_UPDATE_WEIGHTS_BUCKET_SIZE', 512)) MiB)
SYNC_BUCKET_BYTES = 512 * 2**20


def _sync_gather_groups(v: Mapping[str, Value], release: str | None, server: bool) -> int:
    """``Plan.sync_gather_groups`` of ms-swift ``release`` (``sync_gather``): 3.3-3.4 sync through TRL's loop only
    for a server they were given the host of (grpo_trainer.py ``is_external_vllm``). Priced where --move_model_batches
    sizes the groups; without it ``split_batches`` makes one group of every parameter, which every release but
    3.5-3.9's full-model loop gathers at once: not priced (docs/cost-model.md section 9.4)."""
    if not v.get("move_model_batches"):
        return 0
    kind = sync_gather(release, bool(v.get("lora_rank")), server and bool(v.get("server_host_given", True)))
    return SYNC_GATHER_GROUPS.get(kind, int(v["move_model_batches"]))


# qwen_vl_utils/vision_process.py (0.0.11): MAX_PIXELS = 16384 * 28 * 28, the image budget when the MAX_PIXELS
# environment variable is unset (ms-swift swift/llm/model/model/qwen.py patch_qwen_vl_utils reads it, and the other
# upper-case budgets, with get_env_args, falling back to the module's value)
QWEN_VL_MAX_PIXELS = 16384 * 28 * 28
# Images a sample holds: a property of the dataset, which the command does not show. One image a sample (the
# single-image GRPO datasets of ms-swift's multimodal examples, e.g. examples/train/grpo/internal/vllm_72b_4gpu.sh's
# clevr) is our default, stated in check's notes.
DEFAULT_IMAGES_PER_SAMPLE = 1


def vision_values(flat: Mapping[str, Any], model: ModelCard) -> dict[str, Value]:
    """The vision inputs of a vision-language model's run (``ModelCard.has_vision``; none for a text model):

    - ``vision_patches``: ViT patches a sequence feeds the tower. ms-swift resizes each image with qwen_vl_utils'
      smart_resize (vision_process.py: height and width rounded to multiples of IMAGE_FACTOR = patch_size x
      spatial_merge_size = 28, the area kept within MAX_PIXELS), so an image is at most MAX_PIXELS / 14^2 patches
      (transformers Qwen2VLImageProcessor: grid_h x grid_w patches of 14 x 14, temporal_patch_size 2 over a repeated
      frame: one time step) and (MAX_PIXELS / 28^2) LM tokens after the 2 x 2 merge (swift/llm/template/template/
      qwen.py Qwen2VLTemplate._encode: ``media_grid_thw.prod() // merge_size**2`` image tokens replace each image
      placeholder in input_ids). Those tokens sit inside the prompt's --max_length, so the LM's sequence is not
      longer; the patches are capped at merge^2 x max_length. Images a sample: ``DEFAULT_IMAGES_PER_SAMPLE``.
    - ``vit_frozen`` / ``aligner_frozen``: a full fine-tune's --freeze_vit / --freeze_aligner (TunerArguments,
      swift/llm/argument/tuner_args.py 3.1-3.12 and swift/arguments/tuner_args.py 4.0: both default True).
    - ``vit_sdpa_mask``: the ViT attends through SDPA (``VIT_SDPA_MASK``): --attn_impl sdpa, or unset (3.1.1
      swift/llm/model/utils.py AttnImpl.update_attn_impl leaves the config alone for None, and transformers picks
      SDPA for Qwen2.5-VL); 'flash_attn' (flash_attention_2, varlen: no mask) and 'eager' (not priced) do not."""
    if not model.has_vision:
        return {}
    raw = flat.get("MAX_PIXELS", flat.get("max_pixels"))
    pixels = QWEN_VL_MAX_PIXELS if raw in (None, "", "None") else _num("MAX_PIXELS", raw)
    side = model.vision_patch_size * model.vision_spatial_merge_size
    merge = model.vision_spatial_merge_size ** 2
    per_image = (pixels // (side * side)) * merge
    limit = merge * (_num("max_length", flat["max_length"]) if flat.get("max_length") not in (None, "None", "")
                     else DEFAULT_MAX_LENGTH)
    return {
        "vision_patches": min(limit, DEFAULT_IMAGES_PER_SAMPLE * per_image),
        "vit_frozen": _bool("freeze_vit", flat.get("freeze_vit", True)),
        "aligner_frozen": _bool("freeze_aligner", flat.get("freeze_aligner", True)),
        "vit_sdpa_mask": str(flat.get("attn_impl") or "sdpa").strip().lower() in ("sdpa", "none"),
    }


def make_plan(values: Mapping[str, Value], phase: str, model: ModelCard, gpu: GPU, megatron: bool,
              logits_impl: str | None = None, sync_bucket_bytes: float | None = SYNC_BUCKET_BYTES,
              sync_release: str | None = None, engine_release: str | None = None) -> Plan:
    """One phase's plan. ``logits_impl``: how the trainer's loss holds its logits (costmodel/constants.py
    LOGIT_BYTES): ms-swift's own by default; TRL 1.16 passes its fused lm_head ("trl-fused"). ``sync_bucket_bytes``:
    the flat bucket a rollout server receives whole at the weight sync (ms-swift's); None: not priced (TRL).
    ``sync_release``: the ms-swift release whose code runs: how its weight sync gathers the ZeRO-3 parameters
    (``sync_gather``) and whether its log-prob forward computes every position's logits (``whole_sequence_logits``);
    None: neither priced (TRL). ``engine_release``: the release whose --vllm_device engine sizes its KV cache
    (``vllm_device_kv_of_total``); None: ``sync_release``'s."""
    v = values
    engine_release = engine_release or sync_release
    world = int(v.get("gpus_per_node") or 1) * int(v.get("nnodes") or 1)
    gen, spg = rollout_layout(v, megatron)
    server = bool(v.get("use_vllm")) and bool(v.get("vllm_server"))
    # without --use_vllm (the HF path's default, RLHFArgumentsMixin use_vllm = False; TRL's too) the trained
    # model generates with transformers' generate: no engine anywhere
    engine = "vllm" if v.get("use_vllm") or megatron else "hf"
    engine_tp = int(v.get("server_tp") or 1) if server else int(v.get("vllm_tp") or 1)
    sleep = int(v.get("sleep_level") or 0)
    rollout = phase == Phase.ROLLOUT
    off_model, off_opt = bool(v.get("offload_model")), bool(v.get("offload_optimizer"))
    if not megatron and (engine != "vllm" or server):
        # the HF path offloads only around the colocated engine's generation: rollout_mixin.py _prepare_vllm sets
        # enable_offload in its colocate branch alone (4.6.0; 3.3.0: GRPOTrainer._fast_infer, with a sleep_level), so
        # with transformers' generate or a rollout server offload_model / offload_optimizer move nothing
        off_model = off_opt = False
    common = dict(
        model=model, gpu=gpu, n_gpus=world, gpus_per_node=int(v.get("gpus_per_node") or 1),
        prompt_len=int(v.get("max_length") or DEFAULT_MAX_LENGTH),
        response_len=_response_len(v, model),
        samples_per_step=gen, mini_batches=spg, group_size=max(1, int(v.get("num_generations") or 1)),
        train_token_budget=None, logprob_token_budget=None,
        entropy_chunking=False, entropy_checkpointing=False,
        need_ref=bool(v.get("kl_on")), need_critic=False, engine=engine, rollout_tp=engine_tp,
        # a rollout server's engine runs at the server's own share, not the trainer's (SERVER_GMU_PERMILLE); TRL's
        # values hold the share of the engine its mode runs in gmu_permille (trl/framework.py to_values)
        gpu_memory_utilization=int(v.get("server_gmu_permille" if server and "server_gmu_permille" in v else
                                         "gmu_permille") or 900) / 1000,
        # --sleep_level 1/2 frees the colocated engine's KV cache between rollouts (in the rollout, read only by the
        # weight sync's gather, which runs before the cache wakes: memory._rollout_terms)
        free_cache_engine=sleep >= 1, enforce_eager=False,
        max_num_seqs=256, max_num_batched_tokens=8192,  # vllm_max_num_seqs 256; vLLM's chunked-prefill default
        # --sleep_level 1 backs the colocated engine's weights up in host RAM (vLLM's sleep level 1)
        engine_sleep_host_weights=sleep == 1 and engine == "vllm" and not server,
        # ms-swift 3.1's vllm_device engine under vLLM 0.7.2 (vllm_device_kv_of_total): KV = util x total, the rest on
        # top, the CUDA graphs included
        **({"engine_kv_of_total": True, "engine_graphs_in_budget": False}
           if engine == "vllm" and vllm_device_kv_of_total(engine_release, server) else {}),
        colocated=not server, rollout_gpus=(int(v.get("server_tp") or 1) * int(v.get("server_dp") or 1)) if server
        else None, engine_colocated=engine != "hf" and not server, count_colocated_residents=True,
        # server mode: the trainer sends the weights in flat buckets of SWIFT_UPDATE_WEIGHTS_BUCKET_SIZE (512 MiB)
        # (rollout_mixin.py, enable_flattened_weight_sync default True; rlhf_trainers/utils.py
        # _create_parameter_buckets) and each server worker receives a bucket whole into a new tensor while its KV
        # cache stays allocated (pipelines/infer/rollout.py update_flattened_params: torch.empty(total_bytes))
        # (3.1's vllm_device engine lives in training rank 0's process and loads the merged state_dict's tensors
        # from that rank's GPU with load_weights, no bucket received: 3.1.1 grpo_trainer.py
        # _move_model_to_vllm_lmdeploy ``llm_model.load_weights(state_dict.items())``)
        engine_receives_whole_weights=(server and sync_bucket_bytes is not None
                                       and not vllm_device_kv_of_total(engine_release, server)),
        engine_sync_bucket_bytes=sync_bucket_bytes or 0.0,
        # the ZeRO-3 gather of the weight sync, as the release does it (sync_gather; memory.sync_gather_bytes)
        sync_gather_groups=_sync_gather_groups(v, sync_release, server) if engine == "vllm" else 0,
        # during rollout the policy (and reference) weights / optimizer are on the CPU with offload_model /
        # offload_optimizer; training loads them back
        actor_param_offload=off_model if rollout else False,
        actor_optimizer_offload=off_opt if rollout else False,
        ref_param_offload=off_model if rollout else False,
        # LoRA: no reference model; its log-probs come from the policy with the adapter disabled
        # (swift/arguments/rlhf_args.py RLHFArguments.__post_init__: ref_model only for tuner_type 'full';
        # swift/rlhf_trainers/grpo_trainer.py: ``null_ref_context`` when ref_model is None)
        lora_params=model.lora_params(int(v.get("lora_rank") or 0), "q_v" if v.get("lora_qv") else "all-linear")
        if v.get("lora_rank") else 0,
        ref_in_actor=bool(v.get("lora_rank")),
        # the adapter's dtype: fp32 (peft >= 0.12 get_peft_model upcasts a bf16/fp16 adapter, autocast_adapter_dtype
        # True: tuners/tuners_utils.py BaseTuner._cast_adapter_dtype; ms-swift's pipelines/train/tuner.py
        # prepare_adapter calls Swift.prepare_model -> peft's get_peft_model with the default), or bf16 where the
        # framework casts it back (``lora_bf16``: TRL >= 0.26 on a quantized base); a DDP trainer keeps its gradients
        # and AdamW moments in it (memory._lora_states)
        lora_dtype_bytes=(C.BF16 if v.get("lora_bf16") else C.FP32) if v.get("lora_rank") else 0,
        # --optim adamw_8bit / paged_adamw_8bit (transformers' TrainingArguments): bitsandbytes' 8-bit moments
        optimizer_8bit=bool(v.get("optim_8bit")),
        # a vision-language model's image patches and frozen parts (vision_values; a text model has neither)
        vision_patches=int(v.get("vision_patches") or 0),
        vision_tower_frozen=bool(v.get("vit_frozen")), vision_merger_frozen=bool(v.get("aligner_frozen")),
        vision_sdpa_mask=vit_sdpa_mask(sync_release, bool(v.get("vit_sdpa_mask"))),
    )
    # the memory verdict does not judge ms-swift at the data's lengths (Plan.data_lengths_judged): its GRPO
    # padding_free packs the decoder's tokens but re-pads the last hidden states to the micro batch's longest
    # sequence before the LM head (3.7.2 trainers/rlhf_trainer/grpo_trainer.py GRPOTrainer.padding_free_context,
    # _padding_free_output_hook: torch.stack of each sequence zero-padded to max(seq_lengths)), so its logits are
    # n x the longest, not the packed sum; and 3.7.2 has no Megatron GRPO trainer to read (megatron/trainers: the
    # base and DPO trainers only)
    common["data_lengths_judged"] = False
    if megatron:
        tp, pp, cp = int(v.get("tp") or 1), int(v.get("pp") or 1), int(v.get("cp") or 1)
        micro = int(v.get("micro_batch_size") or 1)
        recompute = RECOMPUTE.get(int(v.get("recompute") if v.get("recompute") is not None else 1), "selective")
        permille = int(v.get("cpu_optimizer_permille") or 0)
        return Plan.of(
            **common, train_micro=micro, logprob_micro=micro, sp=1,
            shard_degree=max(1, world // max(1, tp * pp * cp)), zero_stage=0, grad_ckpt=recompute == "full",
            param_offload=False, optimizer_offload=phase == Phase.REF, remove_padding=True, critic_micro=micro,
            tp=tp, pp=pp, cp=cp, ep=int(v.get("ep") or 1), etp=int(v.get("etp") or tp), vpp=int(v.get("vpp") or 1),
            recompute=recompute, sequence_parallel=False, distributed_optimizer=True, trainer="megatron",
            recompute_modules=recompute_modules(int(v.get("recompute_modules", DEFAULT_RECOMPUTE_MODULES))),
            logits_impl="megatron",
            cpu_optimizer=permille > 0, optimizer_offload_fraction=permille / 1000,
        )
    micro = int(v.get("per_device_train_batch_size") or 1)
    sp = int(v.get("sequence_parallel_size") or 1)
    stage, ds_off = int(v.get("ds_stage") if v.get("ds_stage") is not None else -1), bool(v.get("ds_offload"))
    # the params move at stage 3 where DeepSpeed's offload_param does: ms-swift's zeroN_offload presets set both
    # offload_optimizer and offload_param (no ds_param_offload: both), an accelerate config each on its own
    # (TRL: offload_param_device, trl/cost.py cost_values; an optimizer-only offload keeps every param on the GPU)
    param_off = ds_off and stage >= 3 and bool(v.get("ds_param_offload", True))
    # ZeRO-Offload keeps the actor's optimizer (and, at stage 3 with offload_param, its params) on the CPU in every
    # phase
    common["actor_param_offload"] = common["actor_param_offload"] or param_off
    # ... and the reference's params at stage 3: it is prepared with a copy of the trainer's DeepSpeed config, stage 3
    # and offload_param kept (3.12.1 trainers/rlhf_trainer/rlhf_mixin.py -> trl 0.24 models/utils.py
    # prepare_deepspeed: deepcopy(deepspeed_plugin.deepspeed_config), only a stage below 3 is set to 0; ms-swift's
    # own prepare_deepspeed the same; TRL's GRPOTrainer calls trl's, trl 0.24 grpo_trainer.py), and DeepSpeed builds a ZeRO-3 model without an optimizer as
    # DeepSpeedZeRoOffload(offload_param_config=...) (0.18.4 runtime/engine.py _configure_zero_optimizer), so its
    # partitions stay on the CPU between its passes and stream in during them
    common["ref_param_offload"] = common["ref_param_offload"] or param_off
    common["actor_optimizer_offload"] = common["actor_optimizer_offload"] or ds_off
    return Plan.of(
        **common, train_micro=micro, logprob_micro=micro, sp=sp, shard_degree=world,
        zero_stage=max(0, stage), grad_ckpt=bool(v.get("grad_ckpt", True)),
        param_offload=param_off, optimizer_offload=ds_off or phase == Phase.REF,
        remove_padding=bool(v.get("padding_free")), critic_micro=micro,
        trainer=("fp32" if v.get("weights_fp32") else "bf16") if stage < 0 else "deepspeed",
        offload_during_compute=True, model_dtype_bytes=4 if v.get("weights_fp32") and stage < 0 else 2,
        # transformers' Trainer frees the gradients after each optimizer step: one micro batch per step starts its
        # backward without any (Plan.no_grads_at_backward)
        no_grads_at_backward=int(v.get("gradient_accumulation_steps") or 1) <= 1,
        load_dtype_bytes=4 if v.get("weights_fp32") else 2,
        # a TRL config of a release before 1.0 (``materialized_logits``) computes its log-probs as ms-swift's pinned
        # trl 0.29 does, from the whole logits tensor: 1.16's fused lm head came later
        logits_impl=(logits_impl if logits_impl and not v.get("materialized_logits") else
                     "swift-ddp" if stage < 0 else "swift-deepspeed"), logits_response_only=True,
        logits_whole_sequence=whole_sequence_logits(sync_release, bool(v.get("lora_rank")), model),
        generate_logits_every_position=generate_logits_every_position(sync_release, model),
        # ms-swift's own forward by its release; TRL's by the running release (trl/cost.py cost_values)
        logits_temperature_copy=(temperature_copy(sync_release) if sync_release
                                 else bool(v.get("temperature_copy"))),
        # Liger's GRPO loss replaces the update's logits only; the old and reference log-probs keep them
        liger_grpo_loss=bool(v.get("liger_loss")) and phase == Phase.ACTOR_UPDATE,
    )


_HW = ["gpus_per_node", "nnodes", "max_length", "max_completion_length", "use_vllm", "vllm_server", "vllm_tp",
       "server_tp", "server_dp", "gmu_permille", "server_gmu_permille", "sleep_level", "offload_model", "offload_optimizer", "kl_on",
       "lora_rank", "lora_qv", "weights_fp32", "materialized_logits", "multi_turn_len", "vision_patches", "vit_frozen",
       "aligner_frozen", "vit_sdpa_mask"]
# num_generations: the rollout waits for the slowest prompt's group of completions (Plan.group_size, lengths.py
# straggler_factor), so the rollout's time reads it wherever the batch is searched
_BATCH_HF = ["per_device_train_batch_size", "gradient_accumulation_steps", "generation_batch_size",
             "steps_per_generation", "num_generations"]
_HF = ["sequence_parallel_size", "padding_free", "ds_stage", "ds_offload", "ds_param_offload", "grad_ckpt", "liger_loss",
       "temperature_copy", "lora_bf16", "optim_8bit"]
_BATCH_MG = ["global_batch_size", "generation_batch_size", "steps_per_generation", "num_generations"]
_MG = ["micro_batch_size", "tp", "pp", "cp", "ep", "etp", "vpp", "recompute", "recompute_modules",
       "cpu_optimizer_permille"]
TIME_PHASES = (Phase.ROLLOUT, Phase.OLD_LOG_PROB, Phase.REF, Phase.ACTOR_UPDATE, Phase.WEIGHT_SYNC, Phase.OFFLOAD)


def _inputs(megatron: bool) -> tuple[dict, dict]:
    if megatron:
        mem = _HW + _MG
        time = mem + _BATCH_MG
    else:
        mem = _HW + _HF + ["per_device_train_batch_size"]
        time = mem + _BATCH_HF
    # the gradient steps move memory only in the update, where a plain-DDP trainer frees its gradients after each
    # step (make_plan no_grads_at_backward)
    update = mem if megatron else mem + ["gradient_accumulation_steps"]
    return ({Phase.ROLLOUT: mem, Phase.OLD_LOG_PROB: mem, Phase.REF: mem, Phase.ACTOR_UPDATE: update},
            {p: time for p in TIME_PHASES})


def unread(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    out: set = set()
    if True not in domains.get("vllm_server", [False]):
        out |= {"server_tp", "server_dp", "server_gmu_permille"}
    if False not in domains.get("vllm_server", [False]):  # the trainer's share sizes a colocated engine only
        out |= {"gmu_permille"}
    if False not in domains.get("vllm_server", [False]) and phase != Phase.ROLLOUT:
        out |= {"vllm_tp"}
    if kind == "mem" and -1 not in domains.get("ds_stage", [-1]):
        # no plain-DDP trainer among the candidates: the update's gradient steps move no memory (memory.py reads
        # no_grads_at_backward for DDP trainers alone)
        out |= {"gradient_accumulation_steps"}
    if kind == "time" and phase == Phase.ROLLOUT:  # vLLM's time reads the engine, not the trainer
        out |= {"sleep_level", "offload_model", "offload_optimizer", "ds_stage", "ds_offload", "grad_ckpt",
                "recompute", "recompute_modules", "cpu_optimizer_permille", "padding_free", "sequence_parallel_size",
                "kl_on", "tp", "pp", "cp", "ep", "etp", "vpp", "micro_batch_size"}
    elif kind == "time":  # training time reads the dense layout and batches, not what stays resident
        out |= {"gmu_permille", "server_gmu_permille", "sleep_level", "offload_model", "offload_optimizer",
                "cpu_optimizer_permille",
                "recompute_modules"}
        if phase != Phase.ACTOR_UPDATE:  # the update's gradient reduction reads the experts' split
            out |= {"ep", "etp"}
        if phase != Phase.WEIGHT_SYNC:
            out |= {"vllm_tp", "server_tp", "server_dp"}
    return out


def save_values(flat: Mapping[str, Any]) -> dict[str, Value]:
    """Whether the run saves checkpoints (--save_strategy, TrainingArguments' default "steps") and with them
    DeepSpeed's optimizer states (--save_only_model, default False)."""
    out: dict[str, Value] = {}
    if "save_strategy" in flat:
        out["saves"] = str(flat["save_strategy"]).lower() != "no"
    if "save_only_model" in flat:
        out["save_optimizer"] = not flag_bool("save_only_model", flat["save_only_model"])
    return out


def iteration_values(flat: Mapping[str, Any]) -> dict[str, Value]:
    """``--num_iterations``, read alike for TRL and ms-swift (TRL's GRPOConfig from 0.16.0, default 1, which ms-swift's
    GRPO arguments extend; their parsers take an int): training passes per generation, at least 1 (0 trains once, as
    ``generation_reuse`` floors it). Unset: nothing (the defaults' 1)."""
    raw = flat.get("num_iterations")
    if raw in (None, "", "None", "none"):
        return {}
    value = whole_number("num_iterations", raw, "--num_iterations")
    if value < 0:
        raise InputError("num_iterations", f"{value} must be a non-negative whole number.",
                         "set --num_iterations to 1 or more.")
    return {"num_iterations": max(1, value)}


def host_layout(v: Mapping[str, Value], model: ModelCard, trl: bool = False) -> HostLayout:
    """A transformers Trainer's checkpoint save on DeepSpeed, for the host-memory estimate (ms-swift's trainers and
    TRL's GRPOTrainer save through it). Trainer.save_model asks accelerate for the state dict on every rank
    (accelerator.py get_state_dict, read at accelerate 1.6.0; transformers 4.57.3 trainer.py save_model): below
    ZeRO-3 each rank clones the whole model's state dict to the CPU (deepspeed.checkpoint.utils
    clone_tensors_for_torch_save, device default CPU), frozen base weights included; at ZeRO-3 rank 0 gathers the
    16-bit model on the CPU (engine.py _zero3_consolidated_16bit_state_dict; ms-swift's zero3 presets set
    stage3_gather_16bit_weights_on_model_save), which ms-swift limits to the trained parameters of an adapter
    (trainers/mixin.py _fix_zero3_gather_all_parameters: exclude_frozen_parameters for PeftModel, ms-swift 4.6.0).
    Then DeepSpeed's own checkpoint (the ZeRO partition, HostLayout.save_zero_partition) unless save_only_model.
    Not priced: DDP saves (rank 0 writes the GPU state dict shard by shard) and FSDP (TRL's accelerate FSDP)."""
    stage = int(v.get("ds_stage") if v.get("ds_stage") is not None else -1)
    if not v.get("saves", True) or stage < 0 or v.get("fsdp"):
        return HostLayout()
    whole = (C.FP32 if v.get("weights_fp32") else C.BF16) * model_consts(model).params
    gathered = 0.0 if stage < 3 or (v.get("lora_rank") and not trl) else whole
    return HostLayout(save_bytes_per_gpu=whole if stage < 3 else 0.0, save_rank0_bytes=gathered,
                      save_zero_partition=bool(v.get("save_optimizer", True)))


def pipeline(values: Mapping[str, Value]) -> list[tuple[str, tuple[str, ...]]]:
    """``--async_generate`` (server mode only): the trainer submits the next batch's generation to the `swift rollout`
    server and trains on the one before (rollout_mixin.py ``_prepare_async_generate``, one batch ahead), so a step
    takes the slower of the two, plus the weight sync."""
    if not (values.get("use_vllm") and values.get("vllm_server") and values.get("async_generate")):
        return []
    return TWO_POOLS


def cost_spec(model: ModelCard, gpu: GPU, megatron: bool, bool_names: frozenset,
              optional: frozenset = frozenset(), framework: str | None = None, release: str | None = None,
              engine_release: str | None = None) -> CostSpec:
    """ms-swift's cost terms; ``framework`` names another trainer built on TRL's GRPOTrainer that reuses
    them with its own values (TRL itself: frameworks/trl/cost.py); ``release`` the ms-swift release whose code runs
    (its weight-sync gather, ``sync_gather``); ``engine_release`` the one whose --vllm_device engine is priced
    (make_plan), where it is another."""
    sync_release = None if framework == "trl" or megatron else release
    engine_release = None if framework == "trl" or megatron else engine_release
    mem, time = _inputs(megatron)
    spec = CostSpec(
        framework=framework or ("swift-megatron" if megatron else "swift"),
        plan=lambda values, phase: make_plan(values, phase, model, gpu, megatron,
                                             "trl-fused" if framework == "trl" else None,
                                             None if framework == "trl" else SYNC_BUCKET_BYTES, sync_release,
                                             engine_release),
        memory_inputs=mem,
        time_inputs=time,
        phases_run=phases_run if megatron or framework == "trl" else hf_phases_run(release),
        samples=lambda values: rollout_layout(values, megatron)[0],
        bool_names=bool_names | {"ds_offload", "ds_param_offload", "offload_model", "offload_optimizer", "grad_ckpt",
                                 "kl_on", "lora_qv", "lora_bf16", "optim_8bit", "weights_fp32", "materialized_logits",
                                 "saves", "save_optimizer", "fsdp",
                                 "liger_loss", "temperature_copy", "vit_frozen", "aligner_frozen", "vit_sdpa_mask"},
        unread=unread,
        optional=optional,
        pipeline=pipeline,
        concurrency_inputs=("async_generate",),
        host_layout=None if megatron else (lambda values: host_layout(values, model, framework == "trl")),
        # Megatron GRPO refuses num_iterations > 1 (swift_megatron.args.num_iterations_unsupported)
        generation_reuse=None if megatron else generation_reuse,
        gated_phases=({Phase.OLD_LOG_PROB: OLD_LOG_PROB_GATE}
                      if not megatron and framework != "trl" and old_log_prob_gated(release) else {}),
    )
    # ms-swift's own bitsandbytes base (quantized_load); TRL wraps its spec itself (trl/framework.py)
    return spec if megatron or framework else quantized_cost_spec(spec)
