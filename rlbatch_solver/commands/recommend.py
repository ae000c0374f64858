"""``recommend``: the best valid, fitting config of a scenario by an objective (time per sample by default)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from ..catalog.models import ModelCard, launch_id, load_model
from ..costmodel.efficiency import Efficiency
from ..errors import InputError
from ..frameworks import get_framework
from ..frameworks.base import of_absent_model
from ..frameworks.key_names import UnknownKey, findings, refusal_text, refused_violations
from ..rules.base import Rule, RuleKind, RuleSet, Stage, Value
from ..rules.expr import IntVar
from ..rules.ids import tied_followers
from ..scenario import Scenario
from ..solver.settings import DEFAULT_TIME_LIMIT_S, SOLVER_WORKERS
from .common import framework_for, memory_evaluated, model_card, release_notes, validate_solutions, waste_text

if TYPE_CHECKING:
    from ..catalog.gpus import GPU
    from ..costmodel.host import HostReport
    from ..costmodel.memory import MemoryReport
    from ..costmodel.tables import CostSpec, CostTerms
    from ..frameworks.base import Framework, Space
    from ..rules.base import Violation
    from ..solver.explain import Conflict


@dataclass
class Choice:
    """One ranked config with its numbers."""

    rank: int
    values: dict[str, Value]
    native: list[str]
    step_time_s: float
    phase_seconds: dict[str, float]
    memory: dict[str, MemoryReport]  # phase -> its memory terms
    objective: int
    proven: bool
    tokens_per_s: float
    waste: str = ""  # what the config makes the framework pad, in words ('' when nothing): ranked lower for it
    # asynchronous training on separate pools: (pool, seconds per step, idle ratio) (tables.stage_seconds)
    stages: list[tuple[str, float, float]] = field(default_factory=list)
    samples: int = 0  # samples (responses) one step processes (CostSpec.samples)
    # phase -> its title where the framework names the GPUs it runs on (check.server_titles: a rollout server's GPU)
    titles: dict[str, str] = field(default_factory=dict)

    def peak_mib(self) -> dict[str, float]:
        return {p: r.peak(p) / 2**20 for p, r in self.memory.items()}


@dataclass
class RecommendReport:
    framework: str
    version: str
    scenario: Scenario
    gpu: GPU
    model: ModelCard
    choices: list[Choice]
    status: str
    proven: bool
    wall_time_s: float
    capacity_mib: int
    raw_size: int
    conflict: Conflict | None = None  # when nothing fits
    memory_floor: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule id -> (least MiB, capacity)
    space: Space | None = None
    start: "Start | None" = None  # recommend --from: the user's own config, judged like every choice
    lengths: dict[str, Any] = field(default_factory=dict)  # the mean lengths the step times assume (check's)
    placement: Any = None  # commands.placement.PlacementSummary (recommend --placement): every layout's best
    # how the answer stands to the memory model's observed error: headroom kept, or why the best is tight ('' none)
    margin_note: str = ""
    host: HostReport | None = None  # of the best config: the node's RAM
    # when nothing fits the given node's RAM (--host-mem): the least host estimate of the configs it excluded
    host_unfit: HostReport | None = None
    # the algorithm's batch sizes recommend kept at the framework's defaults (native key -> value; empty: all given,
    # or --free-batch), and how it says so
    batch_kept: dict[str, Any] = field(default_factory=dict)
    batch_note: str = ""
    # keys of --set / --search or of the --from config the release lacks (key_names.py), and the notes saying so
    unknown_keys: list[UnknownKey] = field(default_factory=list)
    key_notes: list[str] = field(default_factory=list)
    # configs the search found that a listed one makes pointless (as fast, no more memory in any phase: alike.py)
    left_out: list[Choice] = field(default_factory=list)

    @property
    def best(self) -> Choice | None:
        return self.choices[0] if self.choices else None


@dataclass
class Start:
    """The user's own config (``recommend --from``), judged by the same rules and cost model as every choice."""

    native: list[str]  # the config as the framework would print it
    searched: list[str]  # native keys recommend was free to choose (the rest stay as the config has them)
    broken: list[Violation]  # the errors it has (memory included)
    step_time_s: float
    phase_seconds: dict[str, float]
    memory: dict[str, MemoryReport]
    tokens_per_s: float
    waste: str = ""
    given: list[str] = field(default_factory=list)  # the free keys the config sets (native spelling)
    verdict: str = ""  # how it stands against the best config: start_verdict
    values: dict[str, Value] = field(default_factory=dict)  # its rule values, the space's fixed ones filled in
    samples: int = 0  # samples (responses) one step processes: the batch per step recommend --from keeps
    # what the user wrote, to print back unchanged when it is the answer (verdict "keep"): the arguments the config
    # sets, and the launch script's whole command line where the config was one (``entry.recommend_from``)
    own: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    # the environment that command starts with (``LaunchScript.environment``): the answer printed whole keeps it
    environment: list[str] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)  # as Choice.titles
    # the config's keys its release refuses by name, as written -> the item --write puts in their place (None: none,
    # the key is taken out): an older release's names (OpenRLHF's --vllm_num_engines, --bf16), read as fix reads
    # them (``fix_job.refused_by_name``)
    renamed: dict[str, str | None] = field(default_factory=dict)
    # the reader of a newer layout's entry point the script was read with (``LaunchScript.layout``: SkyRL's unified
    # package): the answer is printed in that layout's names, as --write writes it (``launch_script.in_layout``)
    layout: str | None = None

    @property
    def runs(self) -> bool:
        return not self.broken

    def peak_mib(self) -> dict[str, float]:
        return {p: r.peak(p) / 2**20 for p, r in self.memory.items()}


# recommend --from: a gain under 2% of the step is reported as no gain worth a change (the step-time error of
# docs/accuracy.md is tens of percent)
MATERIAL_GAIN = 0.02


def start_verdict(start: Start, best: Choice | None, headroom: bool = False) -> str:
    """``recommend --from``: what to do with the user's config, beside the best config found.

    ``"no-config"``: no config was found; ``"does-not-run"``: yours breaks rules, the best one runs; ``"faster"``:
    the best one is materially faster (``MATERIAL_GAIN``); ``"within-error"``: faster by less, far inside the cost
    model's error; ``"tight"``: yours is as fast or faster, but the best was chosen for its memory headroom
    (``headroom``: the search kept the memory model's error free, and yours does not); ``"keep"``: nothing in the
    search space is faster (within 0.05 s), and the answer is the user's config (``yours_first``); ``recommend``
    turns it into ``"objective"`` where an objective other than time chose another config (fewer GPUs, more memory
    to spare)."""
    if best is None:
        return "no-config"
    if start.broken:
        return "does-not-run"
    if headroom and best.step_time_s >= start.step_time_s - 0.05:
        return "tight"
    if best.step_time_s < start.step_time_s * (1 - MATERIAL_GAIN):
        return "faster"
    if best.step_time_s < start.step_time_s - 0.05:
        return "within-error"
    return "keep"


# the share of the command's time left that its first solve may take; the runners-up, ties, host-RAM re-solves and
# the headroom solve share the rest (each a share of what is left: the command ends within --time-limit)
FIRST_SOLVE_SHARE = 0.8

OBJECTIVE_SENSE = {"time": False, "memory-headroom": True, "gpus": False}


