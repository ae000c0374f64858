"""Measure on one GPU what an FSDP1 LoRA update holds beyond its sharded state, at several world sizes.

    python benchmarks/gpu_lora_fsdp_probe.py                    # world sizes 1, 2, 8; LoRA and full fine-tuning
    python benchmarks/gpu_lora_fsdp_probe.py --world 2 --tokens 4096 --json out.json

verl's FSDP workers (0.4.0 ``workers/fsdp_workers.py`` ``_build_model_optimizer``) train a LoRA actor over an fp32
base: PEFT adapters on every linear layer, the input embeddings made to require grad, FSDP1 with
``use_orig_params=False``, bf16 compute (``MixedPrecision(bf16, fp32, fp32)``) and a wrap policy that gives every
trainable leaf (each ``lora_A`` / ``lora_B``) its own unit beside the decoder layers (``utils/fsdp_utils.py``
``get_fsdp_wrap_policy``), with non-reentrant activation checkpointing around each decoder layer. This probe builds
that arrangement on a randomly initialised Qwen2-shaped model (nothing downloaded) and runs forward and backward of
one packed sequence. A fake process group of ``--world`` ranks on one GPU shards exactly as that many GPUs would
(the collectives do nothing, so the numbers it computes are meaningless; the allocations are real).

It prints, per world size, the bytes the pass allocates above what was allocated before it (the sharded state, and
whatever the configurations run before it in the same process left behind: every number is a difference): if FSDP
kept gathered frozen units, or any copy per parameter, through the backward, the LoRA peak would grow with the
unsharded model and not stay the same at every world size. Measured with this script on one H100 (torch 2.11,
transformers 5.17), hidden 2048, 16 layers, 1.11e9 parameters, 8,192 tokens: the LoRA peak was 2.39-2.54 GiB above
the state at world sizes 1, 2 and 8 alike (full fine-tuning: 3.84 GiB at world size 2, and its 2.03 GiB of fp32
gradient shards stay after the step), i.e. the logits and their gradient, the checkpointed layer inputs, the root
unit (embedding + lm_head) and one or two gathered layers, as rlbatch_solver/costmodel/memory.py prices them
(docs/accuracy.md, the LoRA tuning misses). Needs torch, transformers and peft; CI never runs it.
"""

from __future__ import annotations

import argparse
import functools
import json

GIB = 2**30


def _model(hidden: int, layers: int, lora: bool):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                      num_attention_heads=16, num_key_value_heads=2, vocab_size=32000, tie_word_embeddings=False)
    cfg._attn_implementation = "sdpa"
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(cfg).float()  # the actor's fp32 base
    if lora:
        from peft import LoraConfig, get_peft_model

        model.enable_input_require_grads()
        model = get_peft_model(model, LoraConfig(r=32, lora_alpha=32, target_modules="all-linear",
                                                 task_type="CAUSAL_LM"))
    return model


def _wrap(model, lora: bool):
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import _or_policy, lambda_auto_wrap_policy, transformer_auto_wrap_policy
    from torch.utils.checkpoint import checkpoint
    from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer

    def trainable_leaf(module) -> bool:
        weight = getattr(module, "weight", None)
        return not list(module.children()) and weight is not None and weight.requires_grad

    policies = [functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Qwen2DecoderLayer})]
    if lora:
        policies.insert(0, functools.partial(lambda_auto_wrap_policy, lambda_fn=trainable_leaf))
    fsdp = FullyShardedDataParallel(model, use_orig_params=False, device_id=torch.cuda.current_device(),
                                    auto_wrap_policy=functools.partial(_or_policy, policies=policies),
                                    sharding_strategy=ShardingStrategy.FULL_SHARD, forward_prefetch=False,
                                    mixed_precision=MixedPrecision(torch.bfloat16, torch.float32, torch.float32))

    class Checkpointed(torch.nn.Module):
        """The checkpoint around the FSDP unit, as transformers 4.51's decoder loop applies it."""

        def __init__(self, unit):
            super().__init__()
            self.unit = unit

        def forward(self, *args, **kwargs):
            return checkpoint(self.unit, *args, use_reentrant=False, **kwargs)

    layers = next(m for m in fsdp.modules() if isinstance(m, torch.nn.ModuleList))
    for i in range(len(layers)):
        layers[i] = Checkpointed(layers[i])
    return fsdp


def measure(world: int, lora: bool, tokens: int, hidden: int, layers: int, steps: int = 2) -> list[dict]:
    """One row per step: GiB above what was allocated before the pass, after forward, at the peak and after the step."""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    fsdp = _wrap(_model(hidden, layers, lora), lora)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    ids = torch.randint(0, 1000, (1, tokens), device="cuda")
    pos = torch.arange(tokens, device="cuda")[None]
    rows = []
    for step in range(steps):
        torch.cuda.reset_peak_memory_stats()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fsdp(input_ids=ids, position_ids=pos, use_cache=False)
        after_forward = torch.cuda.memory_allocated()
        out.logits[..., :4].float().sum().backward()
        del out
        torch.cuda.synchronize()
        rows.append({"world": world, "lora": lora, "step": step, "allocated_before_gib": base / GIB,
                     "after_forward_gib": (after_forward - base) / GIB,
                     "peak_gib": (torch.cuda.max_memory_allocated() - base) / GIB,
                     "after_step_gib": (torch.cuda.memory_allocated() - base) / GIB})
    dist.destroy_process_group()
    del fsdp
    torch.cuda.empty_cache()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=int, nargs="+", default=[1, 2, 8])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rows = [row for world in a.world for lora in (True, False)
            for row in measure(world, lora, a.tokens, a.hidden, a.layers)]
    for r in rows:
        print(f"world {r['world']} {'LoRA' if r['lora'] else 'full'} step {r['step']}: "
              f"{r['allocated_before_gib']:.2f} GiB allocated before; above it: after forward {r['after_forward_gib']:.2f}, "
              f"peak {r['peak_gib']:.2f}, after the step {r['after_step_gib']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
