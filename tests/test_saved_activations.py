"""benchmarks/saved_activations.py on the CPU with a tiny Llama layer (skipped where torch or transformers is absent:
neither is a dependency of the project): what autograd saves per token per layer is what model_consts prices, with
the RMSNorm weights frozen (LoRA); training them adds each norm's bf16 input (docs/cost-model.md, section 9.4a)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("saved_activations", ROOT / "benchmarks" / "saved_activations.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["saved_activations"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_saved_activations_of_a_layer_are_what_we_price():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    bench = _bench()
    size = ["--hidden", "64", "--ffn", "160", "--heads", "4", "--kv-heads", "2", "--tokens", "32"]
    lora = bench.measure(bench.parse([*size, "--frozen-norms"]))
    full = bench.measure(bench.parse(size))
    rsqrt = 2 * 4  # each RMSNorm's fp32 1/rms per token, which we do not count
    assert lora["saved_bytes_per_token_per_layer"] == lora["ours_bytes_per_token_per_layer"] + rsqrt
    # trained norm weights: `weight * x` keeps x (bf16, hidden wide) in both norms
    assert full["saved_bytes_per_token_per_layer"] == lora["saved_bytes_per_token_per_layer"] + 2 * 2 * 64
    assert full["saved_bytes_per_token_per_layer"] == full["ours_bytes_per_token_per_layer"] + rsqrt