def scenario_from_config(framework: str, flat: Mapping[str, Any], *, gpu: str | None, model: str | ModelCard | None,
                         gpus: int | None = None, objective: str = "time",
                         length_fraction: float = 1.0) -> tuple[Scenario, dict[str, Value], set[str]]:
    """The scenario a pasted config (or launch script) runs, for ``recommend --from``.

    Kept as the config has them: the model, the GPUs, the lengths, samples per prompt, the algorithm
    settings and what changes the training (``Framework.shapes_learning``: prompts per step, per update).
    Free: what ``Framework.searchable`` names (micro batches, token budgets, parallel layout, memory
    switches). Returns the scenario, the config's rule values and the free variables.
    """
    fw, _ = framework_for(get_framework(framework), flat)
    card = model_card(model)
    if card is None:
        raise InputError("model", "no model given, and the config names none the catalog knows.",
                         "pass --model (e.g. qwen2.5-7b) or a path to a config.json.")
    values = fw.to_values(flat, gpus=gpus, model=card)
    free, drop = free_of_config(fw, flat, values)
    fixed = {k: v for k, v in fw.normalize(flat).items() if k not in drop}
    fields = fw.scenario_fields(values)
    # a release the config's flags date it to, judged by another's pack (ms-swift ``for_config``: 3.5.0 by 3.10.3's,
    # 3.1.0 by 3.3.1's): the scenario names the pack and carries the dated release, so that its own code prices the
    # search's configs as check prices them (a dated release --framework cannot name, 3.1.0, stays readable)
    dated = getattr(fw, "dated", False)
    scenario = Scenario(framework=f"{fw.name}=={fw.version}" if fw.pinned else fw.name, gpu=gpu,
                        model=card, dated_release=fw.code_release if dated else None,
                        dated_newest=fw.dated_newest if dated else None,
                        algorithm=None, fixed=fixed, objective=objective, length_fraction=length_fraction, **fields)
    return scenario, values, free


def free_of_config(fw: Any, flat: Mapping[str, Any], values: Mapping[str, Value]) -> tuple[set[str], set[str]]:
    """The variables recommend --from may choose for a config (``Framework.searchable``) and the native keys dropped
    from it so that the search chooses them (``Framework.free_keys``), less the keys whose value dates the config's
    release (``Framework.dated_by_value``: verl 0.6.1's rollout.mode=sync): they stay as the config has them, so that
    the answer is judged by the release the config is. A deprecated key the search replaces (verl's global micro
    batches: the repair policy's ``unset_only``) is still replaced."""
    variables = fw.ruleset.variables
    replaced = {variables[n].key for n in fw.repair_policy(values).unset_only if n in variables}
    dated = fw.dated_by_value(flat) - replaced
    free = {n for n in fw.searchable(values) if n not in variables or variables[n].key not in dated}
    return free, fw.free_keys(values) - dated


def _start_domains(domains: dict[str, list[Value]], values: Mapping[str, Value], free: set[str]) -> None:
    """The user's values join the search: a free variable the space searches also tries the user's value
    (so the best is never worse than the config, when that runs); one the space does not search keeps it. A variable
    that is not free keeps the config's value even where the space would search it (TRL's space searches
    gradient_accumulation_steps for a kept total: the config's own, or GRPOConfig's default 1, is the batch per step
    recommend --from keeps)."""
    for name in set(domains) & set(values):
        mine, domain = values[name], domains[name]
        if name in free and len(domain) > 1:
            if mine not in domain:
                domains[name] = [*domain, mine]
        elif name in free or len(domain) > 1:  # not free, one value: the scenario's (the lengths, the GPUs)
            domains[name] = [mine]


def _pin_inert(fw: Any, domains: dict[str, list[Value]], values: Mapping[str, Value]) -> None:
    """Variables no candidate reads (``Framework.inert``: vLLM's settings with vLLM off) keep one value, the config's
    (else the space's first), so the search neither lists them as free nor offers their values as ties."""
    for name in fw.inert(domains) & set(domains):
        if len(domains[name]) > 1:
            domains[name] = [values[name] if name in values else domains[name][0]]


def _tie_the_config_breaks(rule: Any, values: Mapping[str, Value]) -> bool:
    """A search-space tie (``search.tie.X``: X follows another key, as the framework's defaults do) that the user's
    own config does not keep (its log-prob token budget differs from the actor's): the config's choice stands."""
    if rule.kind is not RuleKind.SEARCH_TIE:
        return False
    names = [n for n in rule.reads() if not n.endswith("_set")]
    return len(names) == 2 and all(n in values for n in names) and values[names[0]] != values[names[1]]


def _key_of(fw: Any, name: str) -> str:
    """The native key of a variable (cost-only variables have none in the rule set: their name)."""
    try:
        return fw.native_key(name)
    except KeyError:
        return name


def _judge_start(fw: Any, ruleset: RuleSet, spec: Any, space: Any, values: Mapping[str, Value],
                 free: set[str], gpu_name: str = "", host_mem_gib: float | None = None) -> Start:
    """The user's config judged as the choices are: the rules, the memory model and, with the node's RAM given
    (--host-mem, the constraint the choices are held to: commands/host_fit.py), the host estimate."""
    from ..costmodel.tables import full_reports, step_seconds, tokens_per_step

    full = {**{k: v[0] for k, v in space.domains.items() if len(v) == 1}, **values}
    broken = ruleset.check(full).errors
    if host_mem_gib is not None:
        from .check import host_check, host_violation

        over = host_violation(fw, host_check(spec, full, gpu_name, host_mem_gib))
        broken = broken + ([over] if over is not None else [])
    memory, seconds = full_reports(spec, full)
    total = step_seconds(spec, full, seconds)
    tokens = tokens_per_step(spec, full)
    followers = tied_followers(space.extra_rules)
    keys = sorted({_key_of(fw, n) for n in free - followers
                   if n in space.domains and len(space.domains[n]) > 1
                   and not of_absent_model(n, lambda switch: switch not in full or bool(full[switch]))})
    from .check import server_titles

    return Start(fw.export(full, space), keys, broken, total, seconds, memory, tokens / total if total else 0.0,
                 waste_text(fw, ruleset, full, full), values=full, samples=int(spec.samples(full)),
                 titles=server_titles(fw, spec, full, memory))


def yours_first(choices: list[Choice], start: Start, spec: Any, objective: Any, ruleset: RuleSet) -> list[Choice]:
    """recommend --from with nothing faster than the user's config (verdict ``keep``): the answer is that config, as
    the user wrote it, first; the configs the search found as fast follow as alternatives (ranks renumbered, one
    the same as the user's left out)."""
    from ..costmodel.tables import stage_seconds
    from ..rules.expr import evaluate

    try:
        score = int(evaluate(objective, ruleset.full_env(start.values)))
    except KeyError:  # a cost term the config's values do not reach: the best's, which it ties
        score = choices[0].objective
    yours = Choice(1, dict(start.values), list(start.native), start.step_time_s, start.phase_seconds, start.memory,
                   score, choices[0].proven, start.tokens_per_s, start.waste,
                   stage_seconds(spec, start.values, start.phase_seconds), start.samples, start.titles)
    others = [c for c in choices if c.native != start.native]
    return [yours] + [replace(c, rank=i) for i, c in enumerate(others, 2)]


def model_of(scenario: Scenario) -> ModelCard:
    """The scenario's model card (a catalog name, Hugging Face id or config.json path, or a card)."""
    if not scenario.model:
        raise InputError("model", "no model given.", "pass --model (e.g. qwen2.5-7b) or a path to a config.json.")
    return scenario.model if isinstance(scenario.model, ModelCard) else load_model(scenario.model)


def _gpu(scenario: Scenario, extra_gpus: str | Path | None = None):
    from ..catalog.gpus import load_gpu

    if not scenario.gpu:
        raise InputError("gpu", "no GPU type given.", "pass --gpu (e.g. rtx4090, a100-80gb, h100).")
    return load_gpu(scenario.gpu, extra_gpus)


@dataclass(frozen=True)
class Prepared:
    """What a scenario's solve needs: its framework, model, GPU, search space, cost model and rule set (its own
    rules plus the space's and the memory rules). Unpacks in that order, as the tuple it replaces did."""

    fw: Framework
    card: ModelCard
    gpu: GPU
    space: Space
    spec: CostSpec
    terms: CostTerms
    ruleset: RuleSet

    def __iter__(self) -> Iterator[Any]:
        return iter((self.fw, self.card, self.gpu, self.space, self.spec, self.terms, self.ruleset))


def best_command(report: RecommendReport) -> list[str]:
    """The best config as a whole command (``Framework.run_command``): the start words, the model the scenario
    names (its Hugging Face id), the framework example's data and reward, the answer's arguments; [] without an
    answer."""
    if not report.choices:
        return []
    model = launch_id(report.scenario.model)
    return answer_framework(report).run_command(report.best.native, report.best.values, model)


