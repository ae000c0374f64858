"""What ``fix`` answers: the report (``FixReport``), one repair search's outcome (``Attempt``), and the
changes, memory per phase and the header's count as the report says them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..frameworks import Framework
from ..frameworks.key_names import UnknownKey
from ..rules.base import Value, Violation
from .common import Upgrade

if TYPE_CHECKING:
    from ..costmodel.host import HostReport
    from ..costmodel.tables import CostSpec
    from ..frameworks.repair_policies import RepairPolicy
    from ..rules.base import RuleSet
    from ..solver.explain import Conflict
    from ..solver.repair import Change, RepairResult


@dataclass(frozen=True)
class Attempt:
    """One repair search: its result, the rule set it ran on (memory rules added when priced), the domains it
    searched and the usable MiB per phase (empty without memory)."""

    result: RepairResult
    ruleset: RuleSet
    domains: dict[str, list[Value]]
    capacity: dict[str, int]


@dataclass
class FixReport:
    framework: str
    version: str
    before: dict[str, Value]
    before_violations: list[Violation]
    after: dict[str, Value] | None
    changes: list[Change]  # in native keys via ``native_changes``
    native_changes: list[tuple[str, Any, Any]]  # (native key, old, new) in the framework's own values
    satisfies: dict[str, list[str]]  # native key -> rule ids broken before that read it
    status: str
    proven: bool
    wall_time_s: float
    memory_evaluated: bool
    memory_before: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase -> (peak MiB, capacity MiB)
    memory_after: dict[str, tuple[float, float]] = field(default_factory=dict)
    conflict: Conflict | None = None
    pinned_in_conflict: dict[str, Any] = field(default_factory=dict)
    relaxations: list[str] = field(default_factory=list)
    native_after: list[str] = field(default_factory=list)  # the changed keys, paste-ready
    notes: list[str] = field(default_factory=list)
    # (native key, old argument, new argument) in the framework's syntax: the diff printed
    diff: list[tuple[str, str, str]] = field(default_factory=list)
    # each conflicting rule in words, with the numbers of the pasted config: (rule id, text)
    conflict_text: list[tuple[str, str]] = field(default_factory=list)
    # every relaxation tried: {"kind", "feasible", "text", "changes": [paste-ready arguments]}
    relaxations_tried: list[dict[str, Any]] = field(default_factory=list)
    method: str = ""  # "direct" (one- and two-key moves evaluated), "cp-sat", or "greedy" (a descent, not proven)
    grid_only: bool = False  # proven nearest among the candidate grid's values only (render.py's fine print)
    evaluated: int = 0  # configs the direct search evaluated
    waste: str = ""  # what the repaired config makes the framework pad, in words
    # nothing valid found: the closest candidate (fewest broken rules) as a diff, and what it still breaks
    partial_diff: list[tuple[str, str, str]] = field(default_factory=list)
    partial_broken: list[str] = field(default_factory=list)
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule -> (least MiB anywhere, usable MiB)
    host: HostReport | None = None  # of the answer: the node's RAM (with --gpu and --model)
    # --host-mem given and no repair fits the node: the least host estimate of the configs the search excluded
    host_unfit: HostReport | None = None
    upgrade: Upgrade | None = None  # checked with an older release its keys show: what the newest refuses
    unknown_keys: list[UnknownKey] = field(default_factory=list)  # keys the release lacks: refused or misspelt
    release: str = ""  # the release named where another's rules judge it (verl 0.9.0: 0.9.1's; Framework.keys_version)
    renamed: list[str] = field(default_factory=list)  # those renamed to the key they misspell (--write drops them)
    # every key the pasted config gave is among ``renamed`` (OpenRLHF's pre-0.10.2 flags, all of them): the repaired
    # arguments are the whole argument list, in place of the user's, not a few to paste over them
    whole: bool = False
    # the answer adds a key to the nearest repair for memory headroom: that repair's diff, and whether it was proven
    nearest_diff: list[tuple[str, str, str]] = field(default_factory=list)
    nearest_proven: bool = False
    # native key -> what a change made for memory headroom buys (the margin per tight phase) and why its value
    headroom: dict[str, str] = field(default_factory=dict)
    # what the repair's cost counts as changes besides the changed keys, in words ("" when nothing): the objective
    # "proven nearest" is proven for (solver/costs.py)
    counted: str = ""
    # the advice warnings the repaired config breaks: (rule id, message, whether the pasted config met it)
    advice: list[tuple[str, str, bool]] = field(default_factory=list)
    # the steps the clock stopped, in words: each search is bounded by work counted the same at any load, the
    # seconds (--time-limit) only its safety net; where they cut one the answer is as far as it got, not proven
    cut_short: list[str] = field(default_factory=list)
    cut_short_s: float = 0.0  # the command's seconds when it answered, those steps cut
    cut_short_repair: bool = False  # one of them is the search for the repair itself: the repair is not proven

    @property
    def before_errors(self) -> list[Violation]:
        """The rules the pasted config breaks, counted as check counts them (``check.breaks``: errors only; a
        tolerated warning, in the safety margin or over the line only at the maximum lengths, is no break)."""
        from .check import breaks

        return breaks(self.before_violations)

    @property
    def valid_before(self) -> bool:
        """check's ``valid`` for the pasted config: no rule broken (fix still repairs a tolerated warning)."""
        return not self.before_errors

    @property
    def already_valid(self) -> bool:
        return not self.before_violations and not self.changes and self.after is not None and not self.diff

    def to_dict(self) -> dict[str, Any]:
        args = {k: (o, n) for k, o, n in self.diff}
        return {
            "framework": self.framework,
            "rules_version": self.version,
            "status": self.status,
            "proven_nearest": self.proven,
            "nearest_counts": self.counted,  # what "nearest" counts as changes besides the keys ("" when nothing)
            "valid_before": self.valid_before,  # check's "valid" for the same config
            "violations_before": [v.to_dict() for v in self.before_violations],
            "changes": [{"key": k, "old": o, "new": n, "old_arg": args.get(k, ("", ""))[0],
                         "new_arg": args.get(k, ("", ""))[1], "satisfies": self.satisfies.get(k, []), "headroom": self.headroom.get(k, "")}
                        for k, o, n in self.native_changes],
            "fixed_config": self.native_after,
            "memory_evaluated": self.memory_evaluated,
            "memory_mib": {p: {"before": b[0], "after": self.memory_after.get(p, (None,))[0], "capacity": b[1]}
                           for p, b in self.memory_before.items()},
            "conflict": [r.id for r in self.conflict.rules] if self.conflict else None,
            "conflict_text": [{"rule": r, "text": t} for r, t in self.conflict_text],
            "pinned_in_conflict": self.pinned_in_conflict,
            "relaxations": self.relaxations,
            "relaxations_tried": self.relaxations_tried,
            "notes": self.notes,
            "upgrade": self.upgrade.to_dict() if self.upgrade is not None else None,
            "unknown_keys": [u.to_dict() for u in self.unknown_keys],
            "renamed_keys": self.renamed,
            "nearest_repair": {"changes": [new for _, _, new in self.nearest_diff], "proven_nearest": self.nearest_proven}
            if self.nearest_diff else None,
            "search": {"method": self.method, "configs_evaluated": self.evaluated,
                       "wall_time_s": round(self.wall_time_s, 3), "proven_among_candidates_only": self.grid_only,
                       "cut_short": self.cut_short},
            "waste": self.waste,
            "advice_after": [{"rule": r, "text": t, "new": n} for r, t, n in self.advice],
            "memory_floor_mib": {r: {"least": a, "usable": b} for r, (a, b) in self.memory_floor.items()},
            "host_memory": self.host.to_dict() if self.host is not None else None,
            "host_memory_unfit": self.host_unfit.to_dict() if self.host_unfit is not None else None,
            "partial": {"changes": [{"key": k, "old_arg": o, "new_arg": n} for k, o, n in self.partial_diff],
                        "still_breaks": self.partial_broken} if self.after is None else None,
        }


