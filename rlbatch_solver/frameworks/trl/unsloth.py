"""Unsloth GRPO (``--framework unsloth``): TRL's GRPOTrainer as Unsloth patches it, a mode of the TRL framework.

An Unsloth run is a Python script or notebook (``FastLanguageModel.from_pretrained(...)``,
``FastLanguageModel.get_peft_model(...)``, ``GRPOConfig(...)``), not a command line, so its config is given as keys
with Unsloth's own argument names: a YAML file (``--config unsloth.yaml``, flat or under the sections
``from_pretrained``, ``get_peft_model`` and ``grpo_config``) or pasted ``--key value`` pairs, plus
``UNSLOTH_VLLM_STANDBY=1`` as the script sets it. What they mean, from Unsloth 2026.10.9's code:

* ``FastLanguageModel.from_pretrained`` (unsloth/models/loader.py): ``load_in_4bit`` (default True: bitsandbytes NF4
  with double quantization), ``load_in_8bit``, ``load_in_16bit``, ``load_in_fp8`` (True or 'block': FP8 linear
  weights, a pre-quantized '-FP8' repo or quantized while loading), ``full_finetuning``, ``fast_inference`` (default
  False: a colocated vLLM engine whose weights are the trained model's, unsloth_zoo/vllm_utils.py ``load_vllm``;
  Unsloth's GRPOTrainer then turns ``use_vllm`` on, rl.py), ``gpu_memory_utilization`` (default 0.5: vLLM's share),
  ``max_seq_length`` (default 2048: vLLM's max_model_len), ``max_lora_rank`` (vLLM's LoRA slots).
* ``FastLanguageModel.get_peft_model`` (unsloth/models/llama.py): ``r`` (default 16) on every linear layer,
  ``use_gradient_checkpointing`` (default "unsloth": checkpoints offloaded to host RAM,
  unsloth_zoo/gradient_checkpointing.py; True: plain checkpointing; False: none).
* ``UNSLOTH_VLLM_STANDBY=1``: the engine sleeps between rollouts, its KV cache released (unsloth_zoo/vllm_utils.py
  ``patch_vllm_enable_sleep_mode``); the weights stay, shared with the trainer.
* the ``GRPOConfig`` fields: TRL's (``rules.py``) with Unsloth's defaults and checks (``unsloth_rules.py``).

Memory (``cost_spec``): TRL's cost terms (``cost.py``) with Unsloth's plan: the quantized base, one copy of the
weights for the trainer and vLLM, offloaded checkpoints and the chunked log-probs (``Plan.base_weight_bytes``,
``engine_shares_weights``, ``ckpt_offload``, ``logits_impl = "unsloth-chunked"``; docs/cost-model.md "Unsloth").
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...costmodel import constants as C
from ...costmodel.memory import engine_weight_bytes, estimate_memory, model_consts
from ...costmodel.phase import Phase
from ...costmodel.tables import CostSpec
from ...errors import InputError, did_you_mean
from ...rules.base import RuleSet, Value
from ..base import Framework, priced_words
from ..error_text import ErrorPattern
from ..key_names import KeyList
from ..overrides import flag_bool, memory_share_permille, whole_number
from . import unsloth_rules, unsloth_versions
from .fields import GRPO_SCRIPT_OPTIONS
from .framework import TrlFramework, _ours, _unknown

# FastLanguageModel.from_pretrained's and get_peft_model's arguments we read, with their defaults (unsloth/models/
# loader.py FastLanguageModel.from_pretrained; unsloth/models/llama.py FastLlamaModel.get_peft_model)
MODEL_ARGS: dict[str, Any] = {
    "max_seq_length": 2048, "load_in_4bit": True, "load_in_8bit": False, "load_in_16bit": False,
    "load_in_fp8": False, "full_finetuning": False, "fast_inference": False, "gpu_memory_utilization": 0.5, "max_lora_rank": 64,
    "r": 16, "use_gradient_checkpointing": "unsloth",
}
# from_pretrained / get_peft_model arguments that do not change what we check or price, kept from TRL's keys (but
# target_modules, which ``unsloth_values`` reads for the LoRA's layers: ``qv_only``)
IGNORED_ARGS = frozenset({"model_name", "dtype", "token", "device_map", "lora_alpha", "lora_dropout", "bias",
                          "random_state", "use_rslora", "loftq_config", "target_modules", "float8_kv_cache",
                          "trust_remote_code", "fix_tokenizer", "rope_scaling", "revision", "use_exact_model_name",
                          "offload_embedding", "max_prompt_length"})
STANDBY = "UNSLOTH_VLLM_STANDBY"
# the fields UnslothGRPOConfig adds to TRL's (unsloth/models/rl.py, the generated config)
UNSLOTH_FIELDS = frozenset({"vllm_sampling_params", "unsloth_num_chunks", "unsloth_logit_chunk_multiplier",
                            "unsloth_grpo_mini_batch", "max_seq_length"})
# Unsloth's own messages (explain); TRL's are TRL's (error_families)
PATTERNS = [
    ErrorPattern("unsloth", r"Unsloth GRPO mini batch size needs to be less than or equal to the effective generation "
                            r"batch size", ("unsloth.config.grpo_mini_batch_within_generation_batch",),
                 unsloth_rules.UNSLOTH_CONFIG,
                 "ValueError: Unsloth GRPO mini batch size needs to be less than or equal to the effective generation "
                 "batch size, which is self.per_device_train_batch_size * gradient_accumulation_steps.",
                 hint=lambda x: ("unsloth_grpo_mini_batch is larger than the generation batch "
                                 "(per_device_train_batch_size x GPUs x steps_per_generation, which defaults to "
                                 "gradient_accumulation_steps); lower unsloth_grpo_mini_batch, or raise "
                                 "gradient_accumulation_steps.")),
    # from_pretrained's precision check: more than one load, load_in_4bit True by default
    ErrorPattern("unsloth", r"Can only load in 4bit or 8bit or 16bit, not a combination",
                 ("unsloth.load.one_precision",), unsloth_rules.ONE_PRECISION,
                 "RuntimeError: Unsloth: Can only load in 4bit or 8bit or 16bit, not a combination!\nAlso, we by "
                 "default set `load_in_4bit = True`.",
                 hint=lambda x: ("more than one of load_in_4bit (True by default), load_in_8bit, load_in_16bit is on "
                                 "(or load_in_fp8 beside load_in_8bit or full_finetuning): set load_in_4bit = False "
                                 "and keep one load.")),
    # Unsloth's forward cuts a longer sequence (a warning; the run goes on with the completion cut)
    ErrorPattern("unsloth", r"Input IDs of shape .{0,60}? with length (?P<length>\d+) > the model's max sequence "
                            r"length of (?P<max_seq_length>\d+)",
                 ("unsloth.model.max_seq_length_fits_prompt_and_completion",),
                 "unsloth/models/llama.py:LlamaModel_fast_forward",
                 "Unsloth: Input IDs of shape torch.Size([8, 1536]) with length 1536 > the model's max sequence length "
                 "of 1024.\nWe shall truncate it ourselves. It's imperative if you correct this issue first.",
                 hint=lambda x: f"a sequence of {x['length']} tokens, over max_seq_length = {x['max_seq_length']}: "
                                f"set max_seq_length (from_pretrained) to at least the longest prompt + "
                                f"max_completion_length, {x['length']} or more", numbers=("length", "max_seq_length")),
    # under fast_inference vLLM's max_model_len is max_seq_length: a longer prompt stops the run
    ErrorPattern("unsloth", r"decoder prompt \(length (?P<prompt>\d+)\) is longer than the maximum model length of "
                            r"(?P<max_seq_length>\d+)",
                 ("unsloth.model.max_seq_length_fits_prompt_and_completion",),
                 "vllm/v1/engine/processor.py:Processor._validate_model_input (max_model_len = max_seq_length: "
                 "unsloth_zoo/vllm_utils.py:load_vllm)",
                 "ValueError: The decoder prompt (length 2300) is longer than the maximum model length of 2048. Make "
                 "sure that `max_model_len` is no smaller than the number of text tokens.",
                 hint=lambda x: f"a {x['prompt']}-token prompt against max_seq_length = {x['max_seq_length']} (vLLM's "
                                f"max_model_len under fast_inference): set max_seq_length to at least the longest prompt "
                                f"+ max_completion_length", numbers=("prompt", "max_seq_length")),
]
SECTIONS = ("from_pretrained", "get_peft_model", "grpo_config", "GRPOConfig", "training_args", "args")
BITS = {4: C.NF4_BYTES, 8: C.INT8_BYTES, 16: 0.0}  # frozen base bytes per decoder weight (0: 16-bit)
FP8 = "fp8"  # load_in_fp8's base: C.FP8_BYTES per linear weight (not bitsandbytes: load_bits stays 16)


def fp8_flag(raw: Any) -> bool:
    """from_pretrained's ``load_in_fp8``: True (row scales), 'block' (128x128 block scales) or False; anything else
    stops Unsloth (unsloth/models/loader_utils.py get_model_name: ``assert load_in_fp8 in (True, False, "block")``)."""
    if isinstance(raw, str) and raw.strip().lower() == "block":
        return True
    try:
        return flag_bool("load_in_fp8", raw)
    except InputError:
        raise InputError("load_in_fp8", f"'{raw}' is not one of Unsloth's settings (True, False, 'block').",
                         'write load_in_fp8 = true (row scales), "block" or false.') from None


# the names' ends that mark Unsloth's pre-quantized repos: unsloth/models/mapper.py's bitsandbytes names end in
# "-bnb-4bit" ("-unsloth-bnb-4bit" its dynamic ones; loader.py _strip_unsloth_bnb_4bit_suffix strips these two to
# reach the 16-bit repo), its FP8 ones in "-FP8", "-FP8-Dynamic" or "-FP8-Block"
BNB_4BIT_ENDS = ("-unsloth-bnb-4bit", "-bnb-4bit")
FP8_MARK = "-fp8"


def quantized_repo(name: Any) -> tuple[str, Any]:
    """(the name of the 16-bit model an Unsloth pre-quantized repo stores, the load it stores it as: 4 or ``FP8``);
    (the name, None) for any other name."""
    text = str(name or "").strip()
    lower = text.lower()
    for end in BNB_4BIT_ENDS:
        if lower.endswith(end):
            return text[:-len(end)], 4
    # the mark in the repo's own name (after the organisation's '/'), not in the organisation's
    at = lower.rfind(FP8_MARK)
    return (text[:at], FP8) if at > max(0, lower.rfind("/")) else (text, None)


# the end that marks a 16-bit hub repo: Unsloth 2026.10.9 loader.py FastLanguageModel.from_pretrained and
# FastModel.from_pretrained load a name ending "-bf16" (not a local folder) in 16 bits, load_in_4bit/8bit/fp8 off,
# and print "`...` is a 16bit (-bf16) checkpoint, so 4bit/8bit/fp8 loading is disabled"
BF16_END = "-bf16"


def sixteen_bit_repo(name: Any) -> bool:
    """Whether ``model_name`` names a '-bf16' repo (``BF16_END``), which Unsloth loads in 16 bits."""
    return str(name or "").strip().lower().endswith(BF16_END)


def prequantized(name: Any, bits: Any) -> bool:
    """Whether the repo ``model_name`` names stores the base already quantized as ``bits`` loads it
    (``quantized_repo``): the names of unsloth/models/mapper.py's ``__INT_TO_FLOAT_MAPPER`` keys and "8" entries,
    which loader_utils.py ``__get_model_name`` keeps for load_in_4bit (an explicit -bnb-4bit name) and maps a -bnb-4bit
    name back to its 16-bit repo without it. A 16-bit name is priced as a 16-bit checkpoint, though Unsloth maps the
    models its mapper lists to their pre-quantized repo (FLOAT_TO_INT_MAPPER, FLOAT_TO_FP8_BLOCK_MAPPER): the name
    does not say whether it is listed."""
    return bits in (4, FP8) and quantized_repo(name)[1] == bits


def _trl() -> TrlFramework:
    """TRL's own framework object (release 1.16.0, whose GRPOConfig reads the flags as the pinned 1.15.0 does)."""
    from .. import get_framework
    return get_framework("trl")


