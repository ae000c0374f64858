"""``fix --host-mem``: the nearest repair whose host RAM estimate fits the node, and what the report says of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..rules.base import Rule
from ..rules.ids import memory_rule_id
from .fix_report import Attempt, FixReport
from .fix_search import repair_once
from .fix_job import Job

if TYPE_CHECKING:
    from ..costmodel.host import HostReport
    from ..deadline import Deadline
    from ..solver.repair import RepairResult


@dataclass
class HostSearch:
    """fix with the node's RAM given (--host-mem): the host estimate of what the GPU repair answered (``pasted``: of
    the pasted config when it needs no repair; None when it fits), the repair found with the configs that do not fit
    the RAM excluded (``result``, None if none was), and the least estimate of the excluded ones (``least``)."""

    pasted: HostReport | None = None
    result: RepairResult | None = None
    least: HostReport | None = None
    of_repair: bool = False  # ``pasted`` is of the GPU repair's answer, not of the pasted config


def host_repair(job: Job, res: RepairResult, attempt: Attempt, host_mem_gib: float, deadline: Deadline,
                cut: list[str] | None = None) -> HostSearch:
    """The nearest repair whose host estimate fits the given RAM, as recommend holds its answers to it
    (commands/host_fit.py): each answer that does not fit is excluded by a search rule on the values it holds of the
    keys its host estimate reads (offload switches, ZeRO stage, sleep level...), and the repair is solved again,
    until one fits, none is left or the time is up (said in ``cut``: ``FixReport.cut_short``). Not proven nearest: a
    rule may exclude a config whose estimate moves only with keys outside it."""
    from ..deadline import Deadline
    from .host_fit import exclude, host_report

    answer = res.solution if res.solution is not None else dict(job.values)
    host = host_report(job.spec, answer, job.gpu, host_mem_gib)
    if host.fits is not False:
        return HostSearch()
    search = HostSearch(pasted=host, least=host, of_repair=bool(res.changes))
    rules: list[Rule] = []
    excluded: set[frozenset] = set()
    current, current_host = answer, host
    cut = cut if cut is not None else []
    while True:
        if deadline.left() <= 0.05:
            cut.append("the search for a repair that fits the node's RAM")
            break
        rule = exclude(job.spec, attempt.domains, current, current_host, job.gpu, host_mem_gib, excluded)
        if rule is None:
            break
        rules.append(rule)
        again = repair_once(job.fw, job.policy, job.values, kept=job.kept, spec=job.spec,
                            deadline=Deadline(deadline.share(0.5)), excluded=rules).result
        cut += [f"the RAM search ({c})" for c in again.cut_short if f"the RAM search ({c})" not in cut]
        if again.solution is None:
            break
        current, current_host = again.solution, host_report(job.spec, again.solution, job.gpu, host_mem_gib)
        if current_host.fits is not False:
            again.status = {"optimal": "feasible"}.get(again.status, again.status)  # see the docstring
            host_rule = memory_rule_id(job.fw.name, "host")
            again.rules_now_satisfied = {
                n: list(dict.fromkeys(host_rule if r.startswith("search.host_ram.") else r for r in ids))
                for n, ids in again.rules_now_satisfied.items()}
            search.result = again
            return search
        if current_host.peak_bytes < search.least.peak_bytes:
            search.least = current_host
    return search


def host_said(report: FixReport, job: Job, search: HostSearch) -> None:
    """What the host search found, in the report: the pasted config's host excess as a broken rule, and a note (or,
    with no repair that fits the node, the least estimate the search excluded: render.py says what would help)."""
    from .check import host_violation
    from .host_fit import host_report

    # the pasted config's own estimate: ``pasted`` is it unless the GPU repair changed the config
    mine = host_report(job.spec, job.values, job.gpu, search.pasted.ram_gib) if search.of_repair else search.pasted
    over = host_violation(job.fw, mine)
    if over is not None and not any(v.rule == over.rule for v in report.before_violations):
        report.before_violations.append(over)
    host = search.pasted
    whose = "the nearest repair of the rules and GPU memory" if search.of_repair else "your config"
    said = (f"{whose} needs {host.peak_gib:.0f} GiB of the node's RAM at {host.when}, over the {host.limit_gib:.0f} "
            f"usable of {host.ram_gib:.0f} given (--host-mem)")
    if search.result is not None:
        report.notes.append(f"{said}; this repair fits the node (the configs that do not were excluded from the "
                            "search, so it is not proven nearest)")
    else:
        report.host_unfit = search.least
