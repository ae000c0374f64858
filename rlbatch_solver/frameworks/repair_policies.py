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

Every framework names its movable keys explicitly (verl and verl Megatron,
OpenRLHF, ms-swift's two paths, each in its folder's ``repair.py``);
there is no catch-all. ``hardware`` names the variables that hold the GPU count:
``fix`` never moves them, but when nothing fits it tries other counts to say how
many GPUs would (``api.relaxations``). ``algorithm`` names the settings that
change what is trained (``n``, ``num_generations``): never moved, reported when
they are part of a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .base import divisors


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
    # an unset per-GPU key whose deprecated global key is set: when set, it should resemble the global
    # value over the GPU count (what the framework's older versions computed from it)
    per_gpu_of: dict[str, str] = field(default_factory=dict)
    # GPU-count variables -> "per_node" (GPUs of one node, at most 8 unless already more) or "count"
    hardware: dict[str, str] = field(default_factory=dict)
    # algorithm settings: never changed by fix, named when they are part of a conflict
    algorithm: tuple[str, ...] = ()
    # the algorithm's batch the user set, which fix may move: each doubling it moves beyond the first costs as a
    # changed key (solver/costs.py), so a repair that keeps the user's batch wins at a cost of a key or two
    algorithm_batch: frozenset[str] = frozenset()
    # response/sequence length variables a "shorter response" relaxation may lower
    lengths: tuple[str, ...] = ()
    # values memory grows with (vLLM's memory share, micro batches, token budgets): raising one costs a
    # little more than lowering it (solver/costs.py), as the seeds' out-of-memory advice lowers them first;
    # a phase that misfits at a value misfits at every larger one, which widens the repair's memory cuts
    # (solver/repair.py; tests/test_fix.py checks that the memory model grows with each of them), except where
    # ``NOT_MONOTONE_IN`` says not (the rollout at an engine share too small for the weights: misfit_grows)
    grows_memory: frozenset[str] = frozenset()
    # batch sizes memory never shrinks with either (a token budget's share of a larger batch is no smaller), priced
    # by fix as any other key: the least memory anywhere (fix's proof that no repair fits) is at their smallest
    # values, as at the ``grows_memory`` keys' (tests/test_fix_published.py checks the model grows with them)
    batch_grows_memory: frozenset[str] = frozenset()
    # memory switches that are cost-model inputs, not rule variables (verl Megatron's recompute granularity):
    # name -> the values fix may try when memory is evaluated; the framework spells them (``native_key``)
    cost_knobs: dict[str, tuple] = field(default_factory=dict)
    # tensor-parallel sizes that stay inside one node (NVLink): candidates up to the node's GPU count (the
    # hardware ``per_node`` value, at least 8) or the current value; across nodes every layer's all-reduce
    # would cross the network, which no framework's guide advises
    within_node: frozenset[str] = frozenset()
    # rule variables with a closed set of values (DeepSpeed's ZeRO stage): fix tries these and nothing else
    choices: dict[str, tuple] = field(default_factory=dict)

    def misfit_grows(self, phases: Iterable[str]) -> dict[str, frozenset[str]]:
        """Per phase, the keys at whose every larger value the phase, where it misfits, misfits too (fix's memory
        cuts, solver/repair.py ``_exclude``): ``grows_memory`` less those memory is not monotone in for that phase
        (``NOT_MONOTONE_IN``)."""
        return {p: self.grows_memory - _not_monotone(p) for p in phases}

    def least_at_smallest(self, phases: Iterable[str]) -> dict[str, frozenset[str]]:
        """Per phase, the keys where its least memory is at the smallest value (fix's proof that no repair fits,
        costmodel/tables.py ``least_memory``): ``grows_memory`` and ``batch_grows_memory``, less those memory is
        not monotone in for that phase (``NOT_MONOTONE_IN``)."""
        return {p: (self.grows_memory | self.batch_grows_memory) - _not_monotone(p) for p in phases}


# memory grows with the engine's memory share only once the share holds the engine's weights: below it the engine
# cannot start and the rollout is priced over the GPU by the shortfall (costmodel/memory.py T_NO_FIT, the rollout's
# terms only), which a larger share shrinks (verl's Qwen2.5-7B LoRA on one H100 at a share of 0.1 misfits, at 0.5
# fits). Raising it still costs more (``grows_memory``), but a rollout misfit at one share proves nothing about a
# larger one. Key -> the phases whose memory is not monotone in it
NOT_MONOTONE_IN = {"gmu_permille": frozenset({"rollout"})}


