"""Rules, variables and rule sets: the declarative layer every framework uses.

A ``RuleSet`` lists a framework's variables (with the native config key each
one maps to), named derived quantities (``dp = N // sp``) and rules. The same
objects feed the checker (``RuleSet.check``) and the CP-SAT builder
(``solver.model``), so the two cannot drift; ``tests/test_bruteforce.py``
proves it on small spaces anyway.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping, Optional, Union

from ..costmodel.phase import Phase
from .expr import BoolConst, BoolExpr, BoolVar, IntExpr, Number, compile_python, variables

Value = Union[int, bool, None]


class Stage(str, Enum):
    """When the framework would fail on a broken rule. A memory rule's stage is instead the ``Phase`` that would
    not fit (out of memory in that phase, from the first step on): see ``RuleStage``."""

    DRIVER = "driver"
    TRAINER_INIT = "trainer_init"
    WORKER_INIT = "worker_init"
    FIRST_STEP = "first_step"
    RUNTIME = "runtime"
    ADVICE = "advice"
    # not a moment: the stage printed for a restriction of the search space we chose (``RuleKind.SEARCH`` and
    # ``RuleKind.SEARCH_TIE`` rules), which no framework run reaches
    SEARCH = "search"


# when a rule's break shows: a moment of the run, or (memory rules) the phase that runs out of memory
RuleStage = Union[Stage, Phase]


STAGE_TEXT = {
    Stage.DRIVER: "at launch, in the driver's config validation (seconds)",
    Stage.TRAINER_INIT: "when the trainer is built, before the first rollout (verl, OpenRLHF: after Ray starts)",
    Stage.WORKER_INIT: "when the GPU workers start (after model loading begins)",
    Stage.FIRST_STEP: "in the first training step (after the first rollout)",
    Stage.RUNTIME: "during training, in code that does not validate up front",
    Stage.ADVICE: "never fails, but the run is unlikely to do what you want",
    Stage.SEARCH: "not a framework rule: a restriction of the search space",
}


def stage_text(stage: RuleStage | str) -> str:
    """When a break of a rule at ``stage`` (a ``RuleStage`` or its value) makes the run fail, in words."""
    if stage in Stage._value2member_map_:
        return STAGE_TEXT[Stage(stage)]
    return Phase(stage).oom_text


class RuleKind(str, Enum):
    """What a rule is: the framework's own check, a memory limit of our cost model, or a restriction of the
    search space (a tie makes one variable follow another, as the framework's defaults do)."""

    FRAMEWORK = "framework"
    MEMORY = "memory"  # ``<fw>.memory.<phase>``: the phase's peak within the GPU's usable memory
    SEARCH = "search"
    SEARCH_TIE = "search_tie"  # ``search.tie.<follower>``


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class VarSpec:
    """One config value: its name in rules, its native key, and its meaning."""

    name: str
    key: str
    kind: str = "int"  # int | bool
    default: Value = None
    optional: bool = False  # may be unset (None); then ``<name>_set`` is False
    description: str = ""

    @property
    def set_flag(self) -> str:
        return f"{self.name}_set"


def bool_names(variables: Mapping[str, VarSpec]) -> frozenset[str]:
    """The names of the boolean variables (a cost spec's ``bool_names``)."""
    return frozenset(n for n, s in variables.items() if s.kind == "bool")


def optional_names(variables: Mapping[str, VarSpec]) -> frozenset[str]:
    """The names of the variables that may be unset (a cost spec's ``optional``)."""
    return frozenset(n for n, s in variables.items() if s.optional)


@dataclass(frozen=True)
class Derived:
    """A named quantity computed from variables, shown in messages and costs."""

    name: str
    expr: IntExpr | BoolExpr
    description: str = ""


@dataclass(frozen=True)
class Rule:
    """``when`` implies ``holds``; a violation prints ``message`` with numbers."""

    id: str
    holds: BoolExpr
    message: str
    stage: RuleStage
    source: str
    when: BoolExpr = BoolConst(True)
    severity: Severity = Severity.ERROR
    explanation: str = ""
    # An error rule broken while ``tolerance`` holds is reported as a warning with ``tolerance_message``:
    # the config may still run (memory inside the safety margin). The search still enforces ``holds``.
    tolerance: Optional[BoolExpr] = None
    tolerance_message: str = ""
    kind: RuleKind = RuleKind.FRAMEWORK
    # what a search tie makes follow another variable (``search.tie.<subject>``); "" for other kinds
    subject: str = ""

    @property
    def expr(self) -> BoolExpr:
        return self.when.implies(self.holds)

    def reads(self) -> set[str]:
        out = variables(self.holds) | variables(self.when)
        return out | variables(self.tolerance) if self.tolerance is not None else out


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    stage: RuleStage
    source: str
    severity: Severity = Severity.ERROR
    tolerated: bool = False  # an error rule broken within its tolerance: a warning the search avoids

    def to_dict(self) -> dict:
        out = {
            "rule": self.rule,
            "message": self.message,
            "stage": self.stage.value,
            "severity": self.severity.value,
            "source": self.source,
        }
        if self.tolerated:
            out["tolerated"] = True
        return out


@dataclass
class CheckResult:
    violations: list[Violation]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (rule id, why)
    env: dict[str, Number] = field(default_factory=dict)

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if v.severity is Severity.WARNING]

    @property
    def valid(self) -> bool:
        """No error: the framework accepts the config (it may still sit inside a tolerance)."""
        return not self.errors

    @property
    def tolerated(self) -> list[Violation]:
        return [v for v in self.violations if v.tolerated]

    @property
    def strictly_valid(self) -> bool:
        """No error and no tolerated break: what the solver's answers satisfy (its model enforces every
        error rule's ``holds``)."""
        return not self.errors and not self.tolerated


