"""recommend with the node's RAM as a constraint (``--host-mem``): no answer whose host-memory estimate
(costmodel/host.py) runs the node out of RAM.

The host estimate is a Python function of a whole config (its rollout and actor-update plans and the framework's
HostLayout), not one of the cost tables the CP-SAT model is built from, so it is enforced by the check itself: every
config the solver ranks is checked (commands/check.py host_check, the same function check and fix print), and each
one that does not fit is excluded from the next solve by a search rule on the values it holds of the keys the host
estimate reads (``host_keys``: the decision variables whose change alone moves its estimate: ZeRO stage, offload
switches, sleep level, engine TP, checkpoint saves...). The solve repeats until every ranked config fits or none is
left; the answer is then re-checked config by config (``fitting``), so no config that does not fit is ever printed.
Only with the RAM given: with the RAM assumed (the GPU type's standard node) the estimate stays a line of the answer.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..costmodel.host import HostReport
from ..rules.base import Rule, RuleKind, Stage, Value
from ..rules.expr import BoolExpr, BoolVar, IntVar, all_of


def host_report(spec: Any, values: Mapping[str, Value], gpu_name: str, host_mem_gib: float | None) -> HostReport:
    from .check import host_check

    return host_check(spec, values, gpu_name, host_mem_gib)


def host_keys(spec: Any, domains: Mapping[str, Sequence[Value]], values: Mapping[str, Value], gpu_name: str,
              host_mem_gib: float | None) -> list[str]:
    """The decision variables whose change alone (to any other value of its domain) moves the config's host
    estimate; a variable whose changed config the cost model cannot price counts too (the rule stays narrower)."""
    base = host_report(spec, values, gpu_name, host_mem_gib).peak_bytes
    keys = []
    for key, domain in domains.items():
        for other in domain:
            if other == values.get(key):
                continue
            try:
                moved = host_report(spec, {**values, key: other}, gpu_name, host_mem_gib).peak_bytes != base
            except (ValueError, KeyError, ZeroDivisionError, TypeError):
                moved = True
            if moved:
                keys.append(key)
                break
    return keys


def exclusion_rule(n: int, values: Mapping[str, Value], keys: Sequence[str], host: HostReport) -> Rule | None:
    """A search rule that no config holds ``values`` on ``keys`` (None when there is nothing to hold)."""
    held: list[BoolExpr] = []
    for key in keys:
        v = values.get(key)
        if isinstance(v, bool):
            held.append(BoolVar(key) if v else ~BoolVar(key))
        elif isinstance(v, int):
            held.append(IntVar(key).eq(v))
    if not held:
        return None
    words = ", ".join(f"{k}={values[k]}" for k in keys if values.get(k) is not None)
    return Rule(f"search.host_ram.{n}", ~all_of(*held),
                f"{words}: a node needs {host.peak_gib:.0f} GiB of RAM at {host.when}, over the "
                f"{host.limit_gib:.0f} GiB usable of the {host.ram_gib:.0f} given (--host-mem)",
                Stage.SEARCH, "rlbatch-solver host-memory model (docs/cost-model.md section 11)", kind=RuleKind.SEARCH)


def exclude(spec: Any, domains: Mapping[str, Sequence[Value]], values: Mapping[str, Value], host: HostReport,
            gpu_name: str, host_mem_gib: float | None, excluded: set[frozenset]) -> Rule | None:
    """The search rule that excludes ``values`` (whose host estimate is ``host``) on its ``host_keys``, numbered after
    the ``excluded`` combinations of those keys' values so far, to which it adds its own; None when that combination
    is already excluded or there is nothing to hold (no new rule: the search cannot go on)."""
    keys = host_keys(spec, domains, values, gpu_name, host_mem_gib)
    held = frozenset((k, values.get(k)) for k in keys)
    rule = None if held in excluded else exclusion_rule(len(excluded), values, keys, host)
    if rule is not None:
        excluded.add(held)
    return rule


def fit_host(res: Any, ruleset: Any, domains: Mapping[str, Sequence[Value]], solve: Callable[[Any], Any], spec: Any,
             gpu_name: str, host_mem_gib: float | None, time_left: Callable[[], float]
             ) -> tuple[Any, Any, HostReport | None]:
    """The solve ``res`` and its ``ruleset``, re-solved (``solve(ruleset)``) with every ranked config whose host
    estimate does not fit the given RAM excluded, until all ranked fit, none is left or the time is up; and the least estimate of the
    configs excluded (None: none was), which explains an empty answer."""
    if host_mem_gib is None:
        return res, ruleset, None
    first: HostReport | None = None
    excluded: set[frozenset] = set()
    while True:  # ends: every round excludes a new combination of the host keys' values, of which there are finitely many
        rules = []
        for r in res.ranked:
            host = host_report(spec, r.solution, gpu_name, host_mem_gib)
            if host.fits is not False:
                continue
            first = host if first is None or host.peak_bytes < first.peak_bytes else first
            rule = exclude(spec, domains, r.solution, host, gpu_name, host_mem_gib, excluded)
            if rule is not None:
                rules.append(rule)
        if not rules or time_left() <= 0:
            break
        ruleset = ruleset.extended(rules, [])
        res = solve(ruleset)
        if not res.ranked:
            break
    return res, ruleset, first


def fitting(choices: list, spec: Any, gpu_name: str, host_mem_gib: float | None) -> tuple[list, HostReport | None]:
    """``choices`` less those whose host estimate does not fit the given RAM (all of them without --host-mem),
    renumbered, and the least estimate of those dropped (None: none was)."""
    from dataclasses import replace

    if host_mem_gib is None:
        return choices, None
    kept, least = [], None
    for c in choices:
        host = host_report(spec, c.values, gpu_name, host_mem_gib)
        if host.fits is not False:
            kept.append(c)
        elif least is None or host.peak_bytes < least.peak_bytes:
            least = host
    return [replace(c, rank=i) for i, c in enumerate(kept, 1)], least
