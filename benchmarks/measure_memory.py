"""Measured against predicted: peak GPU memory of a training micro-step and a log-prob forward.

    pip install torch transformers      # not dependencies of the tool; this script only
    python benchmarks/measure_memory.py --model qwen2.5-0.5b --micro 2 --seq 2048 [--grad-ckpt]

Builds a model with random weights from one of our model cards with
``transformers`` (``AutoConfig.for_model`` + ``from_config``: nothing is
downloaded), on one GPU, laid out as verl's FSDP actor lays it out on one rank
without sharding: fp32 parameters, bf16 compute (autocast), fp32 gradients,
AdamW's two fp32 states. It then measures, with
``torch.cuda.max_memory_allocated``:

* log-prob forward: ``no_grad`` forward of ``micro`` sequences of ``seq``
  tokens, log-probs of the labels and the entropy from the logits;
* training micro-step: forward, backward and one AdamW step, with or without
  gradient checkpointing (``--grad-ckpt``).

and prints each next to the cost model's terms for the same plan (1 GPU, the
same micro batch and length), term by term where they can be separated:
model states (measured after one optimizer step) and the peak above them.

Without a CUDA device it builds the same model on the CPU, runs both passes once
to show the script works, and prints the predictions with "no CUDA device:
nothing measured". Results of runs on real GPUs are recorded in
docs/cost-model.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlbatch_solver.catalog.gpus import load_gpu  # noqa: E402
from rlbatch_solver.catalog.models import load_model  # noqa: E402
from rlbatch_solver.costmodel.memory import estimate_memory  # noqa: E402
from rlbatch_solver.frameworks import get_framework  # noqa: E402

GIB = 2**30
AR = "actor_rollout_ref"


def hf_config(card, torch_dtype: str = "float32"):
    """A transformers config with the card's architecture numbers."""
    from transformers import AutoConfig

    kw = dict(
        num_hidden_layers=card.num_hidden_layers, hidden_size=card.hidden_size,
        num_attention_heads=card.num_attention_heads, num_key_value_heads=card.num_key_value_heads,
        head_dim=card.head_dim, intermediate_size=card.intermediate_size, vocab_size=card.vocab_size,
        tie_word_embeddings=card.tie_word_embeddings, max_position_embeddings=max(card.max_position_embeddings, 4096),
    )
    model_type = card.model_type if card.model_type in ("qwen2", "qwen3", "llama", "mistral") else "llama"
    return AutoConfig.for_model(model_type, **kw)


def predicted(card, gpu_name: str, micro: int, seq: int, grad_ckpt: bool) -> dict[str, dict[str, float]]:
    """Our terms (GiB) for one GPU running this micro batch, through verl's own plan builder."""
    fw = get_framework("verl")
    prompt = seq // 2
    values = fw.to_values({
        "data.train_batch_size": micro, "data.max_prompt_length": prompt, "data.max_response_length": seq - prompt,
        f"{AR}.rollout.n": 1, f"{AR}.actor.ppo_mini_batch_size": micro,
        f"{AR}.actor.ppo_micro_batch_size_per_gpu": micro, f"{AR}.rollout.log_prob_micro_batch_size_per_gpu": micro,
        f"{AR}.model.enable_gradient_checkpointing": grad_ckpt, f"{AR}.model.use_remove_padding": True,
        "algorithm.adv_estimator": "grpo", "trainer.n_gpus_per_node": 1, "trainer.nnodes": 1,
    }, gpus=1, model=card)
    spec = fw.cost_spec(card, load_gpu(gpu_name))
    out = {}
    for phase in ("old_log_prob", "actor_update"):
        report = estimate_memory(spec.plan(values, phase))
        out[phase] = {term: b / GIB for term, b in report.phases[phase].items()}
    return out


def measure(card, micro: int, seq: int, grad_ckpt: bool) -> dict[str, float] | None:
    import torch
    from transformers import AutoModelForCausalLM

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config(card)).to(device)  # random fp32 weights
    if grad_ckpt:
        model.gradient_checkpointing_enable()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    ids = torch.randint(0, card.vocab_size, (micro, seq), device=device)
    dtype = torch.bfloat16

    def logprob_pass() -> None:
        with torch.no_grad(), torch.autocast(device, dtype=dtype):
            logits = model(input_ids=ids).logits
            logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids.unsqueeze(-1))
            p = torch.softmax(logits.float(), dim=-1)
            entropy = torch.logsumexp(logits.float(), dim=-1) - (p * logits.float()).sum(-1)
            del logp, entropy, p, logits

    def train_pass() -> None:
        model.train()
        with torch.autocast(device, dtype=dtype):
            logits = model(input_ids=ids).logits
        loss = -torch.log_softmax(logits.float(), dim=-1).gather(-1, ids.unsqueeze(-1)).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # keep fp32 grads allocated, as the next micro batch would
        del logits, loss

    train_pass()  # allocates gradients and AdamW states once
    if not cuda:
        logprob_pass()
        return None
    torch.cuda.synchronize()
    states = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    logprob_pass()
    lp_peak = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    train_pass()
    tr_peak = torch.cuda.max_memory_allocated()
    return {"states": states / GIB, "old_log_prob": lp_peak / GIB, "actor_update": tr_peak / GIB}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--gpu", default="h100", help="the GPU to predict for (capacity only; terms do not depend on it)")
    ap.add_argument("--micro", type=int, default=2)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--grad-ckpt", action="store_true")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        sys.exit("measure_memory needs torch and transformers: pip install torch transformers")
    card = load_model(args.model)
    pred = predicted(card, args.gpu, args.micro, args.seq, args.grad_ckpt)
    meas = measure(card, args.micro, args.seq, args.grad_ckpt)
    print(f"{card.name}: micro {args.micro} x {args.seq} tokens, grad ckpt {args.grad_ckpt}, 1 GPU")
    for phase, terms in pred.items():
        total = sum(terms.values())
        print(f"\n{phase}: predicted {total:.2f} GiB" + (f", measured {meas[phase]:.2f} GiB "
                                                         f"({(total / meas[phase] - 1) * 100:+.0f}%)" if meas else ""))
        for term, gib in sorted(terms.items(), key=lambda kv: -kv[1]):
            if gib > 0:
                print(f"  {term:40} {gib:8.2f} GiB")
    if meas:
        print(f"\nmodel states after one optimizer step (measured): {meas['states']:.2f} GiB")
    else:
        print("\nno CUDA device: nothing measured (both passes ran once on the CPU)")


if __name__ == "__main__":
    main()