def _own(key: str) -> bool:
    return key in MODEL_ARGS or key in IGNORED_ARGS or key == STANDBY


def _flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Keys without their dashes and without a section prefix (``from_pretrained.load_in_4bit``)."""
    out: dict[str, Any] = {}
    for raw, value in flat.items():
        key = str(raw)
        k = (key[2:] if key.startswith("--") else key).replace("-", "_") if not key.isupper() else key
        head, dot, rest = k.partition(".")
        out[rest if dot and head in SECTIONS else k] = value
    return out


def precision_flags(args: Mapping[str, Any], name: Any) -> dict[str, bool]:
    """from_pretrained's precision flags as its one-precision check reads them (unsloth.load.one_precision), from
    Unsloth 2026.10.9's unsloth/models/loader.py: full finetuning beside load_in_4bit (True by default) or load_in_8bit
    turns every quantized load off, load_in_16bit too (FastModel.from_pretrained, where FastLanguageModel.from_pretrained
    sends full finetuning and load_in_8bit: "disabling LoRA / QLoRA"); otherwise a '-bf16' repo loads in 16 bits,
    the other flags off, before FastLanguageModel.from_pretrained's check. The model's mapper changes only load_in_fp8
    (a pre-quantized '-FP8' repo drops it), which the rule reads only where FastModel.from_pretrained checks the flags,
    before any mapper (under load_in_8bit or full_finetuning)."""
    four, eight, sixteen = (flag_bool(k, args[k]) for k in ("load_in_4bit", "load_in_8bit", "load_in_16bit"))
    fp8, full = fp8_flag(args["load_in_fp8"]), flag_bool("full_finetuning", args["full_finetuning"])
    if full and (four or eight):
        four = eight = sixteen = fp8 = False
    elif not (full or eight) and sixteen_bit_repo(name):
        four, sixteen, fp8 = False, True, False
    return {"load_in_4bit": four, "load_in_8bit": eight, "load_in_16bit": sixteen, "load_in_fp8": fp8,
            "full_finetuning": full}


# get_peft_model's default target_modules (unsloth/models/llama.py FastLlamaModel.get_peft_model, 2025.11.1 and the
# releases since: "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"): every linear layer of
# a decoder layer, not peft's default q and v that TRL's ModelConfig leaves without --lora_target_modules
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def qv_only(targets: Any) -> bool:
    """Whether ``target_modules`` names the query and value projections alone (priced as q/v LoRA, ``lora_qv``);
    any other list, or "all-linear", is priced as every linear layer."""
    names = set(re.findall(r"[A-Za-z_][\w.-]*", targets if isinstance(targets, str) else " ".join(map(str, targets))))
    return bool(names) and names <= {"q_proj", "v_proj"}


def unsloth_values(flat: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Value]]:
    """Unsloth's keys -> (TRL's GRPOConfig flags, the cost values only Unsloth has)."""
    rest = {k: v for k, v in _flat(flat).items() if k not in MODEL_ARGS and k not in IGNORED_ARGS and k != STANDBY}
    args = {**MODEL_ARGS, **{k: v for k, v in _flat(flat).items() if k in MODEL_ARGS}}
    full = flag_bool("full_finetuning", args["full_finetuning"])
    name = _flat(flat).get("model_name")
    flags = precision_flags(args, name)
    # a '-bf16' repo loads in 16 bits under load_in_8bit too: FastModel.from_pretrained's own '-bf16' block runs after
    # its flags' check, which the rule reads from ``flags`` (loader.py 2026.10.9)
    if flags["load_in_16bit"] or full or sixteen_bit_repo(name):
        bits = 16
    elif flags["load_in_8bit"]:
        bits = 8  # FastModel's bitsandbytes 8-bit load, whatever load_in_fp8 says (loader.py drops a mapped fp8)
    elif flags["load_in_fp8"]:
        bits = FP8  # FP8 linears, also beside the default load_in_4bit (config_notes says what Unsloth does then)
    else:
        bits = 4 if flags["load_in_4bit"] else 16
    ckpt = args["use_gradient_checkpointing"]
    offload = isinstance(ckpt, str) and ckpt.strip().lower() == "unsloth"
    if not offload and isinstance(ckpt, str) and ckpt.strip().lower() not in ("true", "false", "1", "0"):
        raise InputError("use_gradient_checkpointing", f"'{ckpt}' is not one of Unsloth's settings."
                         f"{did_you_mean(ckpt, ['unsloth', 'true', 'false'])}",
                         'use use_gradient_checkpointing = "unsloth" (the default), true or false.')
    trl = dict(rest)
    trl["gradient_checkpointing"] = True if offload else flag_bool("use_gradient_checkpointing", ckpt)
    trl.setdefault("dtype", "bfloat16")  # dtype None: the GPU's 16-bit type (bf16, or fp16 before Ampere)
    if not full:
        trl["use_peft"] = True
        trl["lora_r"] = whole_number("r", args["r"], "r")
        if trl["lora_r"] < 1:
            raise InputError("r", f"{trl['lora_r']} must be at least 1.", "set r = 16 (get_peft_model's default).")
        if not qv_only(_flat(flat).get("target_modules", DEFAULT_TARGETS)):
            trl["lora_target_modules"] = "all-linear"
    # from_pretrained's share, checked like TRL's flag even where no engine reads it (0.5 by default)
    memory_share_permille("gpu_memory_utilization", args["gpu_memory_utilization"],
                          "write gpu_memory_utilization = 0.5 (vLLM's share of the GPU).")
    shared = flag_bool("fast_inference", args["fast_inference"])
    if shared:
        trl["use_vllm"] = True
        trl.setdefault("vllm_mode", "colocate")
        trl["vllm_gpu_memory_utilization"] = args["gpu_memory_utilization"]
        trl["vllm_max_model_length"] = _length("max_seq_length", args["max_seq_length"])
        standby = flat.get(STANDBY, 0)
        trl["vllm_enable_sleep_mode"] = standby not in (None, "", "0", 0, False, "false", "False")
    # vllm_shared: the engine is fast_inference's, on the model's own weights (GRPOConfig's use_vllm without it starts
    # TRL's own colocated engine, with a copy of its own)
    cost: dict[str, Value] = {"load_bits": 16 if bits == FP8 else bits, "load_fp8": bits == FP8,
                              "ckpt_offload": offload, "vllm_shared": shared,
                              "prequantized": prequantized(name, bits),
                              "max_seq_length": _length("max_seq_length", args["max_seq_length"]), **flags,
                              # the LoRA adapter trains in fp32 over any base: get_peft_model ends in
                              # prepare_model_for_kbit_training -> unsloth_zoo training_utils.py
                              # prepare_model_for_training(float32_mixed_precision=True), which casts every
                              # lora_A/lora_B to fp32 (models/llama.py and vision.py FastBaseModel.get_peft_model, LoRA
                              # defaults float32_mixed_precision True), and models/rl.py removes TRL's bf16 cast of a
                              # quantized base's adapter ("if _is_quantized_model:" -> "if False:"), 2026.10.9
                              "lora_bf16": False}
    prompt = _flat(flat).get("max_prompt_length")
    if prompt not in (None, "", "None", "none"):
        # Unsloth drops the field (TRL 1.15 has none), but it is the script's own word on its longest prompt: the
        # lengths rule and the cost model read it
        cost["max_prompt_length"] = cost["max_length"] = _length("max_prompt_length", prompt)
    else:
        # no word on the prompt: from_pretrained's max_seq_length bounds every sequence, vLLM's or not
        # (unsloth.model.max_seq_length_fits_prompt_and_completion), so the longest prompt is what it leaves the
        # completion (as TRL's cost values read vllm_max_model_length under fast_inference)
        completion = whole_number("max_completion_length", trl.get("max_completion_length",
                                                                   _trl().release.completion_length),
                                  "max_completion_length")
        cost["max_length"] = max(1, cost["max_seq_length"] - completion)
    return trl, cost


def fp8_notes(flat: Mapping[str, Any], fp8: bool, priced: bool = True) -> list[str]:
    """What load_in_fp8 does with the other precision flags, from Unsloth 2026.10.9's unsloth/models/loader.py
    (FastLanguageModel.from_pretrained) and loader_utils.py. Notes, not rules: whether Unsloth stops depends on the
    model's name (a pre-quantized '-FP8' repo in its mapper) and the vLLM release, which a config does not carry."""
    if not fp8_flag(flat.get("load_in_fp8", False)):
        return []
    if not fp8:
        if flag_bool("full_finetuning", flat.get("full_finetuning", False)):
            # FastModel.from_pretrained: full finetuning with 4-bit/8-bit on (load_in_4bit's default) turns the
            # quantized loads off, load_in_fp8 included; with them off, the on-the-fly FP8 path refuses it
            return ["load_in_fp8 with full_finetuning: with load_in_4bit or load_in_8bit on (load_in_4bit is by "
                    "default) Unsloth turns the quantized loads off, load_in_fp8 included, and trains every weight "
                    "in 16 bits (loader.py FastModel.from_pretrained); with them off it raises '`load_in_fp8` is not "
                    "compatible with full finetuning' (loader_utils.py _get_fp8_mode_and_check_settings); "
                    f"{'priced' if priced else 'read'} as a 16-bit full fine-tune"]
        error = "'Can only load in 4bit or 8bit or 16bit, not a combination!' (loader.py _precision_flags_conflict)"
        if flag_bool("load_in_4bit", flat.get("load_in_4bit", MODEL_ARGS["load_in_4bit"])):
            # the check counts load_in_4bit too, after the mapper may drop load_in_fp8: 4-bit beside 16-bit or 8-bit
            # stops the load whatever the model (FastLanguageModel.from_pretrained; FastModel's for load_in_8bit)
            return ["load_in_fp8 is not what loads the base here: load_in_16bit or load_in_8bit is on too, beside "
                    f"load_in_4bit (True by default), and Unsloth raises {error} whatever the model: set "
                    "load_in_4bit = False and keep one load; read as the 16-bit or 8-bit load"]
        return ["load_in_fp8 is not what loads the base here: load_in_16bit or load_in_8bit is on too, a combination "
                f"Unsloth refuses, {error}, unless it maps the model to a pre-quantized '-FP8' repo and drops "
                "load_in_fp8; read as that load"]
    stored = prequantized(flat.get("model_name"), FP8)
    out = [f"load_in_fp8: the linear weights are FP8, {'priced' if priced else 'read'} at {C.FP8_BYTES:g} byte "
           "per weight (their fp32 scales negligible), the embeddings, lm_head and norms 16-bit; vLLM "
           "(fast_inference) and the trainer share them. "
           + (f"{flat.get('model_name')} stores them so (a pre-quantized '-FP8' repo): Unsloth loads it as it is, "
              "quantizing nothing and needing no H100 (loader_utils.py _fp8_load_as_is)" if stored else
              "Quantizing while loading (no pre-quantized '-FP8' repo for the model, and no fast_inference engine of "
              "vLLM 0.12 or later to quantize it) needs a GPU of compute capability 9.0 or more (H100), torch 2.9 and "
              "torchao 0.15: Unsloth raises otherwise (loader_utils.py _get_fp8_mode_and_check_settings)")]
    if flag_bool("load_in_4bit", flat.get("load_in_4bit", MODEL_ARGS["load_in_4bit"])):
        out.append("load_in_fp8 with load_in_4bit (True by default): Unsloth raises 'Can only load in 4bit or 8bit "
                   "or 16bit, not a combination!' unless it maps the model to a pre-quantized '-FP8' repo (then it "
                   "drops load_in_fp8 and loads that repo; loader.py FastLanguageModel.from_pretrained): set "
                   "load_in_4bit = False, as Unsloth's FP8 notebooks do")
    return out