def _not_monotone(phase: str) -> frozenset[str]:
    return frozenset(n for n, where in NOT_MONOTONE_IN.items() if phase in where)


def policy_for(framework: str, ruleset=None, values: dict | None = None) -> RepairPolicy:
    """The framework's own policy (``Framework.repair_policy``; verl: the Megatron one when the config
    selects that backend), of the release ``ruleset`` follows where one is given (an ms-swift 3.x release's leaves out
    the flags its arguments lack). Every framework folder defines its policy in its ``repair.py``."""
    from .registry import get_framework

    if ruleset is not None and "==" not in framework:
        framework = f"{framework}=={ruleset.version}"
    return get_framework(framework).repair_policy(values)


def references(policy: RepairPolicy, values: dict) -> dict[str, int]:
    """For each unset key with an anchor: the anchor's value, if the user set it, under its own name or as the older
    global size it is the per-GPU share of (verl <= 0.4's actor ppo_micro_batch_size=128 on 8 GPUs anchors the
    critic's unset per-GPU micro batch at 16, as its per-GPU key would)."""
    gpus = int(values.get("gpus_per_node") or 1) * int(values.get("nnodes") or 1)
    per_gpu = {}
    for name, old in policy.per_gpu_of.items():
        given = values.get(old)
        if values.get(name) is None and isinstance(given, int) and not isinstance(given, bool) and given > 0:
            per_gpu[name] = max(1, given // gpus)
    out = {}
    for name, anchor in policy.anchors.items():
        value = values.get(anchor) if values.get(anchor) is not None else per_gpu.get(anchor)
        if values.get(name) is None and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[name] = value
    out.update(per_gpu)  # the user's own global size, per GPU, wins over an anchor
    return out


def _divisors(x: int) -> set[int]:
    return set(divisors(x))


def _pow2(lo: int, hi: int) -> set[int]:
    return {2**i for i in range(0, 24) if lo <= 2**i <= hi}


def candidates(name: str, kind: str, optional: bool, current, policy: RepairPolicy, *, total_gpus: int,
               seq_len: int, narrow: bool, gpu_counts: tuple[int, ...] = (), node_gpus: int = 8,
               reference: int | None = None) -> list:
    """Values ``fix`` may give one variable: the current one first, then its neighbours.

    Neighbours of the value (an unset key: of ``reference``, the value the framework would use, else of 8):
    powers of two, divisors, simple multiples and the small steps around it (4 -> 3, the nearest change
    whenever it is valid). ``narrow`` (memory evaluated: every candidate fills cost tables) keeps steps of
    one and two; otherwise steps up to four (64 -> 68) and multiples of the GPU count are candidates too.
    """
    if kind == "bool":
        return [current, not current] if current is not None else [False, True]
    if name in policy.unset_only:
        return [current] if current is None else [current, None]
    vals: set = set()
    if name in policy.choices:
        vals |= set(policy.choices[name])
    elif name in policy.parallel:
        # divisors of the GPU count (and of the training world, when a rollout server takes some),
        # powers of two up to it (server layouts)
        for count in (total_gpus, *gpu_counts):
            vals |= _divisors(count)
        vals |= _pow2(1, total_gpus)
        if name == "fsdp_size":
            vals.add(-1)
        if name in policy.within_node:
            vals = {v for v in vals if v <= max(node_gpus, 8)}
    elif name in policy.token_budgets:
        vals |= {k * seq_len for k in (1, 2, 3, 4)}
    elif name in policy.permille:
        vals |= set(range(300, 951, 50))
    else:
        base = int(current) if current else int(reference) if reference else 8
        vals |= _pow2(1, max(4 * base, 64 if narrow else 1024)) | _divisors(base) | {2 * base, 3 * base}
        step = 2 if narrow else 4
        vals |= {base + k for k in range(-step, step + 1) if base + k >= 1}
        if not narrow:
            vals |= {k * total_gpus for k in range(1, 9)}
    rest = sorted(v for v in vals if v is not None and v != current and v != 0)
    return [current] + ([None] if optional and current is not None else []) + rest


def repair_domains(ruleset, policy: RepairPolicy, values: dict, *, keep: set[str], memory: bool, total_gpus: int,
                   seq_len: int) -> dict[str, list]:
    """One-value domains for what stays, candidate lists for what ``fix`` may change."""
    free = set(policy.rules) | (set(policy.memory) if memory else set())
    free -= set(policy.algorithm) | set(policy.hardware)
    counts = tuple(sorted({int(values[k]) * int(values.get(k.replace("gpus_per_node", "nnodes")) or 1)
                           for k in policy.hardware if k.endswith("gpus_per_node") and isinstance(values.get(k), int)}))
    per_node = [int(values[k]) for k, kind in policy.hardware.items()
                if kind == "per_node" and isinstance(values.get(k), int) and not isinstance(values.get(k), bool)]
    node_gpus = max(per_node, default=8)
    refs = references(policy, values)
    domains = {}
    for name, value in values.items():
        spec = ruleset.variables.get(name)
        if spec is None or name not in free or name in keep:
            domains[name] = [value]
            continue
        domains[name] = candidates(name, spec.kind, spec.optional, value, policy, total_gpus=total_gpus,
                                   seq_len=seq_len, narrow=memory, gpu_counts=counts, node_gpus=node_gpus,
                                   reference=refs.get(name))
    if memory:
        for name, options in policy.cost_knobs.items():
            if name in values and name not in keep:
                domains[name] = [values[name]] + [v for v in options if v != values[name]]
    return domains


# The direct one- and two-key search (solver/nearest.py) ranges over every integer a batch key accepts from 1 up to
# this many times the user's value, not only the candidate grid above: the frameworks accept any positive batch size,
# and the nearest valid one is often off the grid (341 -> 352, not 256). A change beyond it is at least three
# doublings away, further than any one- or two-key repair inside it moves a key.
DIRECT_SEARCH_FACTOR = 8
DIRECT_SEARCH_MAX_VALUES = 2**16  # bounds one key's range (to twice this), so a huge value cannot stall the search


def direct_search_domains(policy: RepairPolicy, domains: dict[str, list], ruleset) -> dict[str, list]:
    """``domains`` with each free batch-size key's candidates widened to every integer in
    [1, DIRECT_SEARCH_FACTOR x its value] (its current value first, as ``candidates`` orders them; an unset key's
    range is that of 8; a value beyond DIRECT_SEARCH_MAX_VALUES searches the 2 x DIRECT_SEARCH_MAX_VALUES integers
    below its range's top). Parallel sizes (divisors of the GPU count), token budgets, memory shares and closed
    choices keep their candidates: those already hold every value that can be valid or that anyone sets."""
    grid_only = set(policy.choices) | policy.parallel | policy.token_budgets | policy.permille | policy.unset_only
    out = dict(domains)
    for name, vals in domains.items():
        spec = ruleset.variables.get(name)
        if len(vals) < 2 or name in grid_only or spec is None or spec.kind == "bool":
            continue
        current = vals[0]
        base = int(current) if isinstance(current, int) and not isinstance(current, bool) and current > 0 else 8
        seen = set(vals)
        top = min(DIRECT_SEARCH_FACTOR * base, base + DIRECT_SEARCH_MAX_VALUES)
        low = max(1, top - 2 * DIRECT_SEARCH_MAX_VALUES)  # 1 unless the value is huge: then a window around it
        out[name] = list(vals) + [v for v in range(low, top + 1) if v not in seen]
    return out


def hardware_candidates(policy: RepairPolicy, values: dict) -> dict[str, list]:
    """Other GPU counts to try when nothing fits: the current one first, then more (and fewer). The counts tried stop
    at DIRECT_SEARCH_MAX_VALUES, as a searched key's range does, so a huge count cannot stall the search."""
    out: dict[str, list] = {}
    for name, kind in policy.hardware.items():
        cur = values.get(name)
        if not isinstance(cur, int) or isinstance(cur, bool) or cur < 1:
            continue
        top = max(8, cur) if kind == "per_node" else 4 * cur
        rest = range(1, min(top, DIRECT_SEARCH_MAX_VALUES) + 1)
        out[name] = [cur] + [v for v in rest if v != cur]
    return out
