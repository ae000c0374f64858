"""What ``rlbatch fix`` may change in each framework, and in which order.

``ranks``: rule-variable name -> 0..9, smaller is tried first when two repairs
change equally many keys by equal amounts. The verl order follows the seed
guide's out-of-memory advice ("lower gpu_memory_utilization, lower micro, lower
log-prob micro, lower train and mini together", then the memory features:
gradient checkpointing, entropy chunking, offload); the deprecated global
micro sizes come last, since verl 0.9.1's workers need the per-GPU ones.

``rules``: variables a rule-only repair may change (batch and parallel sizes).
``memory``: knobs added when the memory model is evaluated (``--gpu`` and
``--model`` given): they do not affect any divisibility rule, only the fit.
Everything else (GPU counts, lengths, ``n``, the algorithm, the engine) is
what the user asked for and stays; pin more with ``--keep``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RepairPolicy:
    rules: tuple[str, ...]
    memory: tuple[str, ...] = ()
    ranks: dict[str, int] = field(default_factory=dict)
    # parallel sizes: candidates are divisors of the GPU count, not neighbours
    parallel: frozenset[str] = frozenset()
    # token budgets: candidates are multiples of prompt+response
    token_budgets: frozenset[str] = frozenset()
    permille: frozenset[str] = frozenset()
    # deprecated keys: fix may unset them, never set them
    unset_only: frozenset[str] = frozenset()
    # an unset key, when set, should resemble this related key (same unit)
    anchors: dict[str, str] = field(default_factory=dict)


VERL = RepairPolicy(
    rules=(
        "actor_micro", "logprob_micro", "ref_micro", "critic_micro",
        "actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "critic_micro_per_gpu",
        "train_batch_size", "actor_mini", "critic_mini",
        "actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
        "actor_dyn", "logprob_dyn", "ref_dyn", "critic_dyn", "remove_padding",
        "actor_sp", "ref_sp", "critic_sp", "rollout_tp", "rollout_dp", "rollout_ep", "fsdp_size",
        "rollout_gpus_per_node", "max_model_len",
    ),
    memory=("gmu_permille", "grad_ckpt", "entropy_chunking", "param_offload", "optimizer_offload",
            "ref_param_offload", "critic_grad_ckpt", "critic_param_offload", "critic_optimizer_offload"),
    ranks={
        # deprecated global micro sizes: last resort (verl 0.9.1 workers need the per-GPU keys)
        "actor_micro": 9, "logprob_micro": 9, "ref_micro": 9, "critic_micro": 9,
        "gmu_permille": 1,
        "actor_micro_per_gpu": 2, "critic_micro_per_gpu": 2,
        "logprob_micro_per_gpu": 3, "ref_micro_per_gpu": 3,
        "grad_ckpt": 4, "critic_grad_ckpt": 4, "entropy_chunking": 4,
        "actor_max_tokens": 4, "logprob_max_tokens": 4, "ref_max_tokens": 4, "critic_max_tokens": 4,
        "train_batch_size": 5, "actor_mini": 5, "critic_mini": 5,
        "rollout_tp": 6, "rollout_dp": 6, "rollout_ep": 6, "rollout_gpus_per_node": 6, "max_model_len": 6,
        "actor_sp": 7, "ref_sp": 7, "critic_sp": 7, "fsdp_size": 7,
        "param_offload": 8, "optimizer_offload": 8, "ref_param_offload": 8,
        "critic_param_offload": 8, "critic_optimizer_offload": 8,
        "actor_dyn": 9, "logprob_dyn": 9, "ref_dyn": 9, "critic_dyn": 9, "remove_padding": 9,
    },
    parallel=frozenset({"actor_sp", "ref_sp", "critic_sp", "rollout_tp", "rollout_dp", "rollout_ep", "fsdp_size",
                        "rollout_gpus_per_node"}),
    token_budgets=frozenset({"actor_max_tokens", "logprob_max_tokens", "ref_max_tokens", "critic_max_tokens",
                             "max_model_len"}),
    permille=frozenset({"gmu_permille"}),
    unset_only=frozenset({"actor_micro", "logprob_micro", "ref_micro", "critic_micro"}),
    anchors={"critic_micro_per_gpu": "actor_micro_per_gpu", "logprob_micro_per_gpu": "actor_micro_per_gpu",
             "ref_micro_per_gpu": "logprob_micro_per_gpu", "actor_micro_per_gpu": "logprob_micro_per_gpu"},
)

POLICIES: dict[str, RepairPolicy] = {"verl": VERL}


def policy_for(framework: str, ruleset) -> RepairPolicy:
    """The framework's policy; a framework without one may change every non-hardware size."""
    if framework in POLICIES:
        return POLICIES[framework]
    fixed_words = ("nnodes", "gpus_per_node", "num_gpus", "world", "length", "len", "num_heads", "kv_heads",
                   "layers", "experts", "max_position", "need_", "estimator", "num_generations")
    names = tuple(n for n in ruleset.variables if not any(w in n for w in fixed_words))
    return RepairPolicy(rules=names)


