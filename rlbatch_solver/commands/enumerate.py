"""``enumerate``: every valid config of a scenario's search space, and with a GPU and a model every one that fits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..deadline import Deadline
from ..frameworks.base import Space
from ..rules.base import Value
from ..scenario import Scenario
from ..solver.settings import DEFAULT_TIME_LIMIT_S
from .common import model_card, release_notes, validate_solutions


def no_fit_search_seconds(time_limit_s: float) -> float:
    """The budget of what a listing with memory that fits none searches after it (the floor, recommend's switches:
    _switches_fit): a quarter of --time-limit, at least a second, on top of the listing's."""
    return max(1.0, time_limit_s / 4)


if TYPE_CHECKING:
    from ..costmodel.host import HostReport
    from ..solver.explain import Conflict


# how the search for the switches a fit needs (_switches_fit) ended, as the JSON's switches_search says it
SWITCHES_SEARCH = {
    "not_run": "not searched: a config fits, memory was not applied, or the listing was cut short before proving "
               "none fits",
    "no_switches": "none fits and the listing holds no memory switch at a default that another setting could move",
    "proven_none": "proven that no setting of the switches fits (switches_fit is empty)",
    "optimal": "switches_fit moves the fewest switches a fit needs (proven)",
    "cut_short": "switches_fit fits, found within the time limit, not proven the fewest",
    "nothing_found": "the time limit cut the search short before it found a setting that fits, or proved none does",
}


@dataclass
class EnumerateReport:
    framework: str
    version: str
    solutions: list[dict[str, Value]]
    native: list[list[str]]
    complete: bool
    status: str
    raw_size: int
    wall_time_s: float
    space: Space
    # with a GPU and a model: every config listed fits (the memory rules recommend solves with); per config, the phase
    # with the least headroom, its peak and headroom (MiB); empty when memory was not applied
    memory_applied: bool = False
    fits: list[dict[str, Any]] = field(default_factory=list)
    gpu: str = ""
    capacity_mib: int = 0
    phase_capacity_mib: dict[str, int] = field(default_factory=dict)  # phase -> its line (a vLLM rollout's differs)
    conflict: Conflict | None = None  # when nothing is valid
    # none fits: the settings of the switches recommend searches (and this listing holds at the framework's defaults)
    # under which one does, as native arguments; [] when none does or there are none to search
    switches_fit: list[str] = field(default_factory=list)
    switches_tried: list[str] = field(default_factory=list)  # the variables of those switches (searched for it)
    # how that search ended (SWITCHES_SEARCH): switches_fit_fewest is True only where it proved switches_fit the fewest
    switches_search: str = "not_run"
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule id -> (least MiB, its line)
    # the node's RAM (--host-mem, or the scenario's host_mem_gib) every listed config's host estimate was held to;
    # None: not checked. ``host_excluded``: the valid configs that fit the GPUs but not the node (left out of the
    # list); ``host_least``: the least estimate among them; ``host_most``: the largest estimate listed
    host_mem_gib: float | None = None
    host_excluded: int = 0
    host_least: HostReport | None = None
    host_most: HostReport | None = None
    # what recommend says first of the same scenario: a named release judged by another's rules (swift==3.8.0 by
    # 3.10.3's), then the --set/--search keys suspected misspelt
    notes: list[str] = field(default_factory=list)

    @property
    def switches_fit_fewest(self) -> bool:
        """switches_fit is a fit proven to move the fewest switches (the search was not cut short by the limit)."""
        return self.switches_search == "optimal"

    @property
    def count(self) -> int:
        return len(self.solutions)


