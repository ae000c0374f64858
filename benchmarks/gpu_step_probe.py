"""Time on one GPU what the step-time model prices, and print measured against predicted.

    python benchmarks/gpu_step_probe.py                       # qwen2.5-1.5b on the GPU named by --gpu (h100)
    python benchmarks/gpu_step_probe.py --model qwen2.5-7b --skip-train --gpu h200

Needs torch and transformers only: the model is built with random weights from one of our model cards
(``models/*.yaml``, or a card file), nothing is downloaded, no inference engine is used. Terms timed, each beside
the cost model's own formula for it (rlbatch_solver/costmodel/time.py):

- ``train``: forward + backward of one micro batch of B sequences of S tokens (``_pass_time``, FLOPs x3, no
  gradient checkpointing, one GPU: no FSDP gathers), derived and times the fitted ``train_scale``;
- ``forward``: the same micro batch, forward only, no grad (the log-prob pass: FLOPs x1, ``forward_scale``);
- ``optimizer``: one AdamW step over every parameter, fp32 states (``ADAM_BYTES_PER_PARAM`` over HBM);
- ``prefill`` and ``decode``: Hugging Face ``generate`` of B prompts of P tokens, N new tokens each, sampled, eager
  (``_hf_generate``: ``hf_prefill_seconds`` and ``hf_decode_step_seconds`` at mean context P + N/2);
  one decode step is (time of N tokens - time of 1 token) / (N - 1).

Each line prints measured / predicted; ``--json FILE`` writes every row. The default sizes (a 1.5B model, micro
batches up to 8K tokens, generations up to 256 x 64 tokens, one warm-up and 3 timed repeats each) are sized to
finish in about a minute on one H200 (benchmarks/results/ holds what it measured there, docs/accuracy.md the table). ``tests/test_gpu_step_probe.py`` runs it on the
CPU with a tiny card and tiny sizes (skipped where torch is absent; CI never needs a GPU).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_TRAIN = "1x512,4x1024,8x1024,2x4096,1x8192"
DEFAULT_DECODE = "1x256x64,16x256x64,64x256x64,256x256x64"


def _sizes(text: str, parts: int) -> list[tuple[int, ...]]:
    out = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        try:
            nums = tuple(int(x) for x in item.lower().split("x"))
        except ValueError:
            nums = ()
        if len(nums) != parts or min(nums) < 1:
            raise SystemExit(f"bad size {item!r}: expected {parts} positive integers joined by 'x'")
        out.append(nums)
    return out


# ----------------------------------------------------------------------------- predictions (our cost model)
def _plan(card, gpu, batch: int, prompt: int, response: int):
    from rlbatch_solver.costmodel.plan import Plan

    return Plan(model=card, gpu=gpu, n_gpus=1, gpus_per_node=1, prompt_len=prompt, response_len=response,
                samples_per_step=batch, mini_batches=1, train_micro=batch, train_token_budget=None,
                logprob_micro=batch, logprob_token_budget=None, sp=1, shard_degree=1, zero_stage=0,
                grad_ckpt=False, param_offload=False, optimizer_offload=False, remove_padding=False,
                entropy_chunking=False, entropy_checkpointing=False, need_ref=False, need_critic=False,
                critic_micro=batch, engine="hf", rollout_tp=1, gpu_memory_utilization=0.5, free_cache_engine=False,
                enforce_eager=True, max_num_seqs=batch, max_num_batched_tokens=batch * max(1, prompt))


class Model:
    """The cost model's prediction of each probed term (derived, and with the fitted constant that scales it)."""

    def __init__(self, card, gpu_name: str):
        from rlbatch_solver.catalog.gpus import load_gpu
        from rlbatch_solver.costmodel.memory import model_consts

        self.card, self.gpu = card, load_gpu(gpu_name)
        self.mc = model_consts(card)

    def passes(self, batch: int, seq: int, mult: float) -> float:
        from rlbatch_solver.costmodel import time as T

        plan = _plan(self.card, self.gpu, batch, seq, 0)
        mfu = plan.efficiency.mfu_train if mult > 1 else plan.efficiency.mfu_forward
        seconds, _ = T._pass_time(plan, self.mc, self.mc.params, self.mc.active, batch, batch, None, mult, mfu, 0.0)
        return seconds

    def optimizer(self) -> float:
        from rlbatch_solver.costmodel import constants as C

        return C.ADAM_BYTES_PER_PARAM * self.mc.params / (float(self.gpu.hbm_bandwidth_gbps) * 1e9
                                                          * C.HBM_EFF_OPTIMIZER)

    def prefill(self, batch: int, prompt: int) -> float:
        from rlbatch_solver.costmodel import time as T

        return T.hf_prefill_seconds(_plan(self.card, self.gpu, batch, prompt, 1), self.mc, batch, prompt)

    def decode_step(self, batch: int, prompt: int, new: int) -> float:
        from rlbatch_solver.costmodel import constants as C
        from rlbatch_solver.costmodel import time as T

        kv = float(self.card.kv_bytes_per_token(1, C.KV_DTYPE_BYTES))
        return T.hf_decode_step_seconds(_plan(self.card, self.gpu, batch, prompt, new), self.mc, batch,
                                        prompt + new / 2.0, kv)

    def update_bytes(self, batch: int, seq: int, ckpt: bool, lora: int = 0) -> float:
        """Activations and logits bytes at the peak of one training micro batch (memory.py's update terms); ``lora``:
        the adapters' parameter count of a LoRA update (``Plan.lora_params``; 0: a full fine-tune)."""
        from rlbatch_solver.costmodel import memory as M

        # the probe's loss is transformers' labels loss: fp32 logits and their gradients, as "hf-labels" counts them
        plan = _plan(self.card, self.gpu, batch, seq, 0).replace(logits_impl="hf-labels", lora_params=lora)
        tokens = float(batch * seq)
        logits = M._logits_update(plan, self.mc, tokens)
        return M._activations(plan, self.mc, tokens, ckpt, logits) + logits

    def forward_bytes(self, batch: int, seq: int) -> float:
        """A no-grad forward's activations and logits (memory.py's log-prob terms, no entropy)."""
        from rlbatch_solver.costmodel import memory as M

        # the probe's forward returns the bf16 logits only, as "verl-fsdp" counts them without entropy
        plan = _plan(self.card, self.gpu, batch, seq, 0).replace(logits_impl="verl-fsdp")
        tokens = float(batch * seq)
        logits = M._logits_forward(plan, self.mc, tokens, False)
        return M._forward_activations(plan, self.mc, tokens, logits) + logits

    @property
    def scales(self) -> dict[str, float]:
        from rlbatch_solver.costmodel.efficiency import DEFAULT_EFFICIENCY as E

        # generate is the trained model's own (engine "hf"), which the fitted rollout scale does not touch
        # (costmodel/time.py estimate_time: the scale is fitted to inference engines' rows); nor does train_scale
        # touch the optimizer step (costmodel/time.py PassSeconds)
        return {"train": E.train_scale, "forward": E.forward_scale, "optimizer": 1.0,
                "prefill": 1.0, "decode": 1.0}