def bf16_notes(flat: Mapping[str, Any], priced: bool = True) -> list[str]:
    """What a '-bf16' repo does to the quantized loads the config asks for: Unsloth 2026.10.9 loader.py
    (FastLanguageModel.from_pretrained, and FastModel.from_pretrained where load_in_8bit sends the load) turns
    load_in_4bit, load_in_8bit and load_in_fp8 off and loads the repo in 16 bits, with a printed line, where none of
    them is load_in_16bit's own choice. Full finetuning trains in 16 bits anyway (fp8_notes and the rule say so)."""
    name = flat.get("model_name")
    if not sixteen_bit_repo(name) or flag_bool("full_finetuning", flat.get("full_finetuning", False)):
        return []
    args = {k: flat.get(k, MODEL_ARGS[k]) for k in ("load_in_4bit", "load_in_8bit", "load_in_16bit")}
    asked = [k + (" (True by default)" if k == "load_in_4bit" and k not in flat else "")
             for k in ("load_in_4bit", "load_in_8bit") if flag_bool(k, args[k])]
    if fp8_flag(flat.get("load_in_fp8", False)):
        asked.append("load_in_fp8")
    if not asked or flag_bool("load_in_16bit", args["load_in_16bit"]):
        return []
    return [f"{name} is a 16-bit checkpoint (a '-bf16' repo): Unsloth turns {', '.join(asked)} off and loads it in "
            "16 bits, '4bit/8bit/fp8 loading is disabled' (loader.py FastLanguageModel.from_pretrained; "
            f"FastModel.from_pretrained under load_in_8bit); its weights {priced_words(priced, plural=True)} at 2 "
            "bytes each. A 4-bit base: name the model's '-bnb-4bit' repo"]