def is_set(name: str) -> BoolVar:
    """True when the optional variable ``name`` was given a value."""
    return BoolVar(f"{name}_set")


# Placeholder value of an unset optional integer: every rule that reads it is
# guarded by its ``_set`` flag, so the number never shows in a message.
UNSET_PLACEHOLDER = 1


@dataclass
class RuleSet:
    framework: str
    version: str
    variables: dict[str, VarSpec]
    derived: list[Derived]
    rules: list[Rule]
    # a rule set whose compiled checks this one takes for the rules and derived quantities it shares with it (the
    # same objects), compiling only the others: ``extended`` adds a few rules (ties, memory) to a hundred, and
    # compiling them all again was a tenth of recommend's own time
    compiled_like: InitVar[Optional["RuleSet"]] = None

    def __post_init__(self, compiled_like: Optional["RuleSet"] = None) -> None:
        ids = [r.id for r in self.rules]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"duplicate rule ids: {sorted(dup)}")
        like = compiled_like
        shared_derived = {id(d): fns for d, fns in zip(like.derived, like._derived_fns)} if like is not None else {}
        shared_rules = {r.id: r for r in like.rules} if like is not None else {}
        self._derived_fns = [shared_derived.get(id(d)) or (d.name, variables(d.expr), compile_python(d.expr))
                             for d in self.derived]
        self._rule_fns, self._tolerance_fns = {}, {}
        for r in self.rules:
            same = shared_rules.get(r.id) is r
            self._rule_fns[r.id] = like._rule_fns[r.id] if same else compile_python(r.expr)
            if r.tolerance is not None:
                self._tolerance_fns[r.id] = like._tolerance_fns[r.id] if same else compile_python(r.tolerance)
        self._applicable_cache: dict[frozenset, tuple[list[Rule], list[tuple[str, str]]]] = {}
        # each optional variable's ``_set`` flag (base_env's inner loop: enumerate checks every listed config)
        self._set_flags = {name: spec.set_flag for name, spec in self.variables.items() if spec.optional}

    def extended(self, extra: list[Rule], derived: list[Derived] | None = None) -> "RuleSet":
        """The same rule set plus ``extra`` rules (search-space ties, memory limits) and derived costs."""
        return RuleSet(self.framework, self.version, self.variables, self.derived + list(derived or []),
                       self.rules + list(extra), compiled_like=self)

    # -- names ---------------------------------------------------------------
    def by_key(self) -> dict[str, VarSpec]:
        return {v.key: v for v in self.variables.values()}

    def rule(self, rule_id: str) -> Rule:
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise KeyError(rule_id)

    # -- concrete evaluation ---------------------------------------------------
    def base_env(self, values: Mapping[str, Value]) -> dict[str, Number]:
        """Variable values (by rule name) with ``_set`` flags for optional ones."""
        env: dict[str, Number] = {}
        flags, variables = self._set_flags, self.variables
        for name, value in values.items():
            flag = flags.get(name)
            if flag is not None:  # an optional variable
                env[flag] = value is not None
                env[name] = UNSET_PLACEHOLDER if value is None else value
            elif value is not None or name not in variables:  # model constants and flags are given directly
                env[name] = value
        return env

    def full_env(self, values: Mapping[str, Value]) -> dict[str, Number]:
        """``base_env`` plus every derived quantity whose inputs are known."""
        env = self.base_env(values)
        for name, needs, fn in self._derived_fns:
            if needs <= env.keys():
                env[name] = fn(env)
        return env

    def applicable(self, known: Iterable[str]) -> tuple[list[Rule], list[tuple[str, str]]]:
        """Rules whose inputs are all known, and the skipped ones with why."""
        known = frozenset(known)
        if known in self._applicable_cache:
            return self._applicable_cache[known]
        key = known
        known = set(known)
        derived_inputs = {d.name: variables(d.expr) for d in self.derived}
        for d in self.derived:  # derived names are known when their inputs are
            if derived_inputs[d.name] <= known:
                known.add(d.name)
        ok, skipped = [], []
        for r in self.rules:
            missing = r.reads() - known
            if missing:
                skipped.append((r.id, f"needs {', '.join(sorted(missing))}"))
            else:
                ok.append(r)
        self._applicable_cache[key] = (ok, skipped)
        return ok, skipped

    def failing_errors(self, values: Mapping[str, Value]) -> list[str]:
        """Ids of the error rules ``values`` break, without their messages (the repair search's inner loop)."""
        return self.failing(values, Severity.ERROR)

    def failing(self, values: Mapping[str, Value], severity: Severity) -> list[str]:
        """Ids of the rules of ``severity`` that ``values`` break, without their messages."""
        env = self.full_env(values)
        rules, _ = self.applicable(env.keys())
        return [r.id for r in rules if r.severity is severity and not self._rule_fns[r.id](env)]

    def check(self, values: Mapping[str, Value]) -> CheckResult:
        """Every violated rule, with its message filled in from ``values``."""
        env = self.full_env(values)
        rules, skipped = self.applicable(env.keys())
        out: list[Violation] = []
        shown = None
        for r in rules:
            if not self._rule_fns[r.id](env):
                if shown is None:  # unset optional values print as null, not as their placeholder
                    shown = dict(env)
                    for spec in self.variables.values():
                        if spec.optional and env.get(spec.set_flag) is False:
                            shown[spec.name] = "null"
                tol = self._tolerance_fns.get(r.id)
                if tol is not None and tol(env):
                    out.append(Violation(r.id, format_message(r.tolerance_message, shown), r.stage, r.source,
                                         Severity.WARNING, tolerated=True))
                else:
                    out.append(Violation(r.id, format_message(r.message, shown), r.stage, r.source, r.severity))
        return CheckResult(out, skipped, env)


class _Shown:
    """A value of a message: ``{name:gib}`` shows a MiB count in GiB with one decimal (the unit every table and
    verdict uses); any other format as the value's own."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        if spec == "gib" and isinstance(self.value, (int, float)) and not isinstance(self.value, bool):
            return f"{self.value / 1024:.1f}"
        return format(self.value, "" if spec == "gib" else spec)


def format_message(template: str, env: Mapping[str, Any], missing: Any = None) -> str:
    """Fill ``{name}`` fields from ``env`` (``{name:gib}``: MiB shown in GiB); a missing name shows as ``?``, or as
    ``missing(name)`` says."""

    class _Env(dict):
        def __getitem__(self, key: str) -> Any:
            if key in self:
                return _Shown(super().__getitem__(key))
            return _Shown("?" if missing is None else missing(key))

    return template.format_map(_Env(env))

