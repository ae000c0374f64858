"""Time and measure on one GPU a LoRA training micro batch against the same model trained in full.

    python benchmarks/gpu_lora_probe.py                                   # qwen2.5-1.5b, rank 32, all-linear
    python benchmarks/gpu_lora_probe.py --model qwen2.5-7b --rank 64 --json lora.json

What it answers: how much of a full fine-tune's forward + backward a LoRA micro batch costs (a frozen base layer
needs the gradient of its input but not of its weight: torch's autograd computes only the gradients an input
requires, so one of the backward's two GEMMs per linear layer is skipped), and what a LoRA micro batch holds at its
peak against our activation terms with ``Plan.lora_params`` set (``gpu_step_probe.Model.update_bytes``, memory.py ``_activations``: the norms' inputs are
not kept when the norm weights are frozen). Two ways of holding the adapters are measured, the two the frameworks
use: ``bf16`` (the adapters in the base's dtype, as under verl's FSDP mixed precision, which computes in bf16) and
``fp32+autocast`` (peft's default: adapters kept in fp32 over a bf16 base, the pass under torch.autocast bf16, as
TRL and ms-swift run under accelerate's bf16 mixed precision).

Needs torch, transformers and peft; nothing is downloaded (random weights from one of our cards, as
``gpu_step_probe.py`` builds them). Each row prints measured against the full fine-tune's measured time (the ratio
is what a LoRA update costs of a full one) and the peak bytes above the weights and gradients against ours.
CI never runs it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpu_step_probe import Model, _sizes, build, timed  # noqa: E402


def probe(args) -> list[dict]:
    import torch
    from peft import LoraConfig, get_peft_model

    from rlbatch_solver.catalog.models import load_model

    card = load_model(args.model)
    ours_of = Model(card, args.gpu)
    rows: list[dict] = []
    sizes = _sizes(args.sizes, 2)

    def peak_above(fn) -> float:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return float(torch.cuda.max_memory_allocated() - base)

    def measure(model, mode: str, lora: int, autocast: bool) -> None:
        model.train()
        for batch, seq in sizes:
            x = torch.randint(0, card.vocab_size, (batch, seq), device="cuda")

            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                    loss = model(input_ids=x, labels=x, use_cache=False).loss
                loss.backward()
                model.zero_grad(set_to_none=False)  # gradients stay allocated: the peak above is the pass's

            for ckpt in (False, True):
                if ckpt:
                    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
                seconds = timed(step, "cuda", args.repeats)
                peak = peak_above(step)
                ours = ours_of.update_bytes(batch, seq, ckpt, lora)
                size = f"{batch}x{seq}"
                full = next((r["measured_s"] for r in rows if r["mode"] == "full" and r["size"] == size
                             and r["ckpt"] == ckpt), seconds)
                rows.append({"mode": mode, "size": size, "ckpt": ckpt, "measured_s": seconds,
                             "of_full": seconds / full, "measured_bytes": peak, "predicted_bytes": ours})
                print(f"{mode:14s} {size:9s} ckpt {ckpt!s:5s} {seconds * 1e3:9.2f} ms (x{seconds / full:4.2f} of full)"
                      f"  peak {peak / 2**30:7.2f} GiB, ours {ours / 2**30:7.2f} (x{peak / max(ours, 1.0):4.2f})",
                      flush=True)
                if ckpt:
                    model.gradient_checkpointing_disable()
            torch.cuda.empty_cache()

    model = build(card, "cuda", torch.bfloat16)
    measure(model, "full", 0, False)
    model.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()
    lora = card.lora_params(args.rank)
    for mode, autocast in (("lora bf16", False), ("lora fp32+autocast", True)):
        cfg = LoraConfig(r=args.rank, lora_alpha=args.rank, lora_dropout=0.0, target_modules="all-linear")
        try:
            peft_model = get_peft_model(model, cfg, autocast_adapter_dtype=autocast)
        except TypeError:  # peft before 0.12 has no autocast_adapter_dtype: adapters take the base's dtype
            peft_model = get_peft_model(model, cfg)
        trained = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        dtypes = sorted({str(p.dtype) for p in peft_model.parameters() if p.requires_grad})
        print(f"{mode}: {trained:,} trained parameters ({dtypes}), ours {lora:,}", flush=True)
        measure(peft_model, mode, lora, autocast)
        model = peft_model.unload()  # the base model, adapters removed, for the next mode
        model.zero_grad(set_to_none=True)
        for p in model.parameters():
            p.requires_grad_(True)
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-1.5b", help="a model card name (models/) or a card YAML file")
    ap.add_argument("--gpu", default="h100", help="the GPU type the predictions are for")
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--sizes", default="4x1024,1x4096", help="micro batches BxS (sequences x tokens), commas")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args(argv)
    try:
        import peft
        import torch
        import transformers
    except ImportError as err:
        print(f"the LoRA probe needs torch, transformers and peft: {err}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("the LoRA probe measures a GPU's time and memory: no CUDA device", file=sys.stderr)
        return 2
    rows = probe(args)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model": args.model, "gpu": args.gpu, "rank": args.rank, "device_name": torch.cuda.get_device_name(),
            "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
            "date": datetime.date.today().isoformat(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