def _length(key: str, raw: Any) -> int:
    """A token count of at least 1."""
    length = whole_number(key, raw, key)
    if length < 1:
        raise InputError(key, f"{length} must be at least 1.",
                         f"set {key} to a token count (max_seq_length: the longest prompt + completion).")
    return length


class UnslothFramework(TrlFramework):
    """``FastLanguageModel`` + Unsloth's ``GRPOTrainer`` (one process per GPU; vLLM inside it with fast_inference)."""

    name = "unsloth"
    version = unsloth_rules.VERSION
    ruleset: RuleSet = unsloth_rules.RULESET
    # a run is the user's own script (a notebook saved as unsloth_grpo.py) passing these keys to from_pretrained,
    # get_peft_model and GRPOConfig: recommend's whole command names it so, and a launch script running a file of
    # that name is read as Unsloth's
    command = "python unsloth_grpo.py"
    launcher_keys = frozenset()
    launcher_entries = ()
    # the Unsloth releases we price (unsloth_versions.py), not TRL's packs: one set of rules, each release's memory
    versions = unsloth_versions.VERSIONS
    releases = unsloth_versions
    launcher_flags = False
    model_keys = ("--model_name",)

    def catalog_model_name(self, name: str) -> str:
        """A pre-quantized repo (unsloth/Qwen3-8B-FP8, unsloth/Qwen3-8B-bnb-4bit) is looked up as the model it
        stores (``quantized_repo``), a '-bf16' one (unsloth/Qwen3-8B-bf16) as the model it is: its architecture is
        that model's; the repo's name still decides the load's price (``prequantized``, ``sixteen_bit_repo``)."""
        stored = quantized_repo(name)[0]
        # a '-bf16' repo (unsloth/Qwen3-8B-bf16) is the model itself in 16 bits: looked up without its end, priced as
        # a 16-bit load (``sixteen_bit_repo``), not as a pre-quantized one
        return stored[:-len(BF16_END)] if sixteen_bit_repo(stored) else stored

    example_inputs = ()
    example_inputs_source = "your script's own (Unsloth's notebooks pass a dataset and reward functions to GRPOTrainer)"
    doc_intro = ("Unsloth GRPO: TRL's GRPOConfig rules at TRL " + unsloth_rules.TRL_PIN + " (the newest release "
                 "Unsloth " + unsloth_rules.VERSION + " accepts), with Unsloth's defaults and checks "
                 "(frameworks/trl/unsloth_rules.py). Give the config as keys with Unsloth's argument names "
                 "(FastLanguageModel.from_pretrained, get_peft_model, GRPOConfig) in a YAML file or pasted as "
                 "--key value, and UNSLOTH_VLLM_STANDBY=1 where the script sets it. Memory is priced as Unsloth "
                 + unsloth_rules.VERSION + " runs it, or as 2025.9.6 does with --framework unsloth==2025.9.6 (its batch "
                 "rewrite, loss chunks and Standby share: frameworks/trl/unsloth_versions.py), the same rules "
                 "checked.")
    accuracy_family = "trl"
    error_families = ("unsloth", "trl")

    @property
    def release(self):
        from .versions import RELEASES
        return RELEASES["1.16.0"]  # TRL 1.15.0's defaults are 1.16.0's (grpo_config.py: only pad_to_multiple_of)

    @property
    def code_release(self) -> str:
        """The TRL Unsloth pins: its GRPOTrainer is TRL's, patched. It keeps TRL's old log-prob gate (unsloth
        2026.10.9 models/rl_replacements.py ``grpo_trainer__generate_and_score_completions``: "Keep TRL's old logprob
        gate"), its ``_get_per_token_logps_and_entropies`` scoring where TRL asks (``compute_efficient`` only for
        the loss's own pass)."""
        return unsloth_rules.TRL_PIN

    @property
    def newest(self) -> bool:
        """True in every release we price: TRL's code reads it as "the TRL behaviour of the newest pack", and each
        Unsloth release runs on the TRL 1.16.0 defaults ``release`` gives (``unsloth_release`` is what differs)."""
        return True

    @property
    def unsloth_release(self) -> unsloth_versions.Release:
        """The Unsloth release whose memory this object prices (``unsloth_versions.RELEASES``)."""
        return unsloth_versions.RELEASES[self.version]

    def for_config(self, flat: Mapping[str, Any]):
        """Nothing in a config dates its Unsloth release (the releases we price read the same keys): the newest, or
        the one the user named, with a note naming the release it is priced as."""
        if self.pinned:
            return self, None
        others = ", ".join(unsloth_versions.VERSIONS[1:])
        return self, (f"priced as Unsloth {self.version} runs it, the newest release we follow (a config does not say "
                      f"its Unsloth release); name yours with --framework unsloth==VERSION ({others}) if you run "
                      "another: 2025.9's batch rewrite, loss chunks and Standby share differ")

    def printed_lengths(self, scenario: Any) -> tuple[Any, list[str]]:
        """Unsloth's command carries the prompt length with vLLM on or off: from_pretrained's max_seq_length less the
        completion (``space`` prices that; check reads it back), so the scenario's lengths stand."""
        return scenario, []

    def arms_left_out(self, scenario: Any) -> list:
        """None: without fast_inference Unsloth generates with its own patched model (unsloth's for_inference), which
        no run we have measured; the cost model would price it as transformers' generate. Searched where the user
        asks for it (--search use_vllm=true,false)."""
        return []

    def _price_each_arm(self, scenario: Any, space: Any) -> None:
        """Nothing to tie: Unsloth's command carries the prompt length with vLLM on or off (``printed_lengths``), so
        both arms are priced at the scenario's (``space``), not at check's default for a TRL command without vLLM."""

    def doc_appendix(self) -> str:
        return ""

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        """``--key value`` pairs, and ``UNSLOTH_VLLM_STANDBY=1`` (``export``-ed or not) as the script sets it."""
        flat, ignored = super().parse(tokens)
        flat.pop("__entry__", None)
        for word in list(ignored):
            key, eq, value = word.partition("=")
            if eq and key == STANDBY:
                flat[STANDBY] = value.strip("'\"")
                ignored.remove(word)
        if "export" in ignored and STANDBY in flat:
            ignored.remove("export")
        return flat, ignored

    def from_script(self, args: list[str], scope: Mapping[str, str], gpus: int | None,
                    notes: list[str] | None = None) -> tuple[str, list[str], int | None]:
        """A launch script's own ``UNSLOTH_VLLM_STANDBY`` (its environment) joins the arguments."""
        name, out, gpus = super().from_script(args, scope, gpus, notes)
        if STANDBY in scope and not any(a.startswith(STANDBY + "=") for a in out):
            out = [*out, f"{STANDBY}={scope[STANDBY]}"]
        return name, out, gpus

    def normalize(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """TRL's GRPOConfig keys as TRL's parser reads them; Unsloth's own (from_pretrained, get_peft_model, the
        environment) as they are."""
        keys = _flat(flat)
        own = {k: v for k, v in keys.items() if _own(k)}
        return {**super().normalize({k: v for k, v in keys.items() if k not in own}), **own}

    def key_list(self, flat: Mapping[str, Any], command: bool = False) -> KeyList:
        """Unsloth runs from the user's own Python script, which may read any name: only a near miss of a known key
        (TRL's script options, the rule variables', Unsloth's own) is suspected, never refused."""
        base = Framework.key_list(self, flat, command)
        return replace(base, keys=base.keys | GRPO_SCRIPT_OPTIONS,
                       given=tuple(k for k in base.given if not _ours(k)))

    # -- export: GRPOConfig keys and Unsloth's own names --------------------------------------------------
    EXPORT_NAMES = {"--vllm_gpu_memory_utilization": "--gpu_memory_utilization", "--use_vllm": "--fast_inference"}
    # (--vllm_max_model_length: from_pretrained's max_seq_length is the engine's length here, written below)
    NOT_EXPORTED = ("--num_processes", "--num_machines", "--use_deepspeed", "--zero_stage", "--dtype", "--torch_dtype",
                    "--vllm_mode", "--vllm_tensor_parallel_size", "--vllm_max_model_length")

    def export(self, solution: Mapping[str, Value], space: Any = None) -> list[str]:
        out: list[str] = []
        seen: set[str] = set()
        for arg in _trl().export(solution, space):
            key, _, value = arg.partition(" ")
            if key in self.NOT_EXPORTED:
                continue
            if key in ("--vllm_enable_sleep_mode", f"--{STANDBY}"):  # the script's environment, said once
                word = f"{STANDBY}={1 if key == '--vllm_enable_sleep_mode' else value}"
                if STANDBY not in seen:
                    out.insert(0, word)
                    seen.add(STANDBY)
                continue
            key = self.EXPORT_NAMES.get(key, key)
            if key in seen:  # a key the user set comes back among the space's fixed ones: once is enough
                continue
            seen.add(key)
            out.append(f"{key} {value}".strip())
        if solution.get("max_seq_length") is not None and "--max_seq_length" not in seen:
            # from_pretrained's: every sequence's bound (unsloth.model.max_seq_length_fits_prompt_and_completion)
            out.append(f"--max_seq_length {solution['max_seq_length']}")
        share = solution.get("gmu_permille")
        if solution.get("use_vllm") and share is not None and not any(a.startswith("--gpu_memory_utilization")
                                                                      for a in out):
            # TRL's export leaves out TRL's default share (0.3); from_pretrained's is 0.5: always say it
            out.append(f"--gpu_memory_utilization {int(share) / 1000}")
        return out

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        trl, cost = unsloth_values(flat)
        if gpus is None and "num_processes" not in trl and "NPROC_PER_NODE" not in trl:
            gpus = 1  # a script on one GPU (python train.py, a notebook)
        values = super().to_values(trl, gpus=gpus, model=model)
        values["removed_fields"] = False  # Unsloth drops them with a warning (unsloth_rules.py)
        values.update(cost)
        _rewrite_batch(values, self.unsloth_release)
        return values

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        trl, cost = unsloth_values(flat)
        notes = []
        gpus = {"gpus_per_node": 1, "nnodes": 1}
        values = dict(gpus)
        try:
            values = super().to_values(trl, gpus=1 if "num_processes" not in trl else None, model=None)
        except InputError:
            pass
        before = values.get("per_device_train_batch_size")
        after = dict(values)
        release = self.unsloth_release
        _rewrite_batch(after, release)
        if before is not None and after.get("per_device_train_batch_size") != before:
            why = ("per_device_train_batch_size" if release.batch_rewrite == "not-multiple" else
                   "gradient_accumulation_steps*WORLD_SIZE*per_device_train_batch_size")
            notes.append(f"Unsloth changes per_device_train_batch_size {before} to num_generations = "
                         f"{after['per_device_train_batch_size']}: {why} is not a multiple of it (unsloth/models/rl.py, "
                         f"the generated UnslothGRPOConfig of {self.version}); checked with the changed batch, and its memory "
                         f"{priced_words(priced)} with it")
        if self.version != unsloth_versions.NEWEST:
            notes.append(f"Unsloth {self.version}: its memory {priced_words(priced)} with its own batch rewrite, loss "
                         "chunks (one sequence's 16-bit logits at a time, unsloth_zoo rl_replacements.py "
                         "grpo_accumulated_loss) and Standby share (unsloth_zoo vllm_utils.py load_vllm); its checks "
                         f"are Unsloth {unsloth_versions.NEWEST}'s, on TRL {unsloth_rules.TRL_PIN}'s GRPOConfig")
        unknown = [k for k in _flat(flat) if not _own(k) and k not in UNSLOTH_FIELDS and _unknown(k)]
        if unknown:
            notes.append("ignored, as keys neither from_pretrained, get_peft_model nor Unsloth's GRPOConfig (TRL "
                         f"{unsloth_rules.TRL_PIN}) has: " + ", ".join(unknown))
        dropped = [k for k in ("max_prompt_length", "vllm_device", "vllm_dtype", "vllm_max_model_len",
                               "vllm_guided_decoding_regex", "vllm_enable_prefix_caching", "wandb_log_unique_prompts",
                               "use_liger_loss") if k in _flat(flat)]
        if dropped:
            notes.append(f"Unsloth drops {', '.join(dropped)} (fields TRL {unsloth_rules.TRL_PIN} removed) with a warning "
                         "(unsloth/models/rl_config_compat.py)")
        if not trl.get("use_vllm") and "fast_inference" not in _flat(flat):  # written: the config's own choice
            notes.append("fast_inference is off (from_pretrained's default): rollouts use the model's own generate, "
                         "not vLLM")
        elif trl.get("vllm_enable_sleep_mode"):
            notes.append(f"{STANDBY}=1: the vLLM engine releases its KV cache while the trainer runs")
        notes += fp8_notes(_flat(flat), bool(cost["load_fp8"]), priced)
        notes += bf16_notes(_flat(flat), priced)
        return notes + self._default_notes(flat, cost, priced)

    @staticmethod
    def _default_notes(flat: Mapping[str, Any], cost: Mapping[str, Value], priced: bool = True) -> list[str]:
        """from_pretrained's defaults the config did not write and the answer is priced at, in one note with how to
        change the one that moves memory most (as ms-swift's default LoRA tuner is said): a 4-bit base, and
        Unsloth's checkpointing to host RAM. A value the config wrote is its own choice: not restated. Not ``priced``
        (no memory evaluated): read at them, not priced."""
        given = set(_flat(flat))
        said = []
        if cost["load_bits"] == 4 and not cost["load_fp8"] and not given & {
                "load_in_4bit", "load_in_8bit", "load_in_16bit", "load_in_fp8", "full_finetuning"}:
            said.append("load_in_4bit (the frozen base is NF4 with double quantization, %.3f bytes per decoder "
                        "weight; a 16-bit base: give --load_in_4bit false (recommend: --set load_in_4bit=false))"
                        % C.NF4_BYTES)
        if cost["ckpt_offload"] and "use_gradient_checkpointing" not in given:
            said.append('use_gradient_checkpointing = "unsloth" (each layer\'s checkpoint in host RAM, not on the GPU)')
        return [f"{'priced' if priced else 'read'} at from_pretrained's defaults: " + "; ".join(said)] if said else []

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False):
        """TRL's search space (a memory share or standby the user set under Unsloth's names stays as set: TRL's space
        reads each switch's keys from ``cost_input_keys``)."""
        space = super().space(scenario, model, with_knobs=with_knobs)
        fixed = _flat(scenario.fixed)
        # the lengths: the scenario's longest prompt, and from_pretrained's max_seq_length as given, else the
        # longest prompt + completion the run needs (unsloth.model.max_seq_length_fits_prompt_and_completion)
        completion = max(int(v) for v in space.domains.get("max_completion_length", [scenario.response_length]))
        seq = (_length("max_seq_length", fixed["max_seq_length"]) if "max_seq_length" in fixed else
               seq_length_options(scenario.prompt_length + completion)[0])
        space.domains["max_seq_length"] = [seq]
        # the load flags the user set are rule variables (unsloth.load.one_precision) that no solution value prints:
        # they travel with the answer as given
        for name, *_ in unsloth_rules.LOAD_FLAGS:
            if name in fixed:
                space.fixed_native[name] = fixed[name]
        # priced at what the printed command says (it cannot carry max_prompt_length: Unsloth drops it): prompts up to
        # what max_seq_length leaves the completion, as check reads the command back (unsloth_values)
        prompt = (_length("max_prompt_length", fixed["max_prompt_length"]) if "max_prompt_length" in fixed
                  else max(1, seq - completion))
        space.domains["max_prompt_length"] = space.domains["max_length"] = [prompt]
        # fast_inference's engine lives in each process (entry_point: one per GPU), at TP 1: the export writes no
        # --vllm_tensor_parallel_size (NOT_EXPORTED)
        space.domains["vllm_tp"] = [1]
        if "fast_inference" not in fixed and "use_vllm" not in fixed and True in space.domains.get("use_vllm", ()):
            # the answer's vLLM is written --fast_inference (EXPORT_NAMES): price that engine, on the model's own
            # weights, not GRPOConfig's use_vllm engine with a copy of its own (also where both arms are searched:
            # the switch is read only where vLLM runs, cost_spec's engine_shares_weights)
            space.domains["vllm_shared"] = [True]
        return space

    def entry_point(self, values: Mapping[str, Value]) -> str | None:
        """More than one GPU: one process per GPU under torchrun (Unsloth's multi-GPU runs are DDP, each rank with its
        own engine), whose --nproc_per_node the launch-script reader takes for the world size."""
        per_node, nodes = int(values.get("gpus_per_node") or 1), int(values.get("nnodes") or 1)
        if per_node * nodes == 1:
            return None
        return f"torchrun --nproc_per_node {per_node}" + (f" --nnodes {nodes}" if nodes > 1 else "") + \
            " " + self.command.removeprefix("python ")

    def error_patterns(self) -> list:
        return PATTERNS + super().error_patterns()

    def repair_policy(self, values: Mapping[str, Value] | None = None):
        """TRL's, from_pretrained's load_in_4bit, and its max_seq_length: the round values that hold the longest prompt +
        max_completion_length (unsloth.model.max_seq_length_fits_prompt_and_completion), ``seq_length_options``."""
        from .repair import TRL

        # load_in_4bit (True by default) beside another load: off, the load the config names stays
        # (unsloth.load.one_precision); the price does not move (load_bits reads the other load first)
        base = replace(TRL, rules=(*TRL.rules, "load_in_4bit"), ranks={**TRL.ranks, "load_in_4bit": 0})
        if not values or values.get("max_completion_length") is None:
            return base
        need = int(values.get("max_prompt_length") or 1) + int(values["max_completion_length"])
        options = seq_length_options(need)
        return replace(base, rules=(*base.rules, "max_seq_length"), ranks={**base.ranks, "max_seq_length": 1},
                       choices={**base.choices, "max_seq_length": options})

    def _decided(self, flat: Mapping[str, Any]) -> dict[str, Value]:
        return _trl()._decided(flat)  # TRL 1.16.0's (the pinned 1.15.0 decides them the same way)

    def _has_knob(self, name: str) -> bool:
        return name in ("gmu_permille", "sleep_level")

    # its own knobs' keys over TRL's: from_pretrained's gpu_memory_utilization and the standby environment variable
    cost_input_keys: Mapping[str, tuple[str, ...]] = {
        **TrlFramework.cost_input_keys, "gmu_permille": ("gpu_memory_utilization",), "sleep_level": (STANDBY,)}

    def assignment(self, name: str, value: Value) -> str:
        if name == "gmu_permille":
            return f"--gpu_memory_utilization {int(value or 0) / 1000}"
        if name == "sleep_level":
            return f"{STANDBY}={1 if value else 0}"
        return super().assignment(name, value)

    def cost_spec(self, model: ModelCard, gpu: Any) -> CostSpec:
        base = super().cost_spec(model, gpu)
        plan = base.plan

        release = self.unsloth_release
        standby_share = standby_utilization(gpu.memory_bytes)
        sequence_chunks = release.loss_chunks == "sequence"

        def unsloth_plan(values: Mapping[str, Value], phase: str):
            p = plan(values, phase)
            if p.engine == "vllm" and values.get("vllm_shared") and int(values.get("sleep_level") or 0):
                p = p.replace(gpu_memory_utilization=standby_share if release.standby_share == "by-gpu-size"
                              else max(p.gpu_memory_utilization, unsloth_versions.STANDBY_LEAST_SHARE))
            fp8 = bool(values.get("load_fp8")) and bool(p.lora_params)
            p = p.replace(
                base_weight_bytes=(C.FP8_BYTES if fp8 else BITS.get(int(values.get("load_bits") or 16), 0.0))
                if p.lora_params else 0.0, fp8_base=fp8,
                prequantized_checkpoint=bool(values.get("prequantized")),
                bnb_eager_linears=False,  # its own dequantize and gemv calls (unsloth/kernels/utils.py), not bnb's modules
                engine_shares_weights=p.engine == "vllm" and p.colocated and bool(values.get("vllm_shared")),
                ckpt_offload=bool(values.get("ckpt_offload")) and p.grad_ckpt,
                logits_impl="unsloth-sequence" if sequence_chunks else "unsloth-chunked",
                # 2025.9's loss projects the old policy's logits where the trainer kept old_per_token_logps (its
                # hidden states): where the old log-prob pass runs (the pack's gate, TrlFramework.code_release)
                loss_old_logits=sequence_chunks and Phase.OLD_LOG_PROB in base.phases_run(values))
            if p.engine_shares_weights:
                # load_vllm hands vLLM util x free / total (engine_share_of_free): its budget is util x the memory
                # free when the engine loads, not util x total
                p = p.replace(gpu_memory_utilization=engine_share_of_free(p.gpu_memory_utilization, gpu.memory_bytes))
                tokens, seqs = engine_batch(p.gpu_memory_utilization * gpu.memory_bytes
                                            - engine_weight_bytes(p, model_consts(model)))
                p = p.replace(max_num_batched_tokens=tokens, max_num_seqs=seqs)
            if not sequence_chunks and phase in AUTOTUNED and values.get("unsloth_grpo_mini_batch") is None:
                p = autotuned(p, phase)
            return p

        # load_bits is among TRL's inputs already (frameworks/bnb.py quantized_cost_spec)
        memory_inputs = {phase: list(names) + ["ckpt_offload", "vllm_shared", "load_fp8", "prequantized"]
                         for phase, names in base.memory_inputs.items()}
        # (2025.9's old-policy logits in the update follow the old log-prob pass's gate, whose inputs TRL's update
        # already reads: test_unsloth.py test_2025_9s_tables_equal_the_full_cost_model)
        # the engine's prefill chunk and sequence count (engine_batch) follow the weights' bytes and the engine's kind
        time_inputs = {phase: list(names) + ["vllm_shared", "load_fp8"] for phase, names in base.time_inputs.items()}
        from dataclasses import replace
        return replace(base, framework="unsloth", plan=unsloth_plan, memory_inputs=memory_inputs,
                       time_inputs=time_inputs,
                       bool_names=base.bool_names | {"ckpt_offload", "vllm_shared", "load_fp8", "prequantized"})