def references(policy: RepairPolicy, values: dict) -> dict[str, int]:
    """For each unset key with an anchor: the anchor's value, if the user set it."""
    out = {}
    for name, anchor in policy.anchors.items():
        if values.get(name) is None and isinstance(values.get(anchor), int) and values[anchor] > 0:
            out[name] = values[anchor]
    return out


def _divisors(x: int) -> set[int]:
    return {d for d in range(1, x + 1) if x % d == 0} if x > 0 else set()


def _pow2(lo: int, hi: int) -> set[int]:
    return {2**i for i in range(0, 24) if lo <= 2**i <= hi}


def candidates(name: str, kind: str, optional: bool, current, policy: RepairPolicy, *, total_gpus: int,
               seq_len: int, narrow: bool) -> list:
    """Values ``fix`` may give one variable: the current one first, then its neighbours.

    ``narrow`` (memory evaluated: every candidate fills cost tables) keeps
    powers of two, divisors and simple multiples; otherwise small steps
    (64 -> 66) are candidates too, since they are often the nearest fix.
    """
    if kind == "bool":
        return [current, not current] if current is not None else [False, True]
    if name in policy.unset_only:
        return [current] if current is None else [current, None]
    vals: set = set()
    if name in policy.parallel:
        vals |= _divisors(total_gpus)
        if name == "fsdp_size":
            vals.add(-1)
    elif name in policy.token_budgets:
        vals |= {k * seq_len for k in (1, 2, 3, 4)}
    elif name in policy.permille:
        vals |= set(range(300, 951, 50))
    else:
        base = int(current) if current else 8
        vals |= _pow2(1, max(4 * base, 64 if narrow else 1024)) | _divisors(base) | {2 * base, 3 * base}
        if not narrow:
            vals |= {base + k for k in range(-4, 5) if base + k >= 1}
            vals |= {k * total_gpus for k in range(1, 9)}
    rest = sorted(v for v in vals if v is not None and v != current and v != 0)
    return [current] + ([None] if optional and current is not None else []) + rest


def repair_domains(ruleset, policy: RepairPolicy, values: dict, *, keep: set[str], memory: bool, total_gpus: int,
                   seq_len: int) -> dict[str, list]:
    """One-value domains for what stays, candidate lists for what ``fix`` may change."""
    free = set(policy.rules) | (set(policy.memory) if memory else set())
    domains = {}
    for name, value in values.items():
        spec = ruleset.variables.get(name)
        if spec is None or name not in free or name in keep:
            domains[name] = [value]
            continue
        domains[name] = candidates(name, spec.kind, spec.optional, value, policy, total_gpus=total_gpus,
                                   seq_len=seq_len, narrow=memory)
    return domains