# ----------------------------------------------------------------------------- measurements (torch)
def build(card, device: str, dtype):
    """A causal LM of the card's architecture with random weights (transformers' config class for its model_type)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if getattr(card, "num_experts", 0):
        raise SystemExit(f"{card.name} is a mixture of experts: the probe builds dense models only")
    keys = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
            "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings")
    config = AutoConfig.for_model(card.model_type, **{k: getattr(card, k) for k in keys if getattr(card, k, None)})
    config.use_cache = True
    torch.manual_seed(0)
    with torch.device(device):
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)  # transformers >= 4.56
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    return model.eval()


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str, repeats: int, warmup: int = 1) -> float:
    """The median seconds of ``repeats`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    _sync(device)
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        _sync(device)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def probe(args) -> list[dict]:
    import torch

    from rlbatch_solver.catalog.models import load_model

    card = load_model(args.model)
    ours = Model(card, args.gpu)
    dtype = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    model = build(card, args.device, dtype)
    vocab = card.vocab_size
    rows: list[dict] = []

    def row(term: str, size: str, measured: float, predicted: float) -> None:
        scaled = predicted * ours.scales[term]
        rows.append({"term": term, "size": size, "measured_s": measured, "predicted_s": predicted,
                     "predicted_fitted_s": scaled})
        print(f"{term:9s} {size:14s} measured {measured * 1e3:10.2f} ms  predicted {predicted * 1e3:10.2f} ms "
              f"(x{measured / predicted:5.2f})  with fitted scale {scaled * 1e3:10.2f} ms "
              f"(x{measured / scaled:5.2f})", flush=True)

    def mem_row(term: str, size: str, measured: float, predicted: float) -> None:
        rows.append({"term": term, "size": size, "measured_bytes": measured, "predicted_bytes": predicted})
        print(f"{term:9s} {size:14s} measured {measured / 2**30:8.2f} GiB  predicted {predicted / 2**30:8.2f} GiB "
              f"(x{measured / max(predicted, 1.0):5.2f})", flush=True)

    def peak_above(fn) -> float:
        """Bytes allocated at the peak of ``fn`` above what was allocated before it (CUDA only)."""
        if not args.device.startswith("cuda"):
            return 0.0
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return float(torch.cuda.max_memory_allocated() - base)

    def ids(batch: int, seq: int):
        return torch.randint(0, vocab, (batch, seq), device=args.device)

    for batch, seq in _sizes(args.train_sizes, 2):
        x = ids(batch, seq)
        with torch.no_grad():
            fwd = timed(lambda: model(input_ids=x, use_cache=False).logits, args.device, args.repeats)
        row("forward", f"{batch}x{seq}", fwd, ours.passes(batch, seq, 1.0))
        if args.device.startswith("cuda"):
            def fwd_once():
                with torch.no_grad():
                    model(input_ids=x, use_cache=False).logits
            mem_row("mem-fwd", f"{batch}x{seq}", peak_above(fwd_once), ours.forward_bytes(batch, seq))
        if args.skip_train:
            continue
        model.train()

        def step():
            model(input_ids=x, labels=x, use_cache=False).loss.backward()
            model.zero_grad(set_to_none=True)

        row("train", f"{batch}x{seq}", timed(step, args.device, args.repeats), ours.passes(batch, seq, 3.0))
        if args.device.startswith("cuda"):
            # gradients kept allocated (zeroed, not freed), so the peak above the start is activations and logits
            def keep_grads_step():
                model(input_ids=x, labels=x, use_cache=False).loss.backward()
                model.zero_grad(set_to_none=False)

            keep_grads_step()
            mem_row("mem-train", f"{batch}x{seq}", peak_above(keep_grads_step), ours.update_bytes(batch, seq, False))
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            mem_row("mem-ckpt", f"{batch}x{seq}", peak_above(keep_grads_step), ours.update_bytes(batch, seq, True))
            model.gradient_checkpointing_disable()
            model.zero_grad(set_to_none=True)
        model.eval()
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()

    if not args.skip_train and not args.skip_optimizer:
        # fp32 parameters, gradients and AdamW states (what ADAM_BYTES_PER_PARAM counts), on a copy of the weights
        master = [torch.nn.Parameter(p.detach().float()) for p in model.parameters()]
        for p in master:
            p.grad = torch.zeros_like(p)
        opt = torch.optim.AdamW(master, lr=1e-6, foreach=True)
        row("optimizer", "all params", timed(opt.step, args.device, args.repeats), ours.optimizer())
        del opt, master
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()

    for batch, prompt, new in _sizes(args.decode_sizes, 3):
        x = ids(batch, prompt)
        mask = torch.ones_like(x)

        def gen(n: int):
            with torch.no_grad():
                model.generate(input_ids=x, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=True,
                               top_k=0, top_p=1.0, temperature=1.0, pad_token_id=0)

        one = timed(lambda: gen(1), args.device, args.repeats)
        full = timed(lambda: gen(new), args.device, args.repeats)
        row("prefill", f"{batch}x{prompt}", one, ours.prefill(batch, prompt))
        row("decode", f"{batch}x{prompt}+{new}", max(1e-9, (full - one) / max(1, new - 1)),
            ours.decode_step(batch, prompt, new))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-1.5b", help="a model card name (models/) or a card YAML file")
    ap.add_argument("--gpu", default="h100", help="the GPU type the predictions are for (rlbatch catalog gpus)")
    ap.add_argument("--device", default="cuda", help="torch device (cpu for a smoke test)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--train-sizes", default=DEFAULT_TRAIN, help="micro batches BxS (sequences x tokens), commas")
    ap.add_argument("--decode-sizes", default=DEFAULT_DECODE, help="generations BxPxN (batch x prompt x new tokens)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-train", action="store_true", help="forward and generate only (models too large to train)")
    ap.add_argument("--skip-optimizer", action="store_true", help="no AdamW step (its fp32 states need 16 B/param)")
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as err:
        print(f"the probe needs torch and transformers: {err}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    rows = probe(args)
    print(f"{len(rows)} terms in {time.perf_counter() - start:.0f} s on {args.device} (predicted for {args.gpu})")
    if args.json:
        import torch
        import transformers

        name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
        Path(args.json).write_text(json.dumps({"model": args.model, "gpu": args.gpu, "device": args.device,
                                               "device_name": name, "torch": torch.__version__,
                                               "transformers": transformers.__version__,
                                               "date": datetime.date.today().isoformat(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