def engine_share_of_free(util: float, memory_bytes: float) -> float:
    """The share of the GPU Unsloth's vLLM engine gets for ``util``: util x free / total. unsloth_zoo's
    ``approximate_vllm_memory_usage`` (vllm_utils.py, 2025.9.7 and 2026.10.9) reads ``torch.cuda.mem_get_info()``
    before the engine loads, sets ``free_memory = gpu_memory_utilization * free_memory`` and ``load_vllm`` passes
    ``free_memory / total_memory`` as vLLM's gpu_memory_utilization, so vLLM's budget (util x total) is util x the
    free memory. Free then: the capacity less the fixed margin (the driver's reserve and the process's CUDA context,
    ``C.MARGIN_FIXED_BYTES``); nothing else is on the GPU, as the engine loads the model the trainer then shares. (The
    same function lowers the share where the rest, total - util x free, is under its LoRA activation estimate of two
    max_seq_length rows: over 1 GiB rest at the shares we see, above that estimate for the models we price; not
    priced.)"""
    return util * max(0.0, memory_bytes - C.MARGIN_FIXED_BYTES) / memory_bytes


# UNSLOTH_VLLM_STANDBY replaces gpu_memory_utilization with a share by the GPU's size (unsloth_zoo/vllm_utils.py
# load_vllm, vLLM >= 0.11: the tier of a tenth of the GPU's GiB, times 0.95), whatever the script asks, unless
# UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE is set: (a tenth of the GiB at least, share)
STANDBY_TIERS = ((4.0, 0.925), (2.5, 0.9), (2.0, 0.825), (1.4, 0.8), (1.0, 0.775), (0.0, 0.75))
STANDBY_HEADROOM = 0.95