def answer_notes(report: RecommendReport) -> list[str]:
    """What ``check`` of the printed command says its reading assumed (``Framework.config_notes``: ms-swift's
    --quant_bits without --quant_method, loaded unquantized; its default LoRA tuner): the command read as check reads
    it pasted (its launcher's words apart, ``launch_script.parse_launch_script``), so that the answer says what the
    settings it fixed or searched mean to the framework; [] without an answer."""
    words = best_command(report)
    if not words:
        return []
    from ..launch_script import parse_launch_script
    from ..render import command_text

    fw = answer_framework(report)
    flat, _ = fw.parse(parse_launch_script(command_text(words), name="the printed command").args)
    return list(fw.config_notes(flat, priced=memory_evaluated(report.scenario.gpu, report.model)))


def from_command(report: RecommendReport, notes: list[str] | None = None) -> list[str] | None:
    """``recommend --from``: the best config as the user's whole command where its arguments alone do not paste (an
    environment word such as ``NPROC_PER_NODE=8``, accelerate's ``--num_processes``): the framework's start words
    and launcher, then the user's arguments, with no example data or reward, started with the environment of the
    user's script (``script_rewrite.with_environment``; ``notes`` gets what it changed there); None where the
    arguments paste after the user's own entry point as they are (Hydra overrides, plain flags)."""
    from ..frameworks.base import ENV_WORD
    from ..frameworks.overrides import exported_pair
    from ..script_rewrite import with_environment

    if not report.choices:
        return None
    fw = answer_framework(report)
    native = report.best.native
    env = [a for a in native if ENV_WORD.match(a)]
    launcher = [a for a in native if a.startswith("--") and exported_pair(a)[0] in fw.launcher_keys]
    if not env and not launcher:
        return None
    keys = {k.lstrip("-") for k in fw.model_keys}
    model = next((exported_pair(a)[1] for a in native if exported_pair(a)[0] in keys), None)
    words = fw.user_command(fw.run_command(native, report.best.values, model or ""), report.scenario.fixed)
    out: list[str] = []
    for w in words:  # the user's model once, where the framework writes it; no example inputs
        if w in out or (w in fw.example_inputs and w not in native) or (model is None and exported_pair(w)[0] in keys):
            continue
        out.append(w)
    out[0], changed = with_environment(out[0], report.start.environment if report.start is not None else [])
    if notes is not None:
        notes.extend(changed)
    return out


def companion_commands(report: RecommendReport) -> list[list[str]]:
    """The commands to start before ``best_command`` (``Framework.companion_commands``: TRL's ``trl vllm-serve`` in
    server mode), each as ``best_command``'s items; [] without an answer or none needed."""
    if not report.choices:
        return []
    model = launch_id(report.scenario.model)
    return answer_framework(report).companion_commands(report.best.native, report.best.values, model)


def answer_framework(report: Any) -> Any:
    """The framework at the release whose rules gave the answer (a recommend's or enumerate's report): TRL 0.14/0.15
    run vLLM on a GPU of their own, not a `trl vllm-serve` server; OpenRLHF's releases spell their flags their way.
    A release the scenario names that another's pack judges is that pack with the named release's own reading (TRL
    0.23.1: its GRPOConfig fields, with_named_release), as the search had it."""
    scenario = getattr(report, "scenario", None)
    named = scenario.judged_by() if scenario is not None else None
    if named is not None and named.name == report.framework and named.version == report.version:
        return named
    fw = get_framework(report.framework)
    if report.version == fw.version or len(fw.versions) < 2:
        return fw
    return get_framework(f"{report.framework}=={report.version}")


def keep_algorithm_batch(scenario: Scenario) -> tuple[Scenario, dict[str, Any], str]:
    """The scenario with the algorithm's batch sizes pinned (the user's, else the framework's defaults:
    ``Framework.kept_batch``), the defaults it pinned, and a sentence saying so. A throughput search would otherwise
    take the largest batch (time per sample falls as the batch grows) and change what the run learns: one update
    per step of a thousand prompts. ``free_batch`` opens them."""
    fw = scenario.judged_by()
    if scenario.free_batch:
        return scenario, {}, "batch sizes searched (--free-batch): the answer may change what each step trains on"
    kept = fw.kept_batch(scenario)
    totals = scenario.kept_totals or fw.kept_totals(scenario)  # a placement layout's solve: the job's, settled
    if not kept and not totals:
        return scenario, {}, ""
    pinned = replace(scenario, fixed={**kept, **scenario.fixed}, kept_totals=totals)
    by_key = fw.ruleset.by_key()
    as_default = all(fw.native_value(by_key[k].name, by_key[k].default) == v for k, v in kept.items())
    # in the release's own names (OpenRLHF before 0.10.2: rollout_batch_size)
    words = [f"{fw.native_key(by_key[k].name) if k in by_key else k}={v}" for k, v in kept.items()]
    for name, value in totals.items():
        what, product = _derived_text(fw, name)
        words.append(f"{value} {what} (= {product}: the search picks the factors)")
    given = set(fw.normalize(scenario.fixed))
    yours = not kept and all(set(_derived_text(fw, name)[1].split("*")) & set(by_key) <= given for name in totals)
    why = ("yours, on every GPU of the job: each placement layout picks its own factors" if yours
           else f"{fw.name}'s defaults for what you did not set" if as_default
           else f"{fw.name}'s defaults for what you did not set, kept as near as your batch and the GPUs allow")
    return pinned, {**kept, **totals}, (
        f"kept {', '.join(words)} ({why}): the algorithm's batch, not a speed setting; --set your own, or "
        "--free-batch to let the search change it (and what each step trains on)")


def gpu_count_keys(fw: Any) -> dict[str, str]:
    """The flags that set the framework's GPU count (``Framework.gpu_count_vars``: verl's trainer.n_gpus_per_node
    and trainer.nnodes, slime's and OpenRLHF's actor GPUs per node and nodes), by role (``gpus_per_node``,
    ``nnodes``), where a search may vary them; {} where the count is decided from other flags (TRL: accelerate's
    num_processes)."""
    variables = fw.ruleset.variables
    names = dict(zip(("gpus_per_node", "nnodes"), fw.gpu_count_vars))
    if not set(names.values()) <= set(variables):
        return {}
    keys = {role: variables[name].key for role, name in names.items()}
    # a flag of its own (TRL's per-node count is accelerate's num_processes / num_machines: decided, not searched)
    return keys if all(_is_flag(k) for k in keys.values()) else {}


def _is_flag(key: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9_.\-]+", key))


def _counts_placement_groups(fw: Any, ruleset: RuleSet) -> bool:
    """Whether the GPUs used are every GPU the Ray placement groups ask for (``gpus_needed``), the count's variables
    being the actor group's (slime, OpenRLHF), not the trainer's GPUs per node and nodes."""
    return (tuple(fw.gpu_count_vars) != ("gpus_per_node", "nnodes")
            and any(d.name == "gpus_needed" for d in ruleset.derived))


def gpus_used_expr(fw: Any, ruleset: RuleSet) -> Any:
    """The GPUs a config runs on, as ``--objective gpus`` minimizes it: the trainer's GPUs per node x nodes, or,
    where the count's variables are the actor group's (slime, OpenRLHF), the GPUs its Ray placement groups ask for
    (``gpus_needed``: the rollout engines, reference and critic included); None where the rule set has neither."""
    per_node, nodes = fw.gpu_count_vars
    if _counts_placement_groups(fw, ruleset):
        return IntVar("gpus_needed")
    if {per_node, nodes} <= set(ruleset.variables):
        return IntVar(per_node) * IntVar(nodes)
    return None


def gpus_used(fw: Any, values: Mapping[str, Value]) -> int:
    """``gpus_used_expr`` of one config (OpenRLHF's ``hardware`` is the cluster's count: some of it may be idle)."""
    if _counts_placement_groups(fw, fw.ruleset):
        needed = fw.ruleset.full_env(values).get("gpus_needed")
        if needed:
            return int(needed)
    return fw.hardware(values)[0]


