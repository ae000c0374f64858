"""Which of recommend's next-best configs are worth listing: one definition for every framework.

A config is left out of the alternatives when one listed before it is no worse by the objective ranked on
(``Choice.objective``: time per sample with padding counted, or GPUs, or headroom), no slower per sample, and needs no
more memory in any phase: by the cost model it offers nothing the listed one does
not (ZeRO-2 where ZeRO-3 is as fast and smaller; a vLLM memory share of 0.5 where 0.4 is as fast; a setting the model
prices the same either way). Of configs priced exactly alike, the one with the fewest arguments stands for them all
(the simplest command); the best config (rank 1) is never replaced: it is the answer as ranked."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

# peaks that print the same (to the 0.1 GiB recommend's tables show) are the same peak: a config 17 MiB smaller in one
# phase and 2 GiB larger in another offers nothing the listed one does not
SAME_MIB = 0.05 * 1024


def _priced(c: Any) -> tuple[int, dict[str, float]]:
    return c.objective, c.peak_mib()


def alike(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are priced the same: equal objective, every phase's peak equal."""
    (oa, pa), (ob, pb) = _priced(a), _priced(b)
    return oa == ob and pa.keys() == pb.keys() and all(abs(pa[p] - pb[p]) <= SAME_MIB for p in pa)


def _per_sample(c: Any) -> float:
    return c.step_time_s / c.samples if c.samples else c.step_time_s


def dominates(a: Any, b: Any, maximize: bool = False) -> bool:
    """``a`` is no worse than ``b`` by the objective, no slower per sample, and needs no more memory than ``b`` in
    any phase ``b`` has."""
    (oa, pa), (ob, pb) = _priced(a), _priced(b)
    return ((oa >= ob) if maximize else (oa <= ob)) and _per_sample(a) <= _per_sample(b) * (1 + 1e-9) \
        and all(p in pa and pa[p] <= pb[p] + SAME_MIB for p in pb)


def fold_alike(choices: list[Any], maximize: bool = False) -> tuple[list[Any], list[Any]]:
    """``choices`` (best first) less those a listed one dominates, ranks renumbered; and the ones left out.
    ``maximize``: the objective is one to maximize (--objective memory-headroom)."""
    if len(choices) < 2:
        return choices, []
    rest = choices[1:]
    # each group of configs priced alike is stood for by its fewest arguments, at the group's first place
    simplest: list[Any] = []
    for c in rest:
        if any(alike(s, c) for s in simplest):
            continue
        group = [d for d in rest if alike(c, d)]
        simplest.append(min(group, key=lambda d: len(d.native)))  # the earliest of the fewest
    kept = [choices[0]]
    for c in simplest:
        if not any(dominates(k, c, maximize) for k in kept):
            kept.append(c)
    chosen = {id(c) for c in kept}
    left = [c for c in rest if id(c) not in chosen]
    return [replace(c, rank=i) for i, c in enumerate(kept, 1)], left
