"""TRL 1.16.0 GRPO's cost-model inputs: its flags and accelerate's DeepSpeed/FSDP settings, read into the values
ms-swift's terms read (``frameworks/swift/cost.py``: ms-swift's GRPO trainer is TRL's, the same phases and
residents), with TRL's own defaults.

- vLLM: ``vllm_gpu_memory_utilization`` 0.3 (GRPOConfig default); ``vllm_enable_sleep_mode`` puts the colocated
  engine to sleep at level 2 between rollouts (generation/vllm_generation.py ``VLLMGeneration._init_vllm``:
  ``self.llm.sleep(level=2)``).
- The reference model exists only with ``beta != 0`` (GRPOConfig default 0.0; GRPOTrainer.__init__ builds no
  ``ref_model`` when beta is 0) and without PEFT (the adapter is disabled instead).
- PEFT (``--use_peft``, TRL's ModelConfig): LoRA of ``--lora_r`` (default 16) on ``--lora_target_modules``, or on
  peft's default targets (query and value projections) when none are given (trl/trainer/utils.py
  ``get_peft_config``).
- accelerate: DeepSpeed ZeRO stage and offload from ``--zero_stage`` / ``--offload_optimizer_device`` /
  ``--offload_param_device`` or the config file's ``deepspeed_config``; FSDP (``distributed_type: FSDP``) is
  counted as ZeRO-3 (full sharding of params, grads and optimizer states), with ``fsdp_offload_params`` as
  ZeRO-3 offload.
- Gradient checkpointing is on unless ``--gradient_checkpointing false`` (TRL's base config default True; GRPOConfig
  sets it True from 0.22.0, so a release pack before that, ``versions.Release.grad_ckpt``, prices it off unless set).
- Weights' dtype: TRL loads the trained model in fp32 unless told (trl/trainer/model_config.py ModelConfig ``dtype``
  default "float32"; GRPOTrainer.__init__: "If `dtype` is not specified in `args.model_init_kwargs`, it defaults to
  `float32`"; before 1.0 ModelConfig ``torch_dtype`` default None, which transformers < 5 loads as fp32).
  ``--dtype`` / ``--torch_dtype`` bfloat16, float16 or auto (the checkpoint's own, bf16 for every card we ship) load
  it in 16 bits. Without DeepSpeed or FSDP (plain DDP) the fp32 model trains with fp32 gradients and AdamW moments
  (``Plan.trainer = "fp32"``); DeepSpeed casts the module to bf16 itself (the ZeRO byte counts are unchanged).
- LoRA adapter dtype: fp32. GRPOTrainer wraps the model with peft's ``get_peft_model`` (0.14-0.19 directly, 0.22-0.25
  through trl/models/utils.py ``prepare_peft_model``, 0.26 on directly again), whose default
  ``autocast_adapter_dtype=True`` (peft >= 0.12, tuners/tuners_utils.py ``BaseTuner._cast_adapter_dtype``) upcasts a
  bf16/fp16 adapter to fp32; without DeepSpeed its gradients and AdamW moments are fp32 too (16 B a trainable
  parameter). From 0.26 a quantized base's trainable parameters are cast back to bf16 (GRPOTrainer.__init__: "When
  using QLoRA, the PEFT adapter weights are converted to bf16", ``lora_bf16``, 8 B with bf16 AdamW moments); 1.16.0
  also passes ``autocast_adapter_dtype=False`` under ZeRO-3, where DeepSpeed's bf16 counts apply anyway.
- Quantized base (QLoRA): ``--load_in_4bit`` / ``--load_in_8bit`` (TRL's ModelConfig; trl/scripts/grpo.py passes
  ``get_quantization_config``'s BitsAndBytesConfig to from_pretrained) load the decoder's linear weights as bitsandbytes
  NF4 (``--use_bnb_nested_quant``: with double quantization) or LLM.int8; with ``--use_peft`` the frozen base is priced
  at those bytes per weight (``Plan.base_weight_bytes``, frameworks/bnb.py ``quantized_cost_spec``), its embedding, lm_head and norms in the load dtype (float16
  before 1.0 when no dtype is given: transformers' bitsandbytes quantizer's default). Without
  PEFT the run cannot train (transformers refuses to fine-tune a purely quantized model) and the base is priced as given.
- Prompt length: TRL 1.16 has no prompt limit of its own; ``--max_prompt_length`` (older TRL's, and open-r1's
  recipes) is read when given, else ``vllm_max_model_length - max_completion_length`` (or the server line's
  ``--max-model-len``, ``server.max_model_len``, less it), else the scenario's prompt length (512). A release that
  cuts prompts at max_prompt_length's default (0.14 to 0.25: ``versions.PROMPT_CUT_FROM``) prices at most that cut
  where the config leaves the field unset, whichever pack judges it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from ...release_numbers import release_numbers
from ...costmodel.phase import Phase
from ...costmodel.tables import CostSpec
from ...errors import InputError
from ...rules.base import Value
from ..overrides import flag_bool, memory_share_permille, whole_number
from ..swift.cost import OLD_LOG_PROB_GATE, iteration_values, optim_8bit, rollout_layout, save_values
from .rules import REMOVED_FIELDS
from .liger import liger_loss
from .versions import RELEASES, Release, lora_bf16_on_quantized, prompt_cut, prompt_field_ignored, temperature_copy

DEFAULT_PROMPT = 512

TRL_COST_DEFAULTS: dict[str, Value] = {
    "max_length": DEFAULT_PROMPT, "max_completion_length": 512, "ds_stage": -1, "ds_offload": False,
    "ds_param_offload": False,
    "gmu_permille": 300, "sleep_level": 0, "offload_model": False, "offload_optimizer": False, "grad_ckpt": True,
    "lora_rank": 0, "lora_qv": False, "lora_bf16": False, "optim_8bit": False, "sequence_parallel_size": 1,
    "padding_free": False, "weights_fp32": True,
    "materialized_logits": False, "temperature_copy": False,
    "liger_loss": False,  # the update's loss is Liger's chunked GRPO loss (liger.liger_loss)
    # GRPOConfig's save_strategy "steps" and save_only_model False (swift/cost.py host_layout), accelerate's FSDP
    "saves": True, "save_optimizer": True, "fsdp": False,
    # GRPOConfig num_iterations (default 1, from 0.16.0): training passes per generation (swift/cost.py
    # generation_reuse)
    "num_iterations": 1,
    # bitsandbytes loading (ModelConfig load_in_4bit / load_in_8bit / use_bnb_nested_quant; 16: not quantized)
    "load_bits": 16, "nested_quant": False,
    # GRPOConfig vllm_importance_sampling_correction (0.23.0 on, default True): with vLLM the old log-probs are
    # computed every generation (versions.OLD_LOG_PROB_FROM)
    "vllm_is_correction": True,
    # TRL's vLLM engines load the 16-bit checkpoint (no quantization passed: generation/vllm_generation.py)
    "engine_load_bits": 16,
}
HALF_DTYPES = ("bfloat16", "float16", "bf16", "fp16", "half", "auto")


def _count(key: str, raw: Any) -> int:
    """A non-negative whole number (``overrides.whole_number``: range and type checked there)."""
    value = whole_number(key, raw, f"--{key}")
    if value < 0:
        raise InputError(key, f"{value} must be a non-negative whole number.", f"set --{key} to a non-negative number.")
    return value


def cost_values(flat: Mapping[str, Any], accel: Mapping[str, Any],
                release: Release = RELEASES["1.16.0"], running: str | None = None) -> dict[str, Value]:
    """The cost-model inputs of a TRL command (``flat``: GRPOConfig flags, ``accel``: accelerate's settings) with
    ``release``'s defaults (max_completion_length, how log-probs are computed); ``running``: the release whose code
    runs it, where a neighbour's pack judges it (None: ``release``), which decides the flag of Liger's loss."""
    out = dict(TRL_COST_DEFAULTS, gmu_permille=release.gmu_permille, grad_ckpt=release.grad_ckpt)
    completion = _count("max_completion_length", flat.get("max_completion_length", release.completion_length))
    out["max_completion_length"] = max(1, completion)
    if (flat.get("max_prompt_length") not in (None, "None", "none", "")
            and not prompt_field_ignored(running or release.version)):
        out["max_length"] = max(1, _count("max_prompt_length", flat["max_prompt_length"]))
    elif flat.get("vllm_max_model_length") not in (None, "None", "none", ""):
        out["max_length"] = max(1, _count("vllm_max_model_length", flat["vllm_max_model_length"]) - completion)
    elif flat.get("server.max_model_len") not in (None, "None", "none", ""):  # a `trl vllm-serve` line's
        out["max_length"] = max(1, _count("server.max_model_len", flat["server.max_model_len"]) - completion)
    cut = prompt_cut(running or release.version)
    if cut is not None and "max_prompt_length" not in flat:
        # the release the config runs cuts prompts at GRPOConfig's default max_prompt_length (versions.PROMPT_CUT_FROM):
        # the engine's length flags bound them, the cut decides (0.23.1 judged by 0.29.1's pack, which has no cut)
        out["max_length"] = min(int(out["max_length"]), cut)
    if "vllm_gpu_memory_utilization" in flat:
        out["gmu_permille"] = memory_share_permille("vllm_gpu_memory_utilization", flat["vllm_gpu_memory_utilization"],
                                                    "write --vllm_gpu_memory_utilization 0.3 (vLLM's memory share).")
    if flag_bool("vllm_enable_sleep_mode", flat.get("vllm_enable_sleep_mode", False)):
        out["sleep_level"] = 2
    if "gradient_checkpointing" in flat:
        out["grad_ckpt"] = flag_bool("gradient_checkpointing", flat["gradient_checkpointing"])
    out.update(iteration_values(flat))
    if "vllm_importance_sampling_correction" in flat:
        out["vllm_is_correction"] = flag_bool("vllm_importance_sampling_correction",
                                              flat["vllm_importance_sampling_correction"])
    if flag_bool("use_peft", flat.get("use_peft", False)):
        out["lora_rank"] = max(1, _count("lora_r", flat.get("lora_r", 16)))
        targets = flat.get("lora_target_modules")
        out["lora_qv"] = targets in (None, "", "None", "none")
    # a config with fields 1.16.0 removed was written for TRL < 1.0, whose GRPOTrainer computed log-probs from the whole
    # logits tensor (selective_log_softmax, as ms-swift's pinned trl 0.29): priced so, not with 1.16's fused lm head
    # (a release before 1.0 named with --framework trl==VERSION computes them so whatever its fields)
    out["materialized_logits"] = not release.fused_logits or any(k in flat for k in REMOVED_FIELDS)
    out["temperature_copy"] = temperature_copy(running or release.version)
    out["liger_loss"] = liger_loss(flat, running or release.version)
    if flag_bool("load_in_4bit", flat.get("load_in_4bit", False)):
        out["load_bits"] = 4
        out["nested_quant"] = flag_bool("use_bnb_nested_quant", flat.get("use_bnb_nested_quant", False))
    elif flag_bool("load_in_8bit", flat.get("load_in_8bit", False)):
        out["load_bits"] = 8
    # the adapter over a quantized base is cast to bf16 from 0.26 (``LORA_BF16_ON_QUANTIZED_FROM``); else peft's fp32
    out["lora_bf16"] = int(out["load_bits"]) < 16 and lora_bf16_on_quantized(running or release.version)
    out["optim_8bit"] = optim_8bit(flat)  # --optim adamw_8bit / paged_adamw_8bit (swift/cost.py OPTIM_8BIT)
    out.update(save_values(flat))
    dtype = flat.get("dtype", flat.get("torch_dtype"))
    init = flat.get("model_init_kwargs")
    if isinstance(init, dict):
        dtype = init.get("dtype", init.get("torch_dtype", dtype))
    if dtype not in (None, "None", "none", ""):
        out["weights_fp32"] = str(dtype).lower().removeprefix("torch.") not in HALF_DTYPES
    elif int(out["load_bits"]) < 16 and release.version.startswith("0."):
        # TRL < 1.0 passes no dtype (ModelConfig dtype / torch_dtype default None), and transformers' bitsandbytes
        # quantizer then loads the unquantized modules in float16 (quantizers/quantizer_bnb_4bit.py
        # ``update_torch_dtype``: "Overriding torch_dtype=None with `torch_dtype=torch.float16`"); TRL >= 1.0 passes
        # ModelConfig's "float32"
        out["weights_fp32"] = False
    dist = str(accel.get("distributed_type") or "").upper()
    if dist == "DEEPSPEED" or accel.get("zero_stage") is not None:
        out["ds_stage"] = _count("zero_stage", accel.get("zero_stage", 2))
        moved = {k: str(accel.get(k) or "none").lower() not in ("none", "")
                 for k in ("offload_optimizer_device", "offload_param_device")}
        out["ds_offload"] = any(moved.values())
        # each device on its own: accelerate writes offload_optimizer.device and offload_param.device as given,
        # "none" by default (utils/dataclasses.py DeepSpeedPlugin __post_init__, 1.6.0), which DeepSpeed reads as no
        # offload of that state; TRL's reference is prepared with a copy of that config (trl 0.24 models/utils.py
        # prepare_deepspeed: deepcopy of deepspeed_config), so an optimizer-only offload keeps the policy's and the
        # reference's params on the GPU
        out["ds_param_offload"] = moved["offload_param_device"]
    elif dist == "FSDP":
        out["ds_stage"], out["fsdp"] = 3, True
        out["ds_offload"] = flag_bool("fsdp_offload_params", accel.get("fsdp_offload_params", False))
        out["ds_param_offload"] = out["ds_offload"]  # FSDP's CPUOffload moves the params (and so their states)
    return out


def _completions(values: Mapping[str, Value]) -> dict[str, Value]:
    """TRL 0.14.0's values with ``per_device_train_batch_size`` in completions (it counts prompts there: each GPU
    generates num_generations completions per prompt and trains on them in one micro batch, grpo_trainer.py
    ``GRPOTrainer.compute_loss``)."""
    out = dict(values)
    out["per_device_train_batch_size"] = int(values.get("per_device_train_batch_size") or 1) * int(
        values.get("num_generations") or 1)
    return out


def _engine_of_release(plan_of: Any, release: Release) -> Any:
    """``plan_of`` with the rollout engine the release's vLLM ran: for 0.14.0 and 0.15.2 (``Release.engine_kv_of_total``)
    the vllm_device engine's KV cache is util x total with its weights, profile activations and CUDA graphs on top
    (vLLM 0.7.0-0.7.2 profile the process's current GPU, training rank 0's cuda:0: executor/uniproc_executor.py
    ``UniProcExecutor._init_executor`` local_rank 0, worker/worker.py ``Worker.init_device``,
    worker/model_runner.py ``GPUModelRunnerBase.load_model`` ``DeviceMemoryProfiler()``; TRL #2788 "the model size
    would always be 0"; vLLM 0.7.x captures CUDA graphs after sizing the KV cache). A release whose every
    gradient-accumulation micro step generates (``Release.generate_per_micro_step``, 0.14-0.16) calls its engines once a
    micro step (``_micro_step_call``), and one whose vLLM is older than 0.8 (``Release.vllm_v0``) runs the V0 engine."""
    if release.vllm_graphs_in_budget and not (release.engine_kv_of_total or release.ref_in_loss
                                               or release.generate_per_micro_step or release.vllm_v0):
        return plan_of

    def plan(values: Mapping[str, Any], phase: str) -> Any:
        p = plan_of(values, phase)
        if not release.vllm_graphs_in_budget:
            p = dataclasses.replace(p, engine_graphs_in_budget=False)
        if release.ref_in_loss:
            # the reference pass inside compute_loss (``Release.ref_in_loss``): beside the policy's graph, and with
            # vLLM under ZeRO-3 beside the whole gathered model of the weight load
            held = bool(values.get("use_vllm")) and int(values.get("ds_stage", -1)) >= 3
            p = dataclasses.replace(p, ref_beside_policy_graph=True, held_gathered_model=held)
        if release.engine_kv_of_total and p.engine == "vllm" and not p.colocated:
            p = dataclasses.replace(p, engine_kv_of_total=True, engine_graphs_in_budget=False)
        if p.engine == "vllm":
            p = dataclasses.replace(p, engine_v0=release.vllm_v0,
                                    engine_call_samples=_micro_step_call(p) if release.generate_per_micro_step else None)
        elif p.engine == "hf" and release.generate_per_micro_step:
            # without vLLM each rank's model generates its own micro batch, once a micro step
            # (0.14.0 compute_loss: unwrapped_model.generate(**prompt_inputs); 0.15.2/0.16.1 _prepare_inputs)
            p = dataclasses.replace(p, hf_generate_micro=max(1, p.samples_per_step // max(1, p.mini_batches)
                                                             // max(1, p.n_gpus)))
        return p
    return plan


def _micro_step_call(plan: Any) -> int:
    """Completions each engine gets per generate call where every gradient-accumulation micro step generates its own
    (``Release.generate_per_micro_step``): the step's completions over its micro steps (``Plan.mini_batches``, the
    accumulation steps: swift/cost.py rollout_layout), split over the engines."""
    engines = max(1, int(plan.rollout_gpus or plan.n_gpus) // max(1, plan.rollout_tp))
    per_micro = max(1, plan.samples_per_step // max(1, plan.mini_batches))
    return max(1, -(-per_micro // engines))


def _deepspeed_of_release(host_layout: Any, release: Release) -> Any:
    """``host_layout`` with the DeepSpeed config TRL runs: accelerate generates it from its DeepSpeed plugin's settings
    (``zero_stage``, ``offload_optimizer_device``, ``offload_param_device``), with no ``pin_memory`` (accelerate 1.6.0
    and 1.10.1 utils/dataclasses.py DeepSpeedPlugin.__post_init__), so DeepSpeed's default decides it, on the oldest
    DeepSpeed the release accepts (``Release.deepspeed``)."""
    if host_layout is None:
        return None

    def layout(values: Mapping[str, Any]) -> Any:
        return dataclasses.replace(host_layout(values), ds_offload_pin_memory=None,
                                   deepspeed=release_numbers(release.deepspeed))
    return layout


def old_log_prob_runs(values: Mapping[str, Value], rule: str) -> bool:
    """Whether a step under ``rule`` (``versions.OLD_LOG_PROB_FROM``, by release) runs the old log-prob forward for
    ``values``: ``generate_every`` is steps_per_generation x num_iterations (the generation batch as
    ``swift.cost.rollout_layout`` resolves it), the importance-sampling correction only with vLLM."""
    if rule == "always":
        return True
    if rule == "never":
        return False
    iterations = max(1, int(values.get("num_iterations") or 1))
    accumulation = max(1, int(values.get("gradient_accumulation_steps") or 1))
    steps = rollout_layout(values, False)[1]
    if rule == "iterations":
        return iterations > 1
    if rule == "iterations_or_spg":
        return iterations > 1 or steps > accumulation
    misaligned = accumulation % (steps * iterations) != 0
    if rule == "misaligned":
        return misaligned
    return misaligned or (bool(values.get("use_vllm")) and bool(values.get("vllm_is_correction", True)))


def _phases_of_release(phases_run: Any, rule: str) -> Any:
    """``phases_run`` without the old log-prob forward where the release's ``_generate_and_score_completions`` skips
    it (``old_log_prob_runs``; the phase's time and memory leave the step)."""
    if rule == "always":
        return phases_run

    def phases(values: Mapping[str, Any]) -> list[str]:
        runs = old_log_prob_runs(values, rule)
        return [p for p in phases_run(values) if p != Phase.OLD_LOG_PROB or runs]
    return phases


def release_cost_spec(spec: CostSpec, release: Release, old_log_prob: str = "always") -> CostSpec:
    """``spec`` for a release whose per-device batch counts prompts (0.14.0): every term reads it times
    num_generations; its vllm_device engine as that release's vLLM sized it (``_engine_of_release``); other
    releases' spec unchanged."""
    spec = dataclasses.replace(spec, plan=_engine_of_release(spec.plan, release),
                               host_layout=_deepspeed_of_release(spec.host_layout, release),
                               phases_run=_phases_of_release(spec.phases_run, old_log_prob),
                               gated_phases=({} if old_log_prob in ("always", "never")
                                             else {Phase.OLD_LOG_PROB: OLD_LOG_PROB_GATE}))
    if not release.batch_counts_prompts:
        return spec
    plan, samples = spec.plan, spec.samples

    def inputs(table: Mapping[str, Any]) -> dict[str, list[str]]:
        # every release's time tables read num_generations already (the rollout's group, swift.cost _BATCH_HF)
        return {phase: list(dict.fromkeys([*names, "num_generations"])) for phase, names in table.items()}

    return dataclasses.replace(
        spec, plan=lambda values, phase: plan(_completions(values), phase),
        memory_inputs=inputs(spec.memory_inputs), time_inputs=inputs(spec.time_inputs),
        samples=lambda values: samples(_completions(values)))
