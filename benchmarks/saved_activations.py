"""What a Hugging Face decoder layer saves for its backward, counted on the CPU: the bytes per token per layer that
the cost model's training activations price (costmodel/memory.py model_consts, docs/cost-model.md section 2).

A model of the named architecture is built twice with random weights, with one and with two decoder layers (the
difference is one layer, whatever the embeddings, the final norm and the lm_head save), in bf16, with PyTorch's SDPA
(causal, no mask: on the CPU its flash kernel, which keeps what FlashAttention-2 keeps: q, k, v, the output and an
fp32 log-sum-exp per head and token). Every tensor autograd saves during one training forward is recorded through
``torch.autograd.graph.saved_tensors_hooks`` and counted once per storage; the weights are left out (they are
parameters, not activations).

Needs torch and transformers (not dependencies of rlbatch-solver)::

    python benchmarks/saved_activations.py --hidden 4096 --ffn 14336 --heads 32 --kv-heads 8 --tokens 512

prints the bytes per token of one layer and the same over the hidden size, beside our model's figure. Measured
(torch 2.13.0 CPU, transformers 5.24.0, Llama-3.1-8B's layer, 512 tokens): 200,840 B per token (49.0 x hidden) with
every weight trained (ours: 200,832 B); 184,456 B (45.0 x hidden) with ``--frozen-norms``, as under LoRA (ours:
184,448 B). The 4 x hidden between them is each RMSNorm's bf16 normalized input, which ``weight * x`` keeps when the
norm's weight trains (constants.py ACT_TRAINED_NORM_BYTES_PER_HIDDEN); the 8 B left is each norm's fp32 1/rms.
"""

from __future__ import annotations

import argparse
import json


def saved_bytes(layers: int, args: argparse.Namespace) -> int:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=args.hidden, intermediate_size=args.ffn, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, num_hidden_layers=layers, vocab_size=args.vocab,
                         max_position_embeddings=max(4096, args.tokens), attn_implementation="sdpa",
                         torch_dtype=torch.bfloat16)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16).train()
    for name, param in model.named_parameters():
        if args.frozen_norms and "norm" in name:
            param.requires_grad_(False)  # as under LoRA: PEFT trains the adapters only
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    ids = torch.randint(0, args.vocab, (1, args.tokens))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.model(input_ids=ids).last_hidden_state.float().sum()
    return sum(seen.values())


def ours(args: argparse.Namespace) -> int:
    """Our training activation bytes per token of the same layer (costmodel/memory.py model_consts), with the
    trained norms' bf16 inputs unless ``--frozen-norms`` (costmodel/memory.py _activations)."""
    from rlbatch_solver.catalog.models import from_hf_config
    from rlbatch_solver.costmodel.memory import model_consts

    card = from_hf_config({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": args.hidden,
                           "intermediate_size": args.ffn, "num_attention_heads": args.heads,
                           "num_key_value_heads": args.kv_heads, "num_hidden_layers": 1, "vocab_size": args.vocab,
                           "max_position_embeddings": max(4096, args.tokens), "tie_word_embeddings": False},
                          "saved-activations")
    mc = model_consts(card)
    return mc.act_max_layer + (0 if args.frozen_norms else mc.act_trained_norms)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--ffn", type=int, default=14336)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=1024)  # the layers' bytes do not depend on it
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--frozen-norms", action="store_true",
                        help="RMSNorm weights frozen (LoRA): the weight's multiply then keeps no bf16 input")
    return parser.parse_args(argv)


def measure(args: argparse.Namespace) -> dict:
    per_token = (saved_bytes(2, args) - saved_bytes(1, args)) / args.tokens
    mine = ours(args)
    return {"tokens": args.tokens, "frozen_norms": args.frozen_norms, "saved_bytes_per_token_per_layer": per_token,
            "per_hidden": per_token / args.hidden, "ours_bytes_per_token_per_layer": mine,
            "ours_per_hidden": mine / args.hidden}


def main(argv: list[str] | None = None) -> None:
    print(json.dumps(measure(parse(argv)), indent=1))


if __name__ == "__main__":
    main()