def search_gpu_counts(scenario: Scenario) -> Scenario:
    """``--objective gpus`` asks how few of the GPUs given will do: where the framework's GPU count is its own keys
    (verl's trainer.n_gpus_per_node and trainer.nnodes, ms-swift's NPROC_PER_NODE and NNODES, slime's and OpenRLHF's
    actor-num-gpus-per-node and actor-num-nodes, whose other groups follow), the search tries each power of two up to
    the GPUs per node (and the count given), on 1 to the nodes given, unless the user set or searched those keys.
    TRL's count is decided (accelerate's num_processes): it runs on the --gpus given, and says so."""
    fw = scenario.judged_by()
    keys = gpu_count_keys(fw)
    if scenario.objective != "gpus" or not keys or any(k in scenario.fixed or k in scenario.search
                                                        for k in keys.values()):
        return scenario
    per_node, nodes = scenario.per_node, scenario.nnodes
    search = {keys["gpus_per_node"]: sorted({1 << i for i in range(per_node.bit_length())} | {per_node})}
    if nodes > 1:
        search[keys["nnodes"]] = list(range(1, nodes + 1))
    return replace(scenario, search={**scenario.search, **search})


def _derived_text(fw: Any, name: str) -> tuple[str, str]:
    """A derived quantity's description as what it counts and its formula (``completions per optimizer step:
    a*b``)."""
    what, _, product = next(d.description for d in fw.ruleset.derived if d.name == name).partition(": ")
    return what, product


def kept_total_rules(scenario: Scenario) -> list[Rule]:
    """The search rules that hold ``scenario.kept_totals`` (``keep_algorithm_batch``)."""
    return [Rule(f"search.kept.{name}", IntVar(name).eq(value), f"{name} = {{{name}}}, not the kept {value}",
                 Stage.SEARCH, "rlbatch-solver recommend: the algorithm's batch stays as given (--free-batch opens "
                 "it)", kind=RuleKind.SEARCH) for name, value in scenario.kept_totals.items()]


def prepare(scenario: Scenario, *, with_knobs: bool = True, extra_gpus: str | Path | None = None,
            start: tuple[Mapping[str, Value], set[str]] | None = None) -> Prepared:
    """Framework, model, GPU, search space and cost terms of a scenario (``start``: the values of a
    user's config and the variables free to change, from ``scenario_from_config``)."""
    from ..costmodel.tables import (build_cost_terms, with_efficiency, with_length_fraction, with_longest_response,
                                    with_mean_lengths, with_response_profile)

    fw = scenario.judged_by()
    card = model_of(scenario)
    gpu = _gpu(scenario, extra_gpus)
    space = fw.space(scenario, card, with_knobs=with_knobs)
    space.extra_rules += kept_total_rules(scenario)
    if start is not None:
        # what the scenario searches (--objective gpus: the GPU count keys) stays searched
        by_key = fw.ruleset.by_key()
        searched = {by_key[k].name for k in fw.normalize(scenario.search) if k in by_key}
        _start_domains(space.domains, start[0], start[1] | searched)
        space.extra_rules = [r for r in space.extra_rules if not _tie_the_config_breaks(r, start[0])]
    _pin_inert(fw, space.domains, start[0] if start is not None else {})
    spec = with_length_fraction(fw.cost_spec(card, gpu), scenario.length_fraction)
    if scenario.calibration:
        spec = with_efficiency(spec, Efficiency.from_mapping(scenario.calibration))
    spec = with_response_profile(spec, scenario.response_profile, scenario.dataset)
    spec = with_mean_lengths(spec, scenario.mean_prompt_length, scenario.mean_response_length)
    spec = with_longest_response(spec, scenario.longest_response_length)
    terms = build_cost_terms(spec, space.domains, label=fw.value_words)
    ruleset = fw.ruleset.extended(space.extra_rules + terms.rules, terms.derived)
    return Prepared(fw, card, gpu, space, spec, terms, ruleset)