def enumerate(  # noqa: A001 - the public name users expect
    scenario: Scenario,
    *,
    limit: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> EnumerateReport:
    """Every valid config in the scenario's search space (up to ``limit``); with a GPU and a model, every valid
    config whose every phase fits (``check``'s memory rules and margin); with the node's RAM too
    (``scenario.host_mem_gib``), every one of those whose host estimate fits it (``check``'s host estimate, config by
    config: the others are counted in ``host_excluded``, not listed)."""
    deadline = Deadline(time_limit_s)  # the command's: its imports and set-up count too
    from ..solver.model import enumerate_solutions
    from .recommend import set_keys

    fw = scenario.judged_by()
    # a --set key the release's parser refuses would stop every command listed (recommend's check)
    _, key_notes = set_keys(scenario)
    gpu = None
    if scenario.gpu:  # a mistyped GPU is an error even without a model
        from ..catalog.gpus import load_gpu

        gpu = load_gpu(scenario.gpu)
    card = model_card(scenario.model)
    space = fw.space(scenario, card)
    ruleset = fw.ruleset.extended(space.extra_rules)
    terms = None
    if scenario.host_mem_gib is not None and (gpu is None or card is None):
        from ..errors import InputError

        raise InputError("host-mem", f"the node's RAM ({scenario.host_mem_gib:g} GiB) is held against each config's "
                         "host estimate, which needs the model and the GPU type (the states offloaded, the engines' "
                         "weights, the GPUs of a node).", "add --gpu and --model, or drop --host-mem.")
    if gpu is not None and card is not None:
        from ..costmodel.tables import build_cost_terms, with_length_fraction, with_mean_lengths

        spec = with_mean_lengths(with_length_fraction(fw.cost_spec(card, gpu), scenario.length_fraction),
                                 scenario.mean_prompt_length, scenario.mean_response_length)
        terms = build_cost_terms(spec, space.domains, time=False, label=fw.value_words)
        ruleset = ruleset.extended(terms.rules, terms.derived)
    # the listing has the whole limit (a listing cut short by a search it may not need is a worse answer); a
    # listing that fits none then has a budget of its own for the floor and recommend's switches (_switches_fit)
    res = enumerate_solutions(ruleset, space.domains, limit=limit, time_limit_s=time_limit_s if terms is None
                              else deadline.left())
    envs = {id(s): env for s, env in zip(res.solutions, validate_solutions(ruleset, res.solutions))}
    solutions, host = res.solutions, None
    if terms is not None and scenario.host_mem_gib is not None:
        solutions, host = _fit_host(spec, gpu.name, scenario.host_mem_gib, res.solutions)
    native = [fw.export(s, space) for s in solutions]
    report = EnumerateReport(fw.name, fw.version, solutions, native, res.complete, res.status,
                             space.raw_size, res.wall_time_s, space, notes=[*release_notes(fw), *key_notes])
    if not res.solutions and res.status == "infeasible":
        report.conflict = _rules_conflict(fw, space, time_limit_s, memory=terms is not None)
    if host is not None:
        report.host_mem_gib = scenario.host_mem_gib
        report.host_excluded, report.host_least, report.host_most = host
    if terms is not None:
        report.memory_applied, report.gpu, report.capacity_mib = True, gpu.name, terms.capacity_mib
        report.phase_capacity_mib = dict(terms.phase_capacity_mib)
        report.fits = [_headroom(ruleset, terms, s, envs[id(s)]) for s in solutions]
        if not res.solutions and res.status == "infeasible":
            from .recommend import memory_floor

            after = Deadline(no_fit_search_seconds(time_limit_s))
            report.memory_floor = memory_floor(ruleset, space.domains, terms, after.within(after.share(0.5)))
            report.switches_tried, report.switches_fit, report.switches_search = _switches_fit(
                fw, scenario, card, spec, space, after)
    return report


def _rules_conflict(fw: Any, space: Any, time_limit_s: float, *, memory: bool) -> Conflict | None:
    """No config of the space is valid: the conflicting rules of the rules alone, without memory (as recommend's
    report.conflict). With memory, a listing that fits none may be empty for the rules' sake (fixed values that break
    one: unsloth --set load_in_16bit=true beside the default load_in_4bit), which the memory floor and its help would
    misname; where the rules hold together, memory is what fits none: None."""
    from ..solver.explain import conflicting_rules

    conflict = conflicting_rules(fw.ruleset.extended(space.extra_rules), space.domains,
                                 time_limit_s=max(0.05, time_limit_s / 4))
    return None if memory and not conflict.rules else conflict


def _switches_fit(fw: Any, scenario: Scenario, card: Any, spec: Any, space: Any,
                  deadline: Any) -> tuple[list[str], list[str], str]:
    """None of the listing's configs fits: the memory and speed switches ``recommend`` searches (offload, ZeRO stage,
    TRL's weights dtype, the engine's memory share, the sleep level), which the listing holds at the framework's
    defaults, searched for a config that fits moving the fewest of them off their defaults: (the switches' variables
    searched, the --set pairs of the ones it moves, or [] where none fits either, how the search ended: one of
    ``SWITCHES_SEARCH``); what is left of the command's ``deadline`` bounds it: cut short, it answers a setting that
    fits (not proven the fewest), or nothing searched where it found none. A listing of "0 configs fit" where
    recommend answers with one (TRL's fp32 weights by default, ms-swift's 7B without DeepSpeed) says how, by the
    settings a fit needs and no more, for every framework alike."""
    from ..costmodel.tables import build_cost_terms
    from ..solver.repair import fewest_moved

    wide = fw.space(scenario, card, with_knobs=True)
    knobs = {k: v for k, v in wide.domains.items() if space.domains.get(k) != v and k in space.domains}
    if not knobs:
        return [], [], "no_switches"
    held = {k: space.domains[k][0] for k in knobs}
    # the default stays a choice where recommend's domain leaves it out (ms-swift searches ZeRO 2 and 3 only)
    domains = {**wide.domains, **{k: list(dict.fromkeys([held[k], *v])) for k, v in knobs.items()}}
    terms = build_cost_terms(spec, domains, time=False, label=fw.value_words)
    ruleset = fw.ruleset.extended(wide.extra_rules).extended(terms.rules, terms.derived)
    found, status = fewest_moved(ruleset, domains, held, time_limit_s=deadline.left())
    if found is None:  # proven that none fits, else nothing is known
        return (list(knobs), [], "proven_none") if status == "infeasible" else ([], [], "nothing_found")
    from ..frameworks.overrides import exported_pair

    held_args = fw.export({**found, **held}, wide)
    pairs = [exported_pair(a) for a in fw.export(found, wide) if a not in held_args and not a.startswith("(")]
    return list(knobs), [f"--set {key.lstrip('-+')}={'true' if value is None else value}" for key, value in pairs], \
        "optimal" if status == "optimal" else "cut_short"


def _headroom(ruleset: Any, terms: Any, solution: dict[str, Value], env: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """The phase of a fitting config with the least headroom: its name, peak and headroom (MiB); ``env``: the
    config's ``ruleset.full_env``, where the caller has it (the check of every listed config computed it)."""
    env = ruleset.full_env(solution) if env is None else env
    margins = {p: terms.capacity_of(p, env) - int(env[f"mem_{p}"]) for p in terms.phases if f"mem_{p}" in env}
    phase = min(margins, key=margins.get)
    return {"phase": phase, "peak_mib": int(env[f"mem_{phase}"]), "headroom_mib": margins[phase]}


def _fit_host(spec: Any, gpu_name: str, host_mem_gib: float, solutions: list[dict[str, Value]]
              ) -> tuple[list[dict[str, Value]], tuple[int, HostReport | None, HostReport | None]]:
    """The configs whose host estimate fits the node's RAM, and (how many did not, the least estimate of those,
    the largest of the ones that fit). Each config is estimated (``check.host_check``, about 0.2 ms), so the list is
    exact: no config is left out or kept by a rule on a few keys."""
    from .check import host_check

    kept, excluded, least, most = [], 0, None, None
    for s in solutions:
        host = host_check(spec, s, gpu_name, host_mem_gib)
        if host.fits is False:
            excluded += 1
            least = host if least is None or host.peak_bytes < least.peak_bytes else least
        else:
            kept.append(s)
            most = host if most is None or host.peak_bytes > most.peak_bytes else most
    return kept, (excluded, least, most)
