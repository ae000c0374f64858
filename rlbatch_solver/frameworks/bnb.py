"""A bitsandbytes-quantized frozen base (QLoRA) as cost-model inputs, one definition for every trainer that loads
one through transformers' ``BitsAndBytesConfig`` (TRL's ``--load_in_4bit`` / ``--load_in_8bit``, ms-swift's
``--quant_method bnb --quant_bits 4|8``; docs/cost-model.md "QLoRA").

The values it reads: ``load_bits`` (4, 8; 16: not quantized), ``nested_quant`` (``bnb_4bit_use_double_quant``) and
``engine_load_bits`` (4: the colocated vLLM engine quantizes the checkpoint itself while loading it; 16: it loads
the 16-bit checkpoint).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from ..costmodel import constants as C
from ..costmodel.tables import CostSpec

QUANT_INPUTS = ["load_bits", "nested_quant", "engine_load_bits"]


def bnb_bytes_per_weight(bits: int, double_quant: bool) -> float:
    """Bytes per decoder weight of a base bitsandbytes loads at ``bits`` (0.0: not quantized): NF4 (or FP4: the same
    4-bit codes and blockwise absmax) with double quantization (constants.NF4_BYTES) or without
    (constants.NF4_PLAIN_BYTES), LLM.int8 (constants.INT8_BYTES)."""
    if bits == 4:
        return C.NF4_BYTES if double_quant else C.NF4_PLAIN_BYTES
    return C.INT8_BYTES if bits == 8 else 0.0


def quantized_base_bytes_per_weight(values: Mapping[str, Any]) -> float:
    """``bnb_bytes_per_weight`` of a config's cost values (``load_bits``, ``nested_quant``)."""
    return bnb_bytes_per_weight(int(values.get("load_bits") or 16), bool(values.get("nested_quant")))


def engine_bytes_per_weight(values: Mapping[str, Any]) -> float:
    """Bytes per decoder weight of a vLLM engine that loads the 16-bit checkpoint with in-flight bitsandbytes 4-bit
    quantization (``engine_load_bits`` 4; 0.0 otherwise). vLLM's loader quantizes each linear weight to NF4 with
    double quantization (model_executor/model_loader/bitsandbytes_loader.py ``_unquantized_generator``:
    ``quantize_4bit(..., compress_statistics=True, quant_type="nf4")``) and then undoes the double quantization of the
    constants while loading (``dequantize_dq``: "This comes at the cost of increased memory usage"), so one fp32
    absmax per 64 weights stays: constants.NF4_PLAIN_BYTES."""
    return C.NF4_PLAIN_BYTES if int(values.get("engine_load_bits") or 16) == 4 else 0.0


def quantized_cost_spec(spec: CostSpec) -> CostSpec:
    """``spec`` with a LoRA run's frozen base priced at its bitsandbytes bytes (``Plan.base_weight_bytes``: the base
    stays quantized and frozen, only the adapter trains; every phase reads those weights, transformers' generate too)
    and a colocated vLLM engine that quantizes its own copy at its bytes (``Plan.engine_base_bytes``)."""
    plan_of = spec.plan

    def plan(values: Mapping[str, Any], phase: str) -> Any:
        p = plan_of(values, phase)
        per_weight = quantized_base_bytes_per_weight(values)
        if per_weight and p.lora_params:
            p = p.replace(base_weight_bytes=per_weight, bnb_eager_linears=True)
        engine = engine_bytes_per_weight(values)
        if engine and p.engine == "vllm" and not p.rollout_gpus:
            p = p.replace(engine_base_bytes=engine)
        return p

    return dataclasses.replace(
        spec, plan=plan, memory_inputs={k: list(v) + QUANT_INPUTS for k, v in spec.memory_inputs.items()},
        time_inputs={k: list(v) + QUANT_INPUTS for k, v in spec.time_inputs.items()},
        bool_names=spec.bool_names | {"nested_quant"})
