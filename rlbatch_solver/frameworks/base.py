"""What every framework provides (``Framework``) and the search space it builds (``Space``).

A framework is one folder under ``frameworks/`` (``verl/``, ``openrlhf/``, ``swift/``): its rule
variables and rules (``rules.py``), reading and writing its native arguments and launch scripts
(the ``Framework`` subclass), its cost terms (``cost.py``, on the shared ``costmodel/`` formulas),
its repair policy (``repair.py``), its own error messages (``errors.py``) and its rules page
introduction (``docs.py``). ``registry.py`` lists the frameworks by name. This layer knows key
names, not CP-SAT.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from .entry_words import ENTRY_WORDS, EntryWords
from ..catalog.models import ModelCard
from ..errors import InputError
from ..rules.base import Rule, RuleSet, Value
from .key_names import KeyList
from .overrides import exported_pair

ENV_WORD = re.compile(r"^[A-Z_][A-Z0-9_]*=")  # an environment assignment before a command (NPROC_PER_NODE=8)


# The models a run may leave out, by the prefix of their variables' names and the switch that says they run.
MODEL_SWITCHES = (("critic_", "need_critic"), ("ref_", "need_ref"))


def of_absent_model(name: str, runs: Callable[[str], bool]) -> bool:
    """Whether ``name`` is a variable of a model (the critic, the reference) that ``runs(switch)`` says the run does
    not have: such a variable means nothing to the run (not exported, not searched, not read by the cost model)."""
    return any(name.startswith(prefix) and not runs(switch) for prefix, switch in MODEL_SWITCHES)


class LeftOut(NamedTuple):
    """A switch whose values the search held to fewer than the framework has (``Framework.arms_left_out``)."""

    key: str  # its native key
    values: list[str]  # every value it takes, as ``--search key=v1,v2`` writes them
    left: list[str]  # those the search left out
    what: str  # the values left out, in words ("use_vllm=false (transformers' generate, ...)")
    chosen: bool  # the user set or searched it: kept as chosen, only named
    # searched beside the default's arm whenever the user did not choose (``recommend.with_open_arms``): both arms are
    # priced like for like; False: only where the answer lacks room (``wider_search``)
    by_default: bool = False


def priced_words(priced: bool, plural: bool = False) -> str:
    """How a note says the cost model prices what it read: "is priced" / "are priced" where memory is evaluated
    (``Framework.config_notes``' ``priced``), "would be priced" where it is not (check without --gpu/--model prices
    nothing)."""
    return ("are priced" if plural else "is priced") if priced else "would be priced"


def pow2(lo: int, hi: int) -> list[int]:
    """Powers of two in [lo, hi] (up to 2**20): the sizes people actually use."""
    return [2**i for i in range(0, 21) if lo <= 2**i <= hi]


def batches_for_gpus(values: Sequence[int], gpus: int, n: int) -> list[int]:
    """A search domain of batch sizes (prompts) that ``gpus`` GPUs can split: GPUs that are not a power of two (6, 12,
    24) divide no power-of-two batch unless n holds their odd part, so the sizes are then that odd part times the
    given ones (48, 96, ... for 24 GPUs), up to the same largest; otherwise the given sizes."""
    odd = gpus
    while odd > 0 and odd % 2 == 0:
        odd //= 2
    if odd > 1 and n % odd:
        return [odd * v for v in values if odd * v <= values[-1]]
    return list(values)


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in ascending order, found up to its square root (a batch of 10**9 has 100 of them,
    found in 31,623 steps rather than 10**9); none for ``n`` < 1."""
    if n < 1:
        return []
    low, high = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            low.append(d)
            if d != n // d:
                high.append(n // d)
    return low + high[::-1]


def resolve_release(text: str, releases: Any) -> tuple[str, str | None]:
    """A release a user names -> (the pack of ``releases`` it is checked with, a note when that is not the one named);
    ValueError when none fits. ``releases`` is a framework folder's versions.py: its ``NAME`` in messages, ``VERSIONS``
    (the packs) and ``SERIES`` (a minor series -> the pack that judges its patches). A post release is its release's
    code (verl 0.2.0.post2: 0.2.0's pack); a patch we do not list, or a series alone (trl 0.19), its series' pack;
    "v" in front is dropped."""
    v = text.strip().lstrip("v")
    if v in releases.VERSIONS:
        return v, None
    release, dot_post, post = v.partition(".post")
    if dot_post and not post.isdigit():
        raise ValueError(v)
    if release in releases.VERSIONS:
        return release, f"{releases.NAME} {v} is checked with the rules of {release}"
    parts = release.split(".")
    series = ".".join(parts[:2])
    if series in releases.SERIES and len(parts) >= 2 and all(x.isdigit() for x in parts):
        pack = releases.SERIES[series]
        if pack.rsplit(".", 1)[0] != series:  # a series whose checks are another release's (trl versions.RULES_OF)
            return pack, (f"{releases.NAME} {v} is checked with the rules of {pack}, whose checks the {series}.x "
                          "releases share")
        return pack, f"{releases.NAME} {v} is checked with the rules of {pack}, the {series}.x release we follow"
    raise ValueError(v)


def attention_constants(model: ModelCard) -> dict[str, int]:
    """Rule variables the model card gives: attention heads and the position limit."""
    return {
        "num_heads": model.num_attention_heads,
        "num_kv_heads": model.num_key_value_heads,
        "max_position_embeddings": model.max_position_embeddings,
    }


def cumulative_names(changes: Mapping[str, tuple[Any, Any]]) -> dict[str, frozenset[str]]:
    """Each release's names (a parser's flags, a config class's fields) from the changes each release made to the one
    before it, in release order: ``release -> (added, removed)``, each a sequence of names or one space-separated
    string."""
    def names(x: Any) -> frozenset[str]:
        return frozenset(x.split()) if isinstance(x, str) else frozenset(x)

    current: frozenset[str] = frozenset()
    out = {}
    for release, (added, removed) in changes.items():
        current = (current - names(removed)) | names(added)
        out[release] = current
    return out


_KEY_WORD = re.compile(r"^[\w.-]+$")  # a key's name (not an explanation in parentheses)


# the LoRA rank suggested in place of full fine-tuning (fix's relaxation, recommend's advice): verl
# docs/advance/ppo_lora.rst, "set lora_rank to be >= 32" (a 0.5B model at 32 trained as without LoRA); its reference
# config sets lora_rank=32, lora_alpha=32, target_modules=all-linear, rollout.load_format=safetensors
LORA_RANK = 32


@dataclass
class Space:
    """Domains of the rule variables plus search-space restrictions (ties)."""

    domains: dict[str, list[Value]]
    extra_rules: list[Rule] = field(default_factory=list)
    # native keys the export should print besides the decided values (e.g. algorithm settings)
    fixed_native: dict[str, Any] = field(default_factory=dict)
    # what the answer could not say in the framework's flags (a setting the release has no flag for), and why
    notes: list[str] = field(default_factory=list)

    @property
    def raw_size(self) -> int:
        size = 1
        for values in self.domains.values():
            size *= len(values)
        return size


class Framework(ABC):
    """A framework's contract: what callers read (docs/architecture.md, "Adding a framework"); every member has
    one default here, and tests/test_framework_contract.py checks each registered framework against it."""

    name: str
    version: str
    ruleset: RuleSet
    syntax: str  # "hydra" | "flags"
    # the user named the version (--framework verl==0.7.1): the config's keys do not choose another
    pinned: bool = False
    # why a version the user named is checked with another's rules (verl 0.7.2: the 0.7.1 pack); "" when it is not
    version_note: str = ""
    # the introduction of the rules page (the folder's docs.py), and the rules the page lists (None: ``ruleset``;
    # verl checks both backends but documents them on two pages)
    doc_intro: str = ""
    doc_ruleset: RuleSet | None = None
    # old flag names -> the ones the rule variables use (OpenRLHF's pre-0.10.2 underscore flags), for ``fix --keep``
    legacy_flags: Mapping[str, str] = {}
    # what ``fix`` may change, in which order (the folder's repair.py)
    policy: Any = None
    # frameworks whose error messages a run of this one can print (``explain``): itself, and the one it runs on
    error_families: tuple[str, ...] = ()
    # launch scripts: the Python modules (``python -m verl.trainer.main_ppo``), commands (``("swift", "rlhf")``) and
    # flags that start this framework are the ``entry_*`` properties below (entry_words.ENTRY_WORDS, by name); the
    # arguments that name the trained model are ``model_keys``
    # the launcher's flags belong to the framework's arguments (TRL: accelerate launch --num_processes ...)
    launcher_flags: bool = False
    model_keys: tuple[str, ...] = ()

    def catalog_model_name(self, name: str) -> str:
        """The name the catalog knows the model a config names under ``model_keys`` by: the name itself (Unsloth's
        pre-quantized repos: the model they store)."""
        return name

    # recommend --from: the rule variables that hold a scenario's fields, and those that change what is
    # trained (batch per step, updates per step): kept as the user's config has them
    scenario_vars: dict[str, str] = {"prompt_length": "max_prompt_length", "response_length": "max_response_length",
                                     "n": "n", "gpus_per_node": "gpus_per_node", "nnodes": "nnodes"}
    shapes_learning: frozenset[str] = frozenset()
    # the rule variables of the job's GPUs per node and nodes, which ``recommend --objective gpus`` searches (through
    # their flags) to find how few GPUs will do: the trainer's (verl's trainer.n_gpus_per_node, trainer.nnodes), or
    # the actor group's where the job is Ray placement groups on a cluster of --gpus (slime, OpenRLHF)
    gpu_count_vars: tuple[str, str] = ("gpus_per_node", "nnodes")
    # the switch that offloads the trained model's states: (its rule variable, the --set key=value pairs, space-separated,
    # that turn it on);
    # a proven out-of-memory answer suggests it where the search did not try it
    offload_switch: tuple[str, str] | None = None
    # LoRA in place of full fine-tuning: (the search space's variable, the --set key=value pairs, space-separated, that
    # turn it on at LORA_RANK); a proven out-of-memory answer suggests it where the search did not try it
    lora_switch: tuple[str, str] | None = None
    # the cost inputs no rule reads (a cost model's variables that fix's LoRA way out or recommend's memory search
    # sets: lora_rank, gmu_permille, ...) -> the framework's own keys that set them, the one ``native_key`` writes
    # first; a rule variable of the same name is written under its own key. A release's own spelling: a property
    # (OpenRLHF's --ds.lora.rank, ms-swift's --tuner_type). None by default.
    cost_input_keys: Mapping[str, tuple[str, ...]] = {}
    # out-of-memory tracebacks (explain, frameworks/oom_text.py): (regular expression over a traceback, phase) of the
    # functions that run each phase, the most specific first (the first that matches names the phase); and what
    # usually helps in each phase, in the framework's own keys, most helpful first (explain without a config)
    oom_frames: tuple[tuple[str, str], ...] = ()
    # the memory table's title of the rollout row where the engine runs on a server's GPUs of its own (check.py
    # server_titles); None: the phase's own title
    server_rollout_title: str | None = None
    oom_advice: Mapping[str, tuple[str, ...]] = {}

    def oom_advice_for(self, text: str) -> Mapping[str, tuple[str, ...]]:
        """What helps in each phase, as the run a pasted out-of-memory message came from names it (OpenRLHF's
        launcher without Ray, named in the traceback: its own flags); ``oom_advice`` by default."""
        return self.oom_advice
    # the enumerate table (render.py): columns always shown, in this order (verl FSDP: the seed guide's; empty: the
    # space's free variables), derived values worth a column after those (rule variables or ``column_values``), and
    # native key words -> column words, longest first (the folder's columns.py)
    table_columns: tuple[tuple[str, str], ...] = ()
    derived_columns: tuple[tuple[str, str], ...] = ()
    column_notes: tuple[tuple[str, str], ...] = ()  # (derived column, what it holds) for the table's legend
    column_words: tuple[tuple[str, str], ...] = ()
    # the run-log formats a run of this framework prints that ``calibrate`` reads (runlog.FORMATS)
    log_formats: tuple[str, ...] = ()

    # the release packs of a framework that follows several releases (its versions.py: ``NAME``, ``VERSIONS`` and
    # ``SERIES``, read by ``resolve_release``, and ``ruleset_for(version)``); None: one release only
    releases: Any = None

    @property
    def accuracy_family(self) -> str:
        """Whose published runs give this framework's error bars (costmodel/accuracy.yaml): by default its own."""
        return self.name

    @property
    def versions(self) -> tuple[str, ...]:
        """The versions whose rules we follow, newest first (verl: one rule pack each); by default ``version``."""
        return (self.version,)

    def resolve_version(self, text: str) -> tuple[str | None, str | None]:
        """A version the user names -> (the one of ``versions`` it is checked with, a note when that is not the one
        named); (None, None) when none is. With release packs, ``resolve_release`` picks one of them."""
        if self.releases is not None:
            try:
                return resolve_release(text, self.releases)
            except ValueError:
                return None, None
        return (self.version, None) if text.strip().lstrip("v") == self.version else (None, None)

    @property
    def keys_version(self) -> str:
        """The release whose config keys a config is read against: by default ``version``; verl 0.9.0, judged by
        0.9.1's pack, has its own trainer config keys (``with_named_release``)."""
        return self.version

    @property
    def release_named(self) -> str:
        """The release a config's keys are said to be judged as (``x is not an option of verl 0.7.0``): the one the
        user named where another's pack judges it (verl 0.7.0, 0.7.1's pack), else ``keys_version``."""
        return self.keys_version

    def with_named_release(self, named: str) -> "Framework":
        """This framework, pinned to the pack of a release the user named, as that release reads a config (by default
        the pack's own reading; TRL: the named release's GRPOConfig fields where a neighbour's pack judges it)."""
        return self

    @classmethod
    def for_version(cls, version: str) -> "Framework":
        """This framework with the rules of another of its ``versions`` (its release packs' ``ruleset_for``), pinned
        to it."""
        if cls.releases is None:
            raise LookupError(f"{cls.__name__} follows one version only")
        fw = cls()
        fw.version = version
        fw.ruleset = cls.releases.ruleset_for(version)
        fw.pinned = True
        return fw

    @abstractmethod
    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        """Pasted arguments -> (flat native config, ignored tokens)."""

    @abstractmethod
    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        """Native config -> rule-variable values with the framework's defaults."""

    @abstractmethod
    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        """Search domains for a scenario (what is fixed is a one-value domain).

        ``with_knobs`` also searches the memory/speed switches the user left
        alone (gradient checkpointing, offload, memory utilisation).
        """

    def user_domains(self, scenario: Any, base: Mapping[str, Value], decided: Any, typed: Callable[[str, Any], Value],
                     what: str, example: str) -> tuple[dict[str, list[Value]], set[str]]:
        """The domains a space starts from: every variable at its value in ``base`` (the config's values), and each
        key the user asked to search at the values given (``typed(name, value)`` reads one); and the variables the
        user set or searched, which the framework's own search leaves alone. A searched key that is not one of
        ours, or that the framework decides (``decided``), is an input error naming ``what`` ("a slime flag") and an
        ``example`` of keys to search."""
        from ..errors import did_you_mean

        by_key = self.ruleset.by_key()
        domains: dict[str, list[Value]] = {name: [value] for name, value in base.items()}
        user_set = {by_key[k].name for k in scenario.fixed if k in by_key}
        for key, values in scenario.search.items():
            spec = by_key.get(key)
            if spec is None or spec.name in decided:
                raise InputError(f"search.{key}", f"is not {what} we search.{did_you_mean(key, by_key)}",
                                 f"search over batch, micro-batch and parallel sizes ({example}, ...).")
            domains[spec.name] = [typed(spec.name, v) for v in values]
            user_set.add(spec.name)
        return domains, user_set

    def kept_batch(self, scenario: Any) -> dict[str, Any]:
        """recommend: the algorithm's batch sizes (``shapes_learning``) the user neither set nor searched in the
        scenario, at this framework's defaults (native key -> value). recommend keeps them (and what the user set)
        unless told the batch is free (``--free-batch``): they decide what each step and each update trains on,
        not how fast."""
        fixed, searched = scenario.fixed, set(scenario.search)
        out = {}
        for name in sorted(self.shapes_learning):
            spec = self.ruleset.variables.get(name)
            if spec is None or spec.default is None or spec.key in fixed or spec.key in searched:
                continue
            out[spec.key] = self.native_value(name, spec.default)
        return out

    def kept_totals(self, scenario: Any) -> dict[str, int]:
        """recommend: totals of the algorithm's batch to keep where the batch is a product of a systems knob and
        the rest (derived variable -> value), so the search picks the factors and not the total (ms-swift's HF path
        and TRL: completions per optimizer step = per-device batch x world x accumulation, where the per-device
        batch is also the micro batch memory depends on). None by default: ``kept_batch`` pins keys instead."""
        return {}

    # flags that belong to the launcher, not the framework's own parser (TRL: accelerate launch's), for writing a
    # script back: they go after the launcher's words (``launcher_entries``)
    launcher_keys: frozenset[str] = frozenset()
    launcher_entries: tuple[str, ...] = ()

    def script_entries(self) -> tuple[str, ...]:
        """The words that end a run's entry point in a launch script (``verl.trainer.main_ppo``, its path form
        ``verl/trainer/main_ppo.py``, ``swift rlhf``): where ``script_rewrite`` adds the keys a script lacks."""
        paths = tuple(m.replace(".", "/") + ".py" for m in self.entry_modules)
        return (*self.entry_modules, *paths, *(" ".join(c) for c in self.entry_commands))

    def optimizer_steps_per_rollout(self, values: Mapping[str, Value]) -> int | None:
        """When the run log's step timer counts optimizer steps rather than rollouts (ms-swift's train_speed):
        how many make one rollout, for ``calibrate``; None when the log times whole steps."""
        return None

    @abstractmethod
    def cost_spec(self, model: ModelCard, gpu: Any):
        """How this framework's variables feed the cost model (``costmodel.tables.CostSpec``): every framework
        has one (the contract test builds it for each)."""

    @abstractmethod
    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        """A solution as paste-ready arguments in the framework's syntax."""

    def export_text(self, solution: Mapping[str, Value], space: Space | None = None) -> str:
        return " \\\n    ".join(self.export(solution, space))

    # the words that start a run (``python3 -m verl.trainer.main_ppo``, ``swift rlhf``): ``run_command``'s head
    command: str = ""
    # what an answer does not decide but a run needs: the data and reward of the framework's own example, as
    # arguments (``run_command`` prints them for the user to replace), and where they come from
    example_inputs: tuple[str, ...] = ()
    example_inputs_source: str = ""

    def run_command(self, native: Sequence[str], values: Mapping[str, Value], model: str) -> list[str]:
        """A whole command that runs an answer, one shell word or ``--flag value`` pair per item: environment
        assignments and the start words (the first item), the launcher's flags, the entry point, the trained model,
        the example's data and reward (``example_inputs``), then ``native``, as the framework reads them."""
        env = [a for a in native if ENV_WORD.match(a)]
        launcher = [a for a in native if a.startswith("--") and a[2:].split(" ")[0] in self.launcher_keys]
        rest = [a for a in native if a not in env and a not in launcher]
        answer_keys = {exported_pair(a)[0] for a in rest}  # each key once: the answer's value (the user's) wins
        examples = [a for a in self.example_inputs if exported_pair(a)[0] not in answer_keys]
        model_arg = f"{self.model_keys[0]} {model}" if self.syntax == "flags" else f"{self.model_keys[0]}={model}"
        if self.launcher_keys:  # a launcher runs the script as a module: accelerate launch --flags -m module
            words = [self.command, *launcher, f"-m {self.entry_modules[0]}"]
        else:
            words = [self.entry_point(values) or self.command or f"python3 -m {self.entry_modules[0]}"]
        return [" ".join([*env, words[0]]), *words[1:], model_arg, *examples, *rest]

    def user_command(self, words: list[str], fixed: Mapping[str, Any]) -> list[str]:
        """``run_command``'s words as the user's own command starts them (its launcher, its entry script), where the
        config ``fixed`` names one (``recommend --from``); as they are by default."""
        return words

    @property
    def _entry_words(self) -> EntryWords:
        """This framework's row of entry_words.ENTRY_WORDS (by name; none: no words), which the four ``entry_*``
        properties below read."""
        return ENTRY_WORDS.get(self.name, EntryWords())

    @property
    def entry_modules(self) -> tuple[str, ...]:
        """Python modules that start this framework's run (``python -m verl.trainer.main_ppo``): ENTRY_WORDS."""
        return self._entry_words.modules

    @property
    def entry_commands(self) -> tuple[tuple[str, str], ...]:
        """Commands that start this framework's run (``("swift", "rlhf")``): ENTRY_WORDS."""
        return self._entry_words.commands

    @property
    def entry_flags(self) -> tuple[str, ...]:
        """Flags one of which a generic entry command's arguments must hold to be this framework's (slime's `python3
        train.py` is any project's; its --rollout-batch-size is required); empty: the command alone decides."""
        return self._entry_words.flags

    @property
    def companion_entries(self) -> tuple[tuple[str, ...], ...]:
        """Commands a run starts beside its entry point, as a launch script's lines begin them (TRL's ``trl
        vllm-serve``): ``launch_script.py`` hands their words to ``read_companion``. ENTRY_WORDS."""
        return self._entry_words.companions

    def companion_commands(self, native: Sequence[str], values: Mapping[str, Value], model: str) -> list[list[str]]:
        """Commands to start before ``run_command`` (a rollout server on GPUs of its own), each as ``run_command``'s
        items; none by default."""
        return []

    def read_companion(self, words: Sequence[str], scope: Mapping[str, str]) -> tuple[list[str], int | None]:
        """A ``companion_entries`` line of a launch script (its words after the command, its variables) -> arguments
        for this framework's parser and the GPUs the line takes (None: it does not say)."""
        return [], None

    def export_yaml(self, native: list[str]) -> str | None:
        """The exported arguments as a config-file fragment, where the framework reads one."""
        return None

    def native_value(self, name: str, value: Value) -> Any:
        """A rule-variable value as the framework spells it (``*_permille`` variables are fractions x 1000)."""
        if name.endswith("_permille") and value is not None:
            return value / 1000
        return value

    def assignment(self, name: str, value: Value) -> str:
        """One variable as a paste-ready argument (``key=value`` or ``--flag value``); unset prints as null."""
        key = self.ruleset.variables[name].key
        v = self.native_value(name, value)
        text = "null" if v is None else ("True" if v is True else "False" if v is False else str(v))
        if self.syntax == "flags":
            return f"--{key} {text}"
        return f"{key}={text}"

    def value_words(self, name: str, value: Value) -> str:
        """A variable at a value as the user writes it (``assignment``: --use_vllm true) where it is a rule
        variable; a cost input no rule names has no key of its own: name=value."""
        return self.assignment(name, value) if name in self.ruleset.variables else f"{name}={value}"

    def native_key(self, name: str) -> str:
        """The key a variable is written under in the framework's own syntax (the diff of ``fix``): a rule variable's,
        else a cost input's first key (``cost_input_keys``)."""
        if name not in self.ruleset.variables and name in self.cost_input_keys:
            return self.cost_input_keys[name][0]
        return self.ruleset.variables[name].key

    def doc_appendix(self) -> str:
        """Markdown appended to the rules page (verl: what changed between the versions we follow)."""
        return ""

    def for_config(self, flat: Mapping[str, Any]) -> tuple["Framework", str | None]:
        """The framework (version) a pasted config is checked with, and why, when the framework has several
        (verl's version packs); by default this one."""
        return self, None

    def waste_words(self, ruleset: RuleSet) -> str:
        """What ``fix``'s header counts as waste in this framework (the rule set's ``waste_permille``, solver/costs.py),
        as "each 10% of <these words>": by default the step's share wasted."""
        return "the step wasted"

    def dated_by_value(self, flat: Mapping[str, Any]) -> set[str]:
        """The keys of a pasted config (as ``normalize`` spells them) whose value ``for_config`` reads to date its
        release (verl 0.6.1's rollout.mode=sync): recommend --from keeps them at the config's values, so that its
        answer is judged by the same release. Those the release module's ``dated_by_value`` names, where the
        framework has one; none otherwise (OpenRLHF's flags date a config by being there, whatever their value)."""
        read = getattr(self.releases, "dated_by_value", None)
        if read is None:
            return set()
        own = read(flat)
        return set(self.normalize({k: v for k, v in flat.items() if str(k) in own}))

    def unknown_keys(self, flat: Mapping[str, Any]) -> list[str]:
        """Keys of a pasted config that this version's own config does not have and its parser refuses (verl:
        Hydra's struct mode), as far as we know them; none by default."""
        return []

    def key_list(self, flat: Mapping[str, Any], command: bool = False) -> KeyList:
        """What we know of this release's keys, and the config's keys as its parser reads them (key_names.py): by
        default some of them (the rule variables', the model's, the launcher's, the example's, the old names), so
        only a near miss of one is suspected a misspelling. ``command``: the keys are set in the command recommend
        prints (the framework's own entry point), not in a script that may be the user's own."""
        known = {spec.key for spec in self.ruleset.variables.values()}
        known |= {k.lstrip("-") for k in self.model_keys} | set(self.launcher_keys)
        known |= {exported_pair(a)[0] for a in self.example_inputs}
        known |= {*self.legacy_flags, *self.legacy_flags.values()}
        known = {k.lstrip("-") for k in known if _KEY_WORD.match(k)}  # names only: not a shell word or a note
        given = tuple(str(k) for k in self.normalize(flat) if not str(k).startswith(("+", "__")))
        return KeyList(given, frozenset(known), complete=False, flags=self.syntax == "flags")

    def training_data(self, flat: Mapping[str, Any]) -> str:
        """The training data a parsed config trains on (``lengths.dataset_of`` of its keys; '' if it names none):
        it chooses the length profile a step time assumes. Frameworks whose config file holds it override this."""
        from ..costmodel.lengths import dataset_of

        return dataset_of(flat)

    def printed_lengths(self, scenario: Any) -> tuple[Any, list[str]]:
        """The scenario with the lengths its printed command tells ``check`` (where the command has no flag for
        one, what check assumes for it), and what that changed, for the answer's header; unchanged by default: the
        command carries the scenario's lengths."""
        return scenario, []

    def arms_left_out(self, scenario: Any) -> list[LeftOut]:
        """The switches of another way to run (an engine) whose other values the scenario's search does not try:
        ``recommend`` searches those the user did not choose as well: in the same solve where ``LeftOut.by_default``
        says so (the answer is the fastest either way), else when the answer is tight or none fits; and names the
        rest where it says no config has headroom. None by default (every arm is searched)."""
        return []

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        """What reading the config assumed or could not read, for ``check`` to print (none by default). ``priced``:
        the config's memory is evaluated (a GPU and a model given); without, a note claims no pricing."""
        return []

    def other_readings(self, flat: Mapping[str, Any]) -> list[tuple[str, "Framework"]]:
        """Other releases a config's flags allow whose code prices its memory differently from the reading priced
        (ms-swift: the --vllm_device engine of 3.1 under the vLLM it recommends), each as (what it is, the framework
        that prices it): ``check`` prices each too and says its worst peak in a note. None by default."""
        return []

    def unmodelled_backend(self, flat: Mapping[str, Any]) -> str | None:
        """Why the config's training backend is one the cost model does not price (verl: an engine option of
        model_engine or a role's config group we do not model), for ``check`` and ``fix`` to leave memory and time
        unevaluated as for a model not in the catalog, the rules still checked; None (the default): priced."""
        return None

    def value_notes(self, values: Mapping[str, Value], *, priced: bool = True) -> list[str]:
        """What a config's values leave unchecked, for ``check`` to print (none by default); ``priced`` as
        ``config_notes``' (whether memory and time are evaluated: ``priced_words``)."""
        return []

    def old_names(self, flat: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
        """The config's keys this release's parser refuses because they are an older release's names: those with a
        successor of the same meaning (old key -> the key this release reads, for ``fix`` to write) and those with
        none we know (left to the user); none by default."""
        return {}, []

    def converted_names(self, flat: Mapping[str, Any]) -> tuple[list[tuple[str | None, str | None, Any]], list[str]]:
        """The config's keys of an older release that this release's parser refuses and whose successors take other
        values (no one-to-one rename): rows (the old key, or None where the new one is added; the new key, or None
        where the old one is dropped; the new key's value), for ``fix`` to write, and notes that say so; none by
        default."""
        return [], []

    def names_written(self) -> dict[str, Value]:
        """The values that say a config is written in this release's own key names (``fix`` writes its answer so,
        its ``old_names`` renamed); none by default."""
        return {}

    def memory_relaxations(self, values: Mapping[str, Value]) -> list[str]:
        """What else would help a config that no value fix may change fits in memory, in words (fix's relaxations):
        by default the offload switch, unless the config has it on already."""
        switch = self.offload_switch
        if switch is None or not values.get(switch[0]):
            return ["CPU offload of params/optimizer (fix already tried the offload switches it may move)"]
        return []

    def micro_batches_per_gpu(self, values: Mapping[str, Value]) -> list[dict[str, Any]]:
        """Where the release converts a micro batch key into another per-GPU size than its name says, each phase's
        conversion (``check``'s JSON ``micro_batches_per_gpu``); none by default."""
        return []

    def repair_policy(self, values: Mapping[str, Value] | None = None):
        """What ``fix`` may change for ``values`` (``frameworks/repair_policies.RepairPolicy``)."""
        if self.policy is None:
            raise LookupError(f"no repair policy for framework '{self.name}'")
        return self.policy

    def error_patterns(self) -> list:
        """This framework's own error messages, mapped to rules (``frameworks/error_text.ErrorPattern``)."""
        return []

    def from_script(self, args: list[str], scope: Mapping[str, str], gpus: int | None,
                    notes: list[str] | None = None) -> tuple[str, list[str], int | None]:
        """A launch script's command -> (framework name, its arguments, GPUs), given the script's variables
        (``scope``) and the GPU count its launcher gives (``launch_script.py``). Frameworks whose GPU count or
        backend the arguments or environment decide override this, and say what they assumed in ``notes``."""
        return self.name, args, gpus

    def normalize(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """A parsed config with its keys as the rule variables spell them (old flag names mapped)."""
        return dict(flat)

    def scenario_fields(self, values: Mapping[str, Value]) -> dict[str, Any]:
        """The scenario a config runs (lengths, samples per prompt, GPU layout), for ``recommend --from``."""
        return {field: int(values[name]) for field, name in self.scenario_vars.items()
                if values.get(name) is not None}

    def searchable(self, values: Mapping[str, Value]) -> set[str]:
        """Rule variables ``recommend --from`` may choose for a user's config: what fix may move (batch
        splits, parallel layout, memory switches), less what changes the training itself."""
        policy = self.repair_policy(values)
        keep = set(self.shapes_learning) | set(policy.algorithm) | set(policy.hardware) | set(policy.unset_only)
        return (set(policy.rules) | set(policy.memory)) - keep

    def inert(self, domains: Mapping[str, Sequence[Value]]) -> set[str]:
        """Variables that no candidate of these domains reads: their switch is off in every one (vLLM's settings
        where vLLM is off, a colocated engine's where the engine is a server). The search keeps them at one value
        (``recommend.prepare``) instead of listing them as free or offering them as ties. None by default."""
        return set()

    def free_keys(self, values: Mapping[str, Value]) -> set[str]:
        """The native keys of ``searchable``: dropped from a user's config so that the search space
        chooses them."""
        variables = self.ruleset.variables
        # deprecated keys too: the search space leaves them unset and chooses their replacements
        unset = set(self.repair_policy(values).unset_only)
        return {variables[n].key for n in self.searchable(values) | unset if n in variables}

    def placements(self, scenario: Any, notes: list[str]) -> list:
        """The layouts ``recommend --placement`` may solve (``layout.Layout``), split layouts in order of
        trainer GPUs; ``notes`` gets what was left out and why. By default the colocated one only: split layouts are
        modelled where a framework lists them (verl, OpenRLHF, ms-swift, TRL, SkyRL and those built on them)."""
        from ..layout import Layout, sub_scenario
        from .registry import FRAMEWORKS, get_framework

        if scenario.placement == "split":
            split = [n for n in FRAMEWORKS if type(get_framework(n)).placements is not Framework.placements]
            raise InputError("placement", f"split placements are not modelled for {self.name}.",
                             f"use --placement colocate, or {' / '.join(split)} for a split (docs/async.md).")
        return [Layout("colocate", f"colocated on {scenario.total_gpus} GPUs", sub_scenario(scenario))]

    def column_values(self, env: Mapping[str, Value]) -> dict[str, Value]:
        """Values of ``derived_columns`` that no rule derives, from a solution's full environment (none by default)."""
        return {}

    def is_gpu_count_key(self, key: str) -> bool:
        """Whether a native key counts GPUs or nodes (``fix`` then suggests another GPU count)."""
        return "gpus" in key or "nnodes" in key

    def entry_point(self, values: Mapping[str, Value]) -> str | None:
        """The command that runs a config, where it is not the framework's usual one (verl's fully_async recipe)."""
        return None

    def describe_placement(self, values: Mapping[str, Value]) -> str | None:
        """A solved config's GPU pools in words ("16 trainer + 16 rollout GPUs"); None: the layout's label."""
        return None

    def hardware(self, values: Mapping[str, Value]) -> tuple[int, int]:
        """(total GPUs, prompt+response tokens) of a config, for repair candidates."""
        gpus = int(values.get("nnodes") or 1) * int(values.get("gpus_per_node") or 1)
        return gpus, int(values.get("max_prompt_length") or 0) + int(values.get("max_response_length") or 0)