def diff_rows(fw: Framework, changes: Sequence[Change], readers: Mapping[str, list[str]] | None = None):
    """Changes -> (native (key, old, new), diff (key, old argument, new argument), key -> rules), one row per key."""
    rows: dict[str, list[Any]] = {}
    for c in changes:
        key = fw.native_key(c.name)
        old_arg = fw.assignment(c.name, c.old)
        if old_arg.startswith("(drop"):
            old_arg = f"(no --{key})"
        new_arg = fw.assignment(c.name, c.new)
        old, new = fw.native_value(c.name, c.old), fw.native_value(c.name, c.new)
        rules = list((readers or {}).get(c.name, []))
        if key in rows:  # two variables behind one key (ms-swift's --vllm_mode): first old, last new
            row = rows[key]
            row[2], row[4] = new, new_arg
            row[5] += [r for r in rules if r not in row[5]]
        else:
            rows[key] = [key, old, new, old_arg, new_arg, rules]
    native = [(k, o, n) for k, o, n, _, _, _ in rows.values()]
    diff = [(k, oa, na) for k, _, _, oa, na, _ in rows.values()]
    return native, diff, {k: r for k, _, _, _, _, r in rows.values()}


def with_renames(renames: list[tuple[str, str, str]], diff: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The diff with each renamed key first: a key the repair also changes is one line, from the misspelt argument to
    the repaired one."""
    changed = {key: new for key, _, new in diff}
    lines = [(key, old, changed.get(key, new)) for key, old, new in renames]
    return lines + [line for line in diff if line[0] not in {key for key, _, _ in renames}]


def phase_mib(spec: CostSpec, values: Mapping[str, Value], capacity_mib: Mapping[str, int]) -> dict[str, tuple[float, float]]:
    from ..costmodel.tables import MIB, full_reports

    memory, _ = full_reports(spec, values)
    return {p: (round(r.peak(p) / MIB, 1), float(capacity_mib.get(p, 0))) for p, r in memory.items()}


def counted_words(fw: Framework, policy: RepairPolicy, ruleset: RuleSet) -> str:
    """What the repair's cost counts as changed keys besides the keys themselves (``solver/costs.py``), in words."""
    from ..solver.costs import FREE_BATCH_DOUBLINGS, WASTE_NAME, WASTE_PERMILLE_PER_KEY, WASTE_TOLERANCE_PERMILLE

    parts = []
    if any(d.name == WASTE_NAME for d in ruleset.derived) and not _derived_is_constant(ruleset, WASTE_NAME):
        parts.append(f"each {WASTE_PERMILLE_PER_KEY // 10}% of {fw.waste_words(ruleset)} past "
                     f"{WASTE_TOLERANCE_PERMILLE // 10}%")
    held = sorted(fw.native_key(n) for n in policy.algorithm_batch if n in policy.rules)
    if held:
        free = "one" if FREE_BATCH_DOUBLINGS == 1 else str(FREE_BATCH_DOUBLINGS)
        parts.append(f"each doubling of {', '.join(held)} past {free}")
    return ("counting as a change " + " and ".join(parts)) if parts else ""


def _derived_is_constant(ruleset: RuleSet, name: str) -> bool:
    """The derived quantity ``name`` is a constant in this rule set (verl 0.8's waste: no padding, a failure)."""
    from ..rules.expr import Const

    return any(d.name == name and isinstance(d.expr, Const) for d in ruleset.derived)