def recommend(
    scenario: Scenario,
    *,
    top: int = 5,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    extra_gpus: str | Path | None = None,
    solver_workers: int = SOLVER_WORKERS,
    start: tuple[Mapping[str, Value], set[str]] | None = None,
    deadline: Any = None,
    search_arms: bool = True,
    notes: bool = True,
) -> RecommendReport:
    """The fastest (or roomiest) valid configs that fit, best first, with their memory and time.

    ``solver_workers``: CP-SAT threads per optimizing solve (default ``settings.SOLVER_WORKERS``, one: the same
    answers with less CPU; more only helps a space hard enough for CP-SAT's portfolio). ``start``: a user's
    config and what may change in it (``scenario_from_config``; ``recommend_from`` does both). ``deadline``: the
    command's ``Deadline`` when it started before this call (else ``time_limit_s`` from now): every step takes a
    share of what is left of it, so the whole call ends within it (plus the printing). ``search_arms``: the arms the
    default search holds that the user did not choose and that compare like for like (``LeftOut.by_default``) are
    searched in the same solve (``with_open_arms``); an answer without room searches the others
    (``wider_search``); off for a placement layout's solve, whose engine the layout fixes. ``notes``: the notes on
    the keys given and on the printed command (``searched_scenario``'s, ``answer_notes``); off for a placement
    layout's solve, whose notes the placement answer's replace.
    """
    from ..costmodel.tables import full_reports, stage_seconds, step_seconds, tokens_per_step
    from ..deadline import Deadline
    from ..solver.optimize import optimize
    from .check import server_titles

    # one budget for the whole command: building the space and its cost tables, every solve (the first, its tie,
    # the runners-up, the host-RAM re-solves, the headroom solve), and the conflict explained when none fits
    deadline = deadline or Deadline(time_limit_s)
    if top < 1:
        raise InputError("top", f"{top} must be at least 1.", "pass --top 5.")
    asked, both_arms = scenario, []
    if start is None and search_arms and scenario.placement is None:
        # the arms the default search would hold that the user did not choose (ms-swift's generation without vLLM):
        # searched in the same solve, so that the answer is the fastest valid config that fits either way (the
        # faster one may have room to spare, and so never ask for the wider search of wider_search.py)
        scenario, both_arms = with_open_arms(scenario)
        asked = scenario
    scenario, batch_kept, batch_note, unknown, key_notes = searched_scenario(scenario, start, notes=notes)
    if both_arms and notes:
        key_notes = [*key_notes, *(
            f"{a.what} searched too, beside {', '.join(f'{a.key}={v}' for v in a.values if v not in a.left)}, as "
            f"you did not set {a.key}: the answer is the fastest either way (--set {a.key}=... holds one)"
            for a in both_arms)]
    if scenario.placement is not None and start is None:
        from .placement import recommend_placement

        report = recommend_placement(scenario, top=top, deadline=deadline, extra_gpus=extra_gpus,
                                     solver_workers=solver_workers, recommend_one=recommend)
        report.batch_kept, report.batch_note = batch_kept, batch_note
        report.unknown_keys, report.key_notes = unknown, key_notes
        report.key_notes += [n for n in answer_notes(report) if n not in report.key_notes]
        return report
    fw, card, gpu, space, spec, terms, ruleset = prepare(scenario, extra_gpus=extra_gpus, start=start)
    objective_name = scenario.objective
    if objective_name == "memory-headroom":
        objective = terms.headroom_mib
    elif objective_name == "gpus" and (used := gpus_used_expr(fw, ruleset)) is not None:
        # fewest GPUs first; among equal counts, the fastest (time per sample is far below GPU_WEIGHT us)
        objective = used * GPU_WEIGHT + terms.time_us_per_sample
    else:  # time
        objective = terms.time_us_per_sample
    objective = _with_waste(ruleset, objective, objective_name, terms)
    # configs of one objective in one order, whatever the threads (--objective memory-headroom: the fastest of
    # equally roomy ones first, timed as --objective time times them, padding counted)
    then = tie_break(terms, space.domains, start[0] if start else None,
                     fastest=_with_waste(ruleset, terms.time_us_per_sample, "time", terms)
                     if objective_name == "memory-headroom" else None)

    # two more than asked: assignments that differ only in values the config does not use (micro batch sizes
    # under dynamic batching) print the same config and are shown once
    def solve(rules: RuleSet, limit_s: float):
        return optimize(rules, space.domains, objective, maximize=OBJECTIVE_SENSE[objective_name],
                        top=top if top <= 1 else top + 2, time_limit_s=limit_s, workers=solver_workers, then=then)

    # the first solve may take most of what is left: the steps after it are shares of the rest
    res = solve(ruleset, deadline.share(FIRST_SOLVE_SHARE))
    from .host_fit import fit_host, fitting

    # the node's RAM (--host-mem) as a constraint: configs whose host estimate does not fit are excluded, re-solved
    res, ruleset, host_unfit = fit_host(res, ruleset, space.domains,
                                        lambda rs: solve(rs, deadline.share(0.5)),
                                        spec, gpu.name, scenario.host_mem_gib, deadline.left)
    margin_note, fastest = "", res
    if objective_name in ("time", "gpus") and res.ranked:
        res, margin_note = _prefer_headroom(fw, ruleset, space, spec, terms, objective, res, top, deadline,
                                            solver_workers, then, count=(lambda values: gpus_used(fw, values))
                                            if objective_name == "gpus" else None)
    validate_solutions(ruleset, [r.solution for r in res.ranked])

    def choice_of(r: Any, rank: int) -> Choice:
        memory, seconds = full_reports(spec, r.solution)
        total = step_seconds(spec, r.solution, seconds)
        tokens = tokens_per_step(spec, r.solution)
        return Choice(rank, r.solution, fw.export(r.solution, space), total, seconds, memory, r.objective,
                      r.proven, tokens / total if total else 0.0, waste_text(fw, ruleset, r.solution, r.solution),
                      stage_seconds(spec, r.solution, seconds), int(spec.samples(r.solution)),
                      server_titles(fw, spec, r.solution, memory))

    choices = []
    printed: set[tuple[str, ...]] = set()
    for r in res.ranked:
        native = fw.export(r.solution, space)
        if tuple(native) in printed or len(choices) == top:
            continue
        printed.add(tuple(native))
        choices.append(choice_of(r, len(choices) + 1))
    choices, dropped = fitting(choices, spec, gpu.name, scenario.host_mem_gib)
    host_unfit = host_unfit or dropped
    if start is not None:
        choices = prefer_kept(choices, start[0])
    report = RecommendReport(fw.name, fw.version, scenario, gpu, card, choices, res.status, res.proven,
                             deadline.elapsed(), terms.capacity_mib, space.raw_size, space=space,
                             margin_note=margin_note, batch_kept=batch_kept, batch_note=batch_note,
                             unknown_keys=unknown, key_notes=key_notes)
    if start is not None:
        # judged by the framework's rules and the memory model, not by our search space's own ties
        judge = fw.ruleset.extended(terms.rules, terms.derived)
        report.start = _judge_start(fw, judge, spec, space, *start, gpu.name, scenario.host_mem_gib)
        # the best was chosen for a margin the user's config lacks (not merely noted as tight itself)
        margin = res is not fastest and lacks_headroom(fw, terms, report.start.memory)
        report.start.verdict = start_verdict(report.start, report.best, headroom=margin)
        if report.start.verdict == "keep" and objective_name == "time":
            report.choices = yours_first(report.choices, report.start, spec, objective, ruleset)
        elif report.start.verdict == "keep" and report.best.native != report.start.native:
            report.start.verdict = "objective"  # not faster, but better by --objective gpus / memory-headroom
    from .alike import fold_alike

    report.choices, report.left_out = fold_alike(report.choices, OBJECTIVE_SENSE[objective_name])
    if objective_name == "time" and start is None and top > 1 and report.choices:
        report.choices, report.left_out = _with_roomier(report, ruleset, space, objective, then, deadline, spec,
                                                        terms, scenario, gpu.name, solver_workers, choice_of,
                                                        fastest)
    if report.choices:  # the best's (the user's config, where it is the answer)
        from ..costmodel.tables import given_means, mean_lengths
        from .check import host_check

        best_values = report.choices[0].values
        report.host = host_check(spec, best_values, gpu.name, scenario.host_mem_gib, scenario.per_node)
        report.lengths = {**mean_lengths(spec, best_values),
                          "prompt_from": "given" if scenario.mean_prompt_length is not None else "assumed",
                          "response_from": "given" if scenario.mean_response_length is not None else "assumed",
                          "longest_from": "given" if scenario.longest_response_length is not None else "assumed",
                          **given_means(scenario.mean_prompt_length, scenario.mean_response_length)}
    if start is None and notes:  # recommend --from says the user's config's (recommend_from)
        report.key_notes += [n for n in answer_notes(report) if n not in report.key_notes]
    if not choices and host_unfit is not None:
        report.host_unfit = host_unfit  # the RAM, not the rules or the GPUs: the estimate says what would help
    elif not choices and res.status == "infeasible":
        from ..solver.explain import conflicting_rules

        # its models are built outside their solves' limits, and the memory floor scans the tables after it
        report.conflict = conflicting_rules(ruleset, space.domains, time_limit_s=deadline.share(0.7))
        report.memory_floor = memory_floor(ruleset, space.domains, terms, deadline)
    if start is None and search_arms:  # the arms the default search left out, where the answer has no room (a
        # config of the user's own keeps its arms)
        from .wider_search import with_arms_left_out

        report = with_arms_left_out(asked, report, fw, deadline, lambda wider: recommend(
            wider, top=top, extra_gpus=extra_gpus, solver_workers=solver_workers, deadline=deadline))
    return report


def with_open_arms(scenario: Scenario) -> tuple[Scenario, list]:
    """``scenario`` with the arms its framework's default search leaves out (``Framework.arms_left_out``) that the
    user did not choose and that are searched by default (``LeftOut.by_default``) searched too (as ``--search
    key=v1,v2`` would), and those arms."""
    from dataclasses import replace


    arms = [a for a in scenario.judged_by().arms_left_out(scenario) if not a.chosen and a.by_default]
    if not arms:
        return scenario, []
    return replace(scenario, search={**scenario.search, **{a.key: list(a.values) for a in arms}}), arms


def searched_scenario(scenario: Scenario, start: Any = None, *,
                      notes: bool = True) -> tuple[Scenario, dict[str, Any], str, list, list[str]]:
    """The scenario recommend searches, before it builds the space: (that scenario, the algorithm's batch kept and
    the note saying so, the keys given that the framework does not know, notes on the keys). Without a user's config
    (``start``): the algorithm's batch kept (``keep_algorithm_batch``), the dataset and lengths the printed command
    gives; with one, only the GPU counts searched (``search_gpu_counts``), as with none. ``notes`` off: the keys are
    not looked up nor anything said of them (a placement layout's solve: the whole job's were)."""
    unknown, key_notes = set_keys(scenario) if start is None and notes else ([], [])
    # a named release judged by another's pack (swift==3.8.0 by 3.10.3's) says so, as check says it
    key_notes = [*release_notes(scenario.judged_by()), *key_notes] if notes else key_notes
    # the algorithm's batch is settled once, on the whole job: every placement layout then trains the same batch
    scenario, batch_kept, batch_note = keep_algorithm_batch(scenario) if start is None else (scenario, {}, "")
    scenario = search_gpu_counts(scenario)
    if start is None and scenario.dataset is None:
        scenario = replace(scenario, dataset=printed_dataset(scenario) or None)
    if start is None:  # the lengths as the printed command tells check (a length it has no flag for: check's own)
        scenario, said = scenario.judged_by().printed_lengths(scenario)
        key_notes = [*key_notes, *said] if notes else key_notes
    return scenario, batch_kept, batch_note, unknown, key_notes