def standby_utilization(memory_bytes: float) -> float:
    """The vLLM memory share Unsloth's standby mode sets on a GPU of ``memory_bytes``."""
    tenth = memory_bytes / 1024**3 * 0.1
    return next(share for floor, share in STANDBY_TIERS if tenth >= floor) * STANDBY_HEADROOM


# load_vllm sizes vLLM's prefill chunk (max_num_batched_tokens) and max_num_seqs by the memory its budget leaves
# for the KV cache after the weights (approximate_vllm_memory_usage): (GiB at most, tokens, sequences)
ENGINE_TIERS = ((2, 2048, 8), (4, 2048, 16), (8, 4096, 32), (12, 4096, 48), (16, 6144, 64), (24, 6144, 80),
                (40, 8192, 96), (48, 8192, 112), (80, 8192, 128), (float("inf"), 8192, 256))


def engine_batch(left_bytes: float) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) Unsloth gives vLLM with ``left_bytes`` for its KV cache."""
    left = left_bytes / 1024**3
    return next((tokens, seqs) for most, tokens, seqs in ENGINE_TIERS if left <= most)


# the passes whose rows Unsloth splits into chunks that fit the free memory (unsloth_zoo/rl_replacements.py
# autotune_batch_and_chunks: the most rows whose hidden states and logits take at most 80% of the free memory, called
# by grpo_accumulated_loss for the loss and by _get_per_token_logps_and_entropies for the old and reference log-probs)
AUTOTUNED = (Phase.OLD_LOG_PROB, Phase.REF, Phase.ACTOR_UPDATE)


def autotuned(plan, phase: str):
    """``plan`` with the rows of ``phase``'s pass cut to the most that fit the usable memory (one row at least: when
    that does not fit, the run does not either). The peak grows with the rows, so the most that fit are found by
    bisection: a batch of millions of rows costs ~30 estimates, not millions."""
    update = phase == Phase.ACTOR_UPDATE

    def at(b: int):
        return plan.replace(train_micro=b) if update else plan.replace(logprob_micro=b)

    def fits(b: int) -> bool:
        report = estimate_memory(at(b))
        return phase not in report.phases or report.peak(phase) <= report.usable_for(phase)

    rows = max(1, int(plan.train_micro if update else plan.logprob_micro))
    if fits(rows):
        return at(rows)
    lo, hi = 0, rows  # fits(lo) or lo == 0; not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return at(max(1, lo))


def _rewrite_batch(values: dict[str, Value], release: unsloth_versions.Release) -> None:
    """Unsloth's rewrite of per_device_train_batch_size to num_generations (unsloth/models/rl.py
    _patch_trl_rl_trainers_impl, check_num_generations, run by the generated UnslothGRPOConfig.__init__), by release
    (``unsloth_versions.Release.batch_rewrite``): 2026.10.9, with neither generation_batch_size nor
    steps_per_generation set, where gradient_accumulation_steps*WORLD_SIZE*per_device_train_batch_size is not a
    multiple of num_generations; 2025.9.6, wherever per_device_train_batch_size is not a multiple of it."""
    b, ga, g = (int(values.get(k) or 1) for k in ("per_device_train_batch_size", "gradient_accumulation_steps",
                                                  "num_generations"))
    if release.batch_rewrite == "not-multiple":
        if g > 0 and b % g:
            values["per_device_train_batch_size"] = g
        return
    if values.get("generation_batch_size") is not None or values.get("steps_per_generation") is not None:
        return
    world = int(values.get("gpus_per_node") or 1) * int(values.get("nnodes") or 1)
    if g > 0 and (ga * world * b) % g:
        values["per_device_train_batch_size"] = g


__all__ = ["UnslothFramework", "unsloth_values"]


# from_pretrained's max_seq_length as an engineer writes it: a multiple of this many tokens. Unsloth accepts any
# count (unsloth/models/loader.py FastLanguageModel.from_pretrained passes it on; vLLM's max_model_len takes any
# integer), and itself sizes vLLM's token budget in 256s (unsloth_zoo/vllm_utils.py
# approximate_vllm_memory_usage: "Round by 256"); its notebooks set 1024 or 2048
SEQ_LENGTH_STEP = 256


def seq_length_options(need: int) -> tuple[int, ...]:
    """The max_seq_length values fix may give a run whose longest prompt + completion is ``need`` tokens: the least
    multiple of ``SEQ_LENGTH_STEP`` that holds it, the least multiple of 1024, and the least power of two (at least
    ``SEQ_LENGTH_STEP``): 1300 -> 1536, 2048; 1280 -> 1280, 2048; smallest first."""
    def up(step: int) -> int:
        return -(-need // step) * step

    return tuple(sorted({up(SEQ_LENGTH_STEP), up(1024), max(SEQ_LENGTH_STEP, 1 << max(0, need - 1).bit_length())}))
