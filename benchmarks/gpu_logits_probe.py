"""Measure on one GPU the bytes per logit that each log-prob path holds at its peak, beside our constants.

    python benchmarks/gpu_logits_probe.py                     # 8192 tokens x Qwen2.5's 151,936 vocab, hidden 1536
    python benchmarks/gpu_logits_probe.py --tokens 4096 --json out.json

The [tokens, vocab] logits and what the loss builds on them are the largest single term of an RL update at long
responses (memory.py: ``_logits_forward`` / ``_logits_update``). This probe builds them from a hidden-state tensor
and an lm_head weight (no model, nothing downloaded), runs each path the frameworks use, written here from their
descriptions (the source of each is named beside it), and prints the peak bytes above the inputs, per logit, beside
the constant in rlbatch_solver/costmodel/constants.py that prices it. Needs torch only; CI never runs it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def paths(tokens: int):
    """name -> (grad?, function of (hidden, weight) returning a scalar to backward or None, our bytes per logit)."""
    import torch
    import torch.nn.functional as F

    from rlbatch_solver.costmodel import constants as C

    def logits_of(h, w):
        return h @ w.t()  # [T, V] in the weights' dtype, as an lm_head returns it

    def rowwise_logps(logits, labels):
        # a loop over sequences of log_softmax in the logits' dtype, then gather (TRL selective_log_softmax and
        # OpenRLHF log_probs_from_logits for bf16; verl logprobs_from_logits_v2): one sequence here, so one row
        return torch.gather(F.log_softmax(logits, dim=-1), -1, labels[:, None]).squeeze(-1)

    def lse_logps(logits, labels):
        # fp32 logits: gathered logit minus logsumexp (TRL/OpenRLHF's fp32 branch)
        return torch.gather(logits, -1, labels[:, None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)

    def entropy(logits):
        # softmax-weighted logits against logsumexp (verl entropy_from_logits; TRL entropy_from_logits per chunk)
        p = F.softmax(logits, dim=-1)
        return torch.logsumexp(logits, dim=-1) - (p * logits).sum(-1)

    def labels_for(h, w):
        return torch.randint(0, w.shape[0], (h.shape[0],), device=h.device)

    def bf16_logps(h, w):
        return rowwise_logps(logits_of(h, w), labels_for(h, w)).sum()

    def bf16_logps_entropy(h, w):
        logits = logits_of(h, w)
        return rowwise_logps(logits, labels_for(h, w)).sum() + entropy(logits).sum()

    def fp32_logps(h, w):
        # OpenRLHF Actor.forward and accelerate's convert_outputs_to_fp32 cast the logits to fp32 first
        return lse_logps(logits_of(h, w).float(), labels_for(h, w)).sum()

    def fp32_logps_entropy(h, w):
        logits = logits_of(h, w).float()
        return lse_logps(logits, labels_for(h, w)).sum() + entropy(logits).sum()

    def hf_labels_loss(h, w):
        # transformers loss_utils ForCausalLMLoss: logits.float() then cross_entropy
        return F.cross_entropy(logits_of(h, w).float(), labels_for(h, w))

    def no_grad(fn):
        def run(h, w):
            with torch.no_grad():
                fn(h, w)
            return None
        return run

    # verl's FSDP engine (constants.py "verl-fsdp"): the model runs under autocast(bf16), so softmax and logsumexp
    # work in fp32 on bf16 logits; entropy eager, wrapped in torch.compile (use_torch_compile, the default) or in
    # chunks of ENTROPY_CHUNK_ROWS rows (entropy_from_logits_with_chunking)
    compiled_entropy = torch.compile(entropy, dynamic=True)

    def chunked_entropy(logits):
        rows = C.ENTROPY_CHUNK_ROWS
        return torch.cat([entropy(logits[i:i + rows].float()) for i in range(0, logits.shape[0], rows)])

    def verl(fn):
        def run(h, w):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=h.is_cuda):
                return fn(logits_of(h, w)).sum()
        return run

    fns = {"forward: bf16 logits only": (False, no_grad(lambda h, w: logits_of(h, w))),
           "forward: bf16 row log_softmax": (False, no_grad(bf16_logps)),
           "forward: bf16 + entropy": (False, no_grad(bf16_logps_entropy)),
           "forward: fp32 logsumexp": (False, no_grad(fp32_logps)),
           "update: bf16 row log_softmax": (True, bf16_logps),
           "update: bf16 + entropy": (True, bf16_logps_entropy),
           "update: fp32 logsumexp": (True, fp32_logps),
           "update: fp32 + entropy": (True, fp32_logps_entropy),
           "update: HF labels loss (fp32)": (True, hf_labels_loss),
           "verl forward: eager entropy": (False, no_grad(verl(entropy))),
           "verl forward: compiled entropy": (False, no_grad(verl(compiled_entropy))),
           "verl forward: chunked entropy": (False, no_grad(verl(chunked_entropy))),
           "verl update: eager entropy": (True, verl(entropy)),
           "verl update: compiled entropy": (True, verl(compiled_entropy)),
           "verl update: chunked entropy": (True, verl(chunked_entropy))}
    ours = ours_per_logit(tokens)
    return {name: (grad, fn, ours[name]) for name, (grad, fn) in fns.items()}


def ours_per_logit(tokens: int) -> dict[str, float]:
    """Each path's bytes per logit in our accounting (costmodel/constants.py) at ``tokens`` rows, torch not needed.
    The verl rows price the entropy's own loss as the "verl-fsdp" accounting does (memory.py _logits_forward and
    _logits_update without the cross-entropy's gradient, which the probe does not compute): the bf16 logits and the
    entropy's extra."""
    from rlbatch_solver.costmodel import constants as C

    upd = C.LOGITS_UPDATE_BYTES_PER_LOGIT
    base = C.LOGITS_BF16_BYTES_PER_LOGIT
    chunk = min(tokens, C.ENTROPY_CHUNK_ROWS) / tokens * C.ENTROPY_CHUNK_BYTES_PER_LOGIT
    return {
        "forward: bf16 logits only": C.LOGITS_BF16_BYTES_PER_LOGIT,
        "forward: bf16 row log_softmax": C.LOGITS_FWD_BYTES_PER_LOGIT,
        "forward: bf16 + entropy": C.ENTROPY_FWD_BYTES_PER_LOGIT,
        "forward: fp32 logsumexp": C.LOGIT_BYTES["openrlhf-0.5-packed"][0],  # one whole-tensor logsumexp: 0.5.9 packed
        "update: bf16 row log_softmax": upd,
        "update: bf16 + entropy": upd + C.ENTROPY_FWD_BYTES_PER_LOGIT - C.LOGITS_FWD_BYTES_PER_LOGIT,
        "update: fp32 logsumexp": C.LOGIT_BYTES["swift-ddp"][2],  # TRL's selective_log_softmax on fp32 logits
        "update: fp32 + entropy": C.LOGIT_BYTES["openrlhf"][3],
        "update: HF labels loss (fp32)": C.LOGIT_BYTES["hf-labels"][2],
        "verl forward: eager entropy": base + C.ENTROPY_EAGER_FWD_EXTRA_BYTES_PER_LOGIT,
        "verl forward: compiled entropy": base + C.ENTROPY_COMPILED_FWD_EXTRA_BYTES_PER_LOGIT,
        "verl forward: chunked entropy": base + chunk,
        "verl update: eager entropy": base + C.ENTROPY_EAGER_UPDATE_EXTRA_BYTES_PER_LOGIT,
        "verl update: compiled entropy": base + C.ENTROPY_COMPILED_UPDATE_EXTRA_BYTES_PER_LOGIT,
        "verl update: chunked entropy": base + C.ENTROPY_CHUNKED_UPDATE_EXTRA_BYTES_PER_LOGIT + chunk,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--hidden", type=int, default=1536)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args(argv)
    import torch

    cuda = args.device.startswith("cuda")
    h = torch.randn(args.tokens, args.hidden, device=args.device, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(args.vocab, args.hidden, device=args.device, dtype=torch.bfloat16, requires_grad=True) * 0.02
    w = w.detach().requires_grad_(True)
    logits = float(args.tokens * args.vocab)
    weight_grad = float(args.vocab * args.hidden * 2)
    rows = []
    for name, (grad, fn, ours) in paths(args.tokens).items():
        if cuda and "compiled" in name:
            fn(h, w)  # compile outside the measured peak
            h.grad = w.grad = None
        h.grad = w.grad = None
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() if cuda else 0
        out = fn(h, w)
        if grad:
            out.backward()
        del out
        peak = float(torch.cuda.max_memory_allocated() - base) if cuda else 0.0
        per_logit = (peak - (weight_grad if grad else 0.0)) / logits
        rows.append({"path": name, "peak_bytes": peak, "bytes_per_logit": per_logit, "ours_per_logit": ours})
        print(f"{name:34s} peak {peak / 2**30:7.2f} GiB  {per_logit:6.2f} B/logit  ours {ours:5.1f}  "
              f"(x{per_logit / ours:4.2f})", flush=True)
    if args.json:
        name = torch.cuda.get_device_name() if cuda else args.device
        Path(args.json).write_text(json.dumps({"tokens": args.tokens, "vocab": args.vocab, "hidden": args.hidden,
                                               "device_name": name, "torch": torch.__version__,
                                               "date": datetime.date.today().isoformat(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