def _with_roomier(report: RecommendReport, ruleset: RuleSet, space: Any, objective: Any, then: Any, deadline: Any,
                  spec: Any, terms: Any, scenario: Scenario, gpu_name: str, workers: int,
                  choice_of: Any, fastest: Any) -> tuple[list, list]:
    """The alternatives with slower configs of more memory margin added where fewer than ``roomier.WANTED`` are
    listed (``roomier.roomier_choices``), folded again (``alike.fold_alike``), ranked by the objective. ``fastest``:
    the fastest configs' ranking, faster than the best where the headroom preference passed them over (then they and
    their neighbours may show a capped solve's answer faster than the best: ``roomier.faster_under_cap``)."""
    from ..solver.optimize import optimize
    from .alike import fold_alike
    from .host_fit import fitting
    from .roomier import SOLVE_WORK, faster_under_cap, roomier_choices

    def solve_capped(rule: Rule) -> Any:
        return optimize(ruleset.extended([rule]), space.domains, objective, top=1, time_limit_s=deadline.share(0.5),
                        workers=workers, then=then, work=SOLVE_WORK)

    def make_choice(r: Any) -> Any:
        # one faster than the best is one the headroom preference passed over (_prefer_headroom): not listed as roomier
        if r.objective < report.choices[0].objective:
            return None
        fits, _ = fitting([choice_of(r, 0)], spec, gpu_name, scenario.host_mem_gib)
        return fits[0] if fits else None

    best = report.choices[0].objective
    known = [r.solution for r in fastest.ranked if r.objective < best]

    def passed_over(rule: Rule) -> bool:
        return bool(known) and faster_under_cap(rule, known, ruleset, space.domains, objective, best)

    extra = roomier_choices(report.choices, terms.capacity_of, solve_capped, make_choice, deadline.left, passed_over)
    if not extra:
        return report.choices, report.left_out
    seen = {tuple(c.native) for c in report.choices}
    rest = sorted([*report.choices[1:], *(c for c in extra if tuple(c.native) not in seen)], key=lambda c: c.objective)
    kept, left = fold_alike([report.choices[0], *rest])
    return kept, [*report.left_out, *left]


def printed_dataset(scenario: Scenario) -> str:
    """The training data the printed command names, as ``check`` reads it from that command (``Framework.training_data``
    of its parsed arguments): the user's own (``--set data.train_files=...``), else the framework example's
    (``Framework.example_inputs``, which ``best_command`` prints). Its length profile times the answer, so that the
    command, checked, gets the step time recommend printed ('' where the command names no data)."""
    fw = scenario.judged_by()
    example, _ = fw.parse(list(fw.example_inputs))
    return fw.training_data({**example, **{str(k).lstrip("-"): v for k, v in scenario.fixed.items()}})


def check_options(scenario: Scenario) -> list[str]:
    """The options of ``rlbatch check`` that price the printed command at the lengths this answer was priced at:
    the length profile and mean lengths the user gave recommend (flags or scenario file), and a length fraction
    other than the worst case. The framework's command has no flag for them, so its check must be given them."""
    out: list[str] = []
    if scenario.response_profile:
        out += ["--response-profile", str(scenario.response_profile)]
    for flag, value in (("--mean-prompt-len", scenario.mean_prompt_length),
                        ("--mean-response-len", scenario.mean_response_length),
                        ("--longest-response-len", scenario.longest_response_length)):
        if value is not None:
            out += [flag, f"{float(value):g}"]
    if scenario.length_fraction != 1.0:
        out += ["--length-fraction", f"{float(scenario.length_fraction):g}"]
    return out


def check_line(report: RecommendReport) -> list[str]:
    """``rlbatch check`` with this answer's GPU, model and the lengths it was priced at (``check_options``), to run on
    the printed command; [] where it was priced at what the command alone tells check."""
    sc = report.scenario
    lengths = check_options(sc)
    if not lengths:
        return []
    model = sc.model if isinstance(sc.model, str) else report.model.name
    pinned = ["--framework", sc.framework] if "==" in sc.framework else []
    return ["rlbatch", "check", *pinned, "--gpu", str(sc.gpu), "--model", str(model), *lengths]


def set_keys(scenario: Scenario) -> tuple[list[UnknownKey], list[str]]:
    """The keys of --set and --search the release lacks: one its parser refuses would stop the printed command, an
    input error naming the key it likely misspells; a suspected misspelling (a key we do not know, near one we do)
    is a note."""
    fw = scenario.judged_by()
    keys = {**{k: v for k, v in scenario.fixed.items()}, **{k: None for k in scenario.search}}
    key_list = fw.key_list(keys, command=True)
    unknown, _, notes = findings(key_list, fw.name, fw.release_named)
    for found in (u for u in unknown if u.refused):
        option = "--search" if found.key in scenario.search and found.key not in scenario.fixed else "--set"
        value = scenario.fixed[found.key] if option == "--set" else ",".join(map(str, scenario.search[found.key]))
        if found.release_words:  # another release's key: its successor, or none (drop it)
            words = f" ({found.release_words}" + (f"; {fw.version} names it {found.suggestion})" if found.suggestion
                                                  else f"; {fw.version} has no flag of the same meaning we know)")
        else:
            words = f" (did you mean {found.suggestion}?)" if found.suggestion else ""
        fix = f"write {option} {found.suggestion}={value}" if found.suggestion else (
            f"leave out {option} {found.key}={value}" if found.release_words else
            f"write {option} KEY={value} with a key of {fw.name} {fw.release_named} ({key_list.source})")
        raise InputError(option, f"{found.key} is not an option of {fw.name} {fw.release_named}{words}: the command "
                         f"printed with it would stop with \"{refusal_text(found, key_list)}\".", fix + ".")
    return unknown, notes


def prefer_kept(choices: list[Choice], kept: Mapping[str, Value]) -> list[Choice]:
    """recommend --from: among the configs whose objective equals the best's (the same time per sample, padding
    counted), the one that changes fewest of the user's values first (a vLLM memory share of 0.4 for the user's 0.5
    buys nothing); ranks renumbered, the others in their order."""
    if len(choices) < 2:
        return choices
    best = choices[0]

    def changed(c: Choice) -> int:
        return sum(1 for k, v in c.values.items() if k in kept and kept[k] != v)

    ties = [c for c in choices if c.objective == best.objective]
    first = min(ties, key=changed)  # the earliest of the fewest changes
    order = [first] + [c for c in choices if c is not first]
    return [replace(c, rank=i) for i, c in enumerate(order, 1)]


def recommend_from(framework: str, flat: Mapping[str, Any], *, gpu: str | None, model: str | ModelCard | None,
                   gpus: int | None = None, objective: str = "time", length_fraction: float = 1.0, top: int = 5,
                   time_limit_s: float = DEFAULT_TIME_LIMIT_S, extra_gpus: str | Path | None = None,
                   calibration: Efficiency | None = None,
                   mean_lengths: tuple[float | None, float | None] = (None, None),
                   response_profile: str | None = None, host_mem_gib: float | None = None,
                   solver_workers: int = SOLVER_WORKERS, deadline: Any = None,
                   longest_response: float | None = None) -> RecommendReport:
    """The best configs for the run a user's config describes, and that config judged beside them (timed with the
    length profile ``response_profile`` names, else the one its model and training data choose, and the longest
    response ``longest_response`` where the data's is known; the node's RAM
    ``host_mem_gib``, None: the GPU type's standard node). ``solver_workers``: CP-SAT threads, as ``recommend``'s (the answer
    does not depend on them: ``tie_break``). ``deadline``: as ``recommend``'s."""
    from ..deadline import Deadline

    unmodelled = get_framework(framework).unmodelled_backend(flat)
    if unmodelled is not None:  # its answer would rank configs by memory and time priced for another backend
        raise InputError("framework", f"{unmodelled}: recommend ranks configs by their predicted memory and step "
                         "time, which are not evaluated for it.",
                         "check the config (its batch rules are checked), or recommend with an engine we model "
                         "(model_engine=dp or megatron).")
    deadline = deadline or Deadline(time_limit_s)

    scenario, values, free = scenario_from_config(framework, flat, gpu=gpu, model=model, gpus=gpus,
                                                  objective=objective, length_fraction=length_fraction)
    scenario.mean_prompt_length, scenario.mean_response_length = mean_lengths
    scenario.longest_response_length = longest_response
    scenario.response_profile, scenario.dataset = response_profile, get_framework(framework).training_data(flat) or None
    scenario.host_mem_gib = host_mem_gib
    scenario.validate()
    if calibration is not None:
        scenario.calibration = calibration.as_dict()
    report = recommend(scenario, top=top, time_limit_s=time_limit_s, extra_gpus=extra_gpus, start=(values, free),
                       solver_workers=solver_workers, deadline=deadline)
    fw = get_framework(framework)
    _, drop = free_of_config(fw, flat, values)
    report.start.given = [k for k in fw.normalize(flat) if k in drop]
    report.start.own = own_arguments(report.start.native, fw.normalize(flat))
    chosen, _ = fw.for_config(flat)
    key_list = chosen.key_list(flat)
    report.unknown_keys, _, report.key_notes = findings(key_list, chosen.name, chosen.release_named)
    from .fix_job import refused_by_name

    report.start.renamed = refused_by_name(chosen, dict(flat), report.unknown_keys).items  # as fix takes them out
    report.key_notes = release_notes(fw) + [
        _refused_note(v, u, report.start.renamed, report.best is not None) for u, v in refused_violations(
            report.unknown_keys, key_list, chosen.name, chosen.version)] + report.key_notes
    # what reading the config assumed or could not read (a --config file that is not here): check's notes, since the
    # answer is built on the same reading
    priced = memory_evaluated(report.scenario.gpu, report.model)
    report.key_notes += [n for n in chosen.config_notes(flat, priced=priced) if n not in report.key_notes]
    if report.best is not None and not fw.pinned:
        note = _judged_otherwise(fw, chosen, flat, report)
        report.key_notes += [note] if note else []
    return report


def _refused_note(violation: Any, key: UnknownKey | None, renamed: Mapping[str, str | None], best: bool) -> str:
    """recommend --from: a key the config's release refuses, and what the best config below does with it: its
    successor written instead, or left out (``Start.renamed``, as --write writes the script), or (a key of no
    known successor nor release) kept as the user wrote it, to rename or remove by hand. ``key``: the key the
    violation was built from, None for the line counting the rest (said of them all); ``best``: whether the answer
    has a best config (none: the violation alone, which says how to mend the key)."""
    if not best:
        return f"{violation.message} ({violation.rule})"
    if key is None:
        return (f"{violation.message}; the best config below writes the successor of each we know, leaves out "
                f"another release's key that has none and keeps the others: rename or remove them ({violation.rule})")
    if key.key in renamed:
        item = renamed[key.key]
        done = f"writes {item} instead" if item else "leaves it out"
        return f"{violation.message}; the best config below {done} ({violation.rule})"
    return (f"{violation.message}; the best config below keeps your arguments, this one included: rename or remove "
            f"it ({violation.rule})")


def _judged_otherwise(fw: Any, chosen: Any, flat: Mapping[str, Any], report: RecommendReport) -> str | None:
    """recommend --from: where the best config dates itself to another release than the config's, as printed or as
    --write writes the script (the config less the keys dropped, with the changes), how to check it as the release
    the answer was judged by (a deprecated key the search replaces dated the config: verl 0.7.1's global micro
    batches); None where both date it the same (the keys whose value dates it are kept: ``free_of_config``)."""
    changed, dropped = start_changes(report)
    written = {k: v for k, v in fw.normalize(flat).items() if k not in set(dropped)}
    written.update(fw.normalize(fw.parse(changed)[0]))
    for config in (written, fw.normalize(fw.parse(list(report.best.native))[0])):
        judged, _ = fw.for_config(config)
        if judged.version != chosen.version:
            gone = sorted(k for k in fw.dated_by_value(flat) if k not in config)
            what = f"replaces {', '.join(gone)}, which dated your config" if gone else "is dated otherwise"
            return (f"your config was judged by the {chosen.name} {chosen.version} rules; the best config below {what}: "
                    f"check it with --framework {chosen.name}=={chosen.version} (without it, check judges it by "
                    f"{judged.version}'s)")
    return None


def own_arguments(native: list[str], keys: Iterable[str]) -> list[str]:
    """The exported arguments of the keys a config sets (``--per_device_train_batch_size 4``, ``data.x=1``): the
    config as the user wrote it, without the defaults the export spells out."""
    from ..frameworks.overrides import exported_pair

    own = {str(k).lstrip("-+") for k in keys}
    return [a for a in native if exported_pair(a)[0].lstrip("-+") in own]


# A config whose peak is within the memory model's observed error of its GPU's usable memory is "tight" (check's
# outlook): the answer keeps one error of headroom in every phase when that costs at most this share of step time,
# well inside the step-time model's own error (docs/accuracy.md)
HEADROOM_COST = 0.10


def tie_break(terms: Any, domains: Mapping[str, Any], kept: Mapping[str, Value] | None = None,
              fastest: Any = None) -> tuple:
    """How recommend orders configs of equal objective (``optimize``'s ``then``; without it CP-SAT's workers return
    any of them, run to run). Equally fast ones (--objective time; gpus: on as few GPUs and equally fast): with a
    user's config (``recommend --from``), fewest of its values changed first (a vLLM memory share of 0.4 for the
    user's 0.5 buys nothing: ``prefer_kept``); then the most memory left in the phase with the least
    (``headroom_mib``, what --objective memory-headroom maximizes); then the least sum of every phase's peak MiB per
    GPU (of two configs equally fast, the one with more memory to spare). ``fastest`` (--objective memory-headroom:
    the time objective): of configs with as much memory left, the fastest first, then the same levels (the headroom,
    equal among them, left out)."""
    from ..rules.expr import BoolVar, IntVar, if_then_else

    levels = [] if fastest is None else [fastest]
    if kept:
        changed = []
        for name, value in kept.items():
            domain = domains.get(name, ())
            if len(domain) < 2 or value is None or None in domain:
                continue  # fixed, or optional (unset is a value the expression cannot name): prefer_kept's
            if all(isinstance(v, bool) for v in domain):
                changed.append(if_then_else(BoolVar(name), int(not value), int(bool(value))))
            elif all(isinstance(v, int) and not isinstance(v, bool) for v in (value, *domain)):
                changed.append(if_then_else(IntVar(name).ne(value), 1, 0))
        if changed:
            levels.append(sum(changed[1:], changed[0]))
    if terms.headroom_mib is not None and fastest is None:  # memory-headroom's measure: the least any phase has left
        levels.append(0 - terms.headroom_mib)
    peaks = [IntVar(d.name) for d in terms.derived if d.name.startswith("mem_")]
    if peaks:
        levels.append(sum(peaks[1:], peaks[0]))
    return tuple(levels)


def roomy_lines(fw: Any, terms: Any, memory: Mapping[str, Any]) -> dict[str, int]:
    """Each phase's usable MiB less one observed error of the memory model (``log(line / peak) >= e``)."""
    import math

    from .check import memory_error_log

    error = memory_error_log(fw.name)
    return {p: int(math.floor(terms.capacity_of(p) * math.exp(-error))) for p in memory}


def lacks_headroom(fw: Any, terms: Any, memory: Mapping[str, Any]) -> bool:
    """Whether a config's peak (``memory``: phase -> its report) reaches within the memory model's observed error of
    the usable memory in some phase (``roomy_lines``)."""
    roomy = roomy_lines(fw, terms, memory)
    return any(-(-r.peak(p) // 2**20) > roomy[p] for p, r in memory.items())


GPU_WEIGHT = 10**12  # --objective gpus: one GPU outweighs any time per sample (us)


def _prefer_headroom(fw: Any, ruleset: RuleSet, space: Any, spec: Any, terms: Any, objective: Any, res: Any,
                     top: int, deadline: Any, workers: int, then: Any = None,
                     count: Any = None) -> tuple[Any, str]:
    """The ranking to answer with, and what it says about headroom. When the best config is tight, solve again with
    every phase held one observed error under its line (``log(line / peak) >= e``); take that answer when it is at
    most ``HEADROOM_COST`` slower, else keep the fastest and say what headroom would cost. ``count`` (--objective
    gpus: the GPUs a config uses): take the answer with headroom on as few GPUs, else keep the fewest and say how
    many that headroom takes."""
    import math

    from ..costmodel.tables import full_reports
    from ..rules.base import Rule, Stage
    from ..rules.expr import IntVar
    from ..solver.optimize import optimize
    from .check import memory_error_log

    error = memory_error_log(fw.name)
    if not error or deadline.left() < 0.05:
        return res, ""
    memory, _ = full_reports(spec, res.ranked[0].solution)
    lines = {p: terms.capacity_of(p) for p in memory}
    roomy = roomy_lines(fw, terms, memory)
    if not lacks_headroom(fw, terms, memory):
        return res, ""
    pct = f"{math.exp(error) - 1:.0%}"
    rules = [Rule(f"search.headroom.{p}", IntVar(f"mem_{p}") <= roomy[p],
                  f"{p} needs {{mem_{p}:gib}} GiB: within the model's observed error ({pct}) of the "
                  f"{lines[p] / 1024:.1f} GiB usable",
                  Stage.SEARCH, "rlbatch-solver: one observed error of headroom (docs/cost-model.md section 11)",
                  kind=RuleKind.SEARCH)
             for p in memory]
    # the search starts from the fastest config, whose values the answer mostly keeps (benchmarks/bench_recommend.py's
    # 64-GPU Megatron MoE: 1.11 to 0.76 CPU s for this solve, the same optimum); not without a tie-break, where which
    # of equal configs answers is the search's, and a hint would move it
    roomier = optimize(ruleset.extended(rules), space.domains, objective, top=top if top <= 1 else top + 2,
                       time_limit_s=deadline.share(0.8), workers=workers, then=then,
                       hint=res.ranked[0].solution if then else None)
    best = res.ranked[0].objective
    if count is not None and roomier.ranked:
        fewest, roomy_count = count(res.ranked[0].solution), count(roomier.ranked[0].solution)
        if roomy_count <= fewest:
            times = [r.ranked[0].objective - n * GPU_WEIGHT for r, n in ((res, fewest), (roomier, roomy_count))]
            cost = times[1] / times[0] - 1 if times[0] else 0.0
            return roomier, (f"kept {pct} of headroom (the memory model's observed error) in every phase, on as few "
                             f"GPUs, at {cost:.1%} more time per sample than the config whose peak is within it")
        return res, (f"tight: the peak is within the memory model's observed error ({pct}) of the usable memory on "
                     f"{fewest} GPU{'' if fewest == 1 else 's'}; with that headroom the fewest is {roomy_count}")
    if roomier.ranked and roomier.ranked[0].objective <= best * (1 + HEADROOM_COST):
        cost = roomier.ranked[0].objective / best - 1 if best else 0.0
        return roomier, (f"kept {pct} of headroom (the memory model's observed error) in every phase, at "
                         f"{cost:.1%} more time per sample than the fastest config, whose peak is within it")
    if roomier.ranked:
        cost = roomier.ranked[0].objective / best - 1 if best else 0.0
        return res, (f"tight: the peak is within the memory model's observed error ({pct}) of the usable memory; "
                     f"the fastest config with that headroom is {cost:.1%} slower")
    if roomier.status == "infeasible":  # proven: the search space holds none
        return res, (f"tight: the peak is within the memory model's observed error ({pct}) of the usable memory, and "
                     f"no config of the search space has that headroom")
    return res, (f"tight: the peak is within the memory model's observed error ({pct}) of the usable memory, and no "
                 f"config with that headroom was found in the time left")


def _with_waste(ruleset: RuleSet, objective: Any, objective_name: str, terms: Any) -> Any:
    """The time objective with padded samples counted as if they were real ones.

    verl's v1 trainer pads a step to whole mini batches with synthetic zero-advantage samples
    (``verl.advice.batch_padded``). The compute they take is small (short samples), but a step that
    pads trains on a short last mini batch and spends its budget on samples that teach nothing: an
    expert does not pick it while a config that does not pad is as fast. So a config that pads
    ``w`` permille of its step is ranked as if its time per sample were ``1 + w/1000`` times longer,
    and the report says why (``Choice.waste``).
    """
    from ..rules.expr import IntVar
    from ..solver.costs import WASTE_NAME

    if objective_name not in ("time", "gpus") or terms.time_us_per_sample is None:
        return objective
    if not any(d.name == WASTE_NAME for d in ruleset.derived):
        return objective
    return objective + (terms.time_us_per_sample * IntVar(WASTE_NAME)) // 1000


def memory_floor(ruleset: RuleSet, domains: Mapping[str, Any], terms: Any,
                 deadline: Any = None) -> dict[str, tuple[int, int]]:
    """For each memory rule: the least MiB its phase needs anywhere in the space, vs its line (a phase whose scan
    the ``deadline`` cut short is left out). Where the search moves the line (``CostTerms.arm_lines``: TRL's
    use_vllm searched both ways), the arm nearest to fitting, with that arm's own line (``tables.memory_floors``)."""
    from ..costmodel.tables import memory_floors

    return memory_floors(terms, domains, ruleset.framework, deadline=deadline)


def start_arguments(report: RecommendReport) -> list[str]:
    """recommend --from: the best config's arguments as ``--write`` writes them into the user's script
    (``start_changes``): the keys the config's release refuses by name (``Start.renamed``) out, and their successors
    in at the user's value where the answer does not set that key (OpenRLHF 0.11.2: --enforce_eager out,
    --vllm.enforce_eager in; --use_kl_estimator_k3 out, no successor)."""
    from ..frameworks.overrides import exported_pair

    best, start = report.best, report.start
    if best is None or start is None or not start.renamed:
        return _in_layout(start, list(best.native)) if best is not None else []
    args = [x for x in best.native if exported_pair(x)[0].lstrip("+-") not in start.renamed]
    keys = {exported_pair(x)[0] for x in args}
    return _in_layout(start, args + [item for item in dict.fromkeys(start.renamed.values())
                                     if item is not None and exported_pair(item)[0] not in keys])


def _in_layout(start: Start | None, items: list[str]) -> list[str]:
    """An answer's ``key=value`` items in the names of the layout the user's script was read from (``Start.layout``,
    the reader's ``from_`` twin: launch_script.in_layout); as given where there is none."""
    if start is None or start.layout is None:
        return items
    import importlib

    module, _, function = start.layout.partition(":")
    return getattr(importlib.import_module(module), function.replace("to_", "from_", 1))(items)


def start_changes(report: RecommendReport) -> tuple[list[str], list[str]]:
    """recommend --from: what turns the user's config into the best one: the best config's arguments that differ
    from the user's, and the keys the user gave that the best config leaves at another default value (native
    spelling; a key whose value the best config keeps stays as the user wrote it, default or not); none
    when the verdict is to keep the user's config (or no config was found)."""
    best, start = report.best, report.start
    if best is None or start is None or start.verdict not in ("does-not-run", "faster", "within-error", "tight",
                                                               "objective"):
        return [], []
    changed = [x for x in best.native if x not in start.native]
    from ..frameworks.overrides import exported_pair

    pairs = dict(exported_pair(x) for x in best.native)
    # the answer's keys as written (a release's own spelling: OpenRLHF 0.5.9's --ref_num_gpus_per_node) and as the
    # user's given keys are (normalized: ref.num_gpus_per_node)
    fw = answer_framework(report)
    kept = {k.lstrip("+") for k in pairs} | set(fw.normalize(pairs))
    by_key = fw.ruleset.by_key()

    def unchanged(key: str) -> bool:  # the best config has the user's value, which the export leaves unwritten
        spec = by_key.get(key.lstrip("+-"))
        return spec is not None and spec.name in best.values and best.values[spec.name] == start.values.get(spec.name)

    dropped = [k for k in start.given if k.lstrip("+-") not in kept and not unchanged(k)]
    # the keys the release refuses by name: taken out, their successor written at its value unless the answer
    # changes that key (the best config, printed in the release's names, runs; the script written must too)
    answered = {exported_pair(x)[0].lstrip("+") for x in changed}
    for key, item in start.renamed.items():
        dropped.append(key)
        if item is not None and exported_pair(item)[0] not in answered and item not in changed:
            changed.append(item)
    if start.layout is not None:  # the unified package's names, as --write writes them (idempotent there)
        changed = _in_layout(start, changed)
        dropped = [_in_layout(start, [f"{k}="])[0].partition("=")[0] for k in dropped]
    return changed, dropped
