"""``explain``: a framework's error message or a rule id, in plain words with the numbers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError, check_gpu_count
from ..frameworks import get_framework
from ..release_numbers import release_numbers
from ..frameworks.key_names import UnknownKey, launcher_in_message, refused_in_message, refused_keys
from ..solver.settings import DEFAULT_TIME_LIMIT_S
from .check import CheckReport, check
from .fix import FixReport, fix

if TYPE_CHECKING:
    from .explain_oom import OomExplanation

# explain's one needed input, named as its help and the web form's label name it ("error" alone would print as
# "error: error: ..." under the command line's "error: " prefix)
ERROR_LINE = "error line"


def no_error_line(fix: str) -> InputError:
    """An empty error line, refused alike wherever explain is called (command line, Python API, web form, MCP)."""
    return InputError(ERROR_LINE, "none given (it is empty).", fix)


@dataclass
class ExplainedRule:
    framework: str
    rule: str
    stage: str
    why: str
    source: str


@dataclass
class ExplainReport:
    text: str
    numbers: dict[str, str]
    rules: list[ExplainedRule]
    check: CheckReport | None = None
    fix: FixReport | None = None
    meaning: list[str] = field(default_factory=list)  # the message in plain words, with its numbers
    meaning_of: list[str] = field(default_factory=list)  # the framework each of ``meaning`` is the reading of
    oom: OomExplanation | None = None  # an out-of-memory message, its phase and numbers
    notes: list[str] = field(default_factory=list)  # how it was explained (which release's rules), not what it means
    unknown_keys: list[UnknownKey] = field(default_factory=list)  # keys a parser's message says it refused

    @property
    def matched(self) -> bool:
        return bool(self.rules) or self.oom is not None or bool(self.unknown_keys)

    def to_dict(self) -> dict[str, Any]:
        return {
            "matched": self.matched,
            "numbers": self.numbers,
            "meaning": self.meaning,
            "notes": self.notes,
            "rules": [r.__dict__ for r in self.rules],
            "config_breaks": [v.to_dict() for v in self.check.violations] if self.check else None,
            "upgrade": self.check.upgrade.to_dict() if self.check and self.check.upgrade else None,
            "fix": self.fix.to_dict() if self.fix else None,
            "out_of_memory": self.oom.to_dict() if self.oom is not None else None,
            "unknown_keys": [u.to_dict() for u in self.unknown_keys],
        }


NEWEST_NOTE = "the newest release we follow"


def config_framework(text: str, config: Any, path: str | None = None) -> tuple[str | None, str | None]:
    """The framework a config given with a message is read as when explain is not told which (--framework): the
    command line's and the Python API's one choice -> (its name or None, a note saying why where it was a choice).

    The pasted command's entry point names it (``python3 -m verl.trainer.main_ppo``, ``swift rlhf``, TRL's
    ``trl grpo``); else the framework whose message matched. A message several frameworks print (ms-swift 3.2-3.4
    print TRL 0.15-0.17's batch messages from their own trainer; verl and Megatron-based ones share
    megatron-core's) is the one whose launcher the command starts (``accelerate launch``: TRL), else the one whose
    parser refuses the fewest of the config's keys and knows the most, as of the release that prints the message;
    alike, an input error naming them and --framework. ``config``: the
    arguments (words), a flat mapping or a YAML file's path; ``path``: a YAML file given beside the words."""
    from ..frameworks.error_text import match_error
    from ..frameworks.overrides import is_file, load_config_file
    from ..launch_script import read_pasted_command
    from .inputs import CONFIG_SUFFIXES, key_counts

    words: list[str] = []
    flat: dict[str, Any] = {}
    if isinstance(config, Mapping):
        flat = dict(config)
    elif isinstance(config, (str, Path)):
        path = str(config)
    elif config is not None:
        words = [str(w) for w in config]
        if words and Path(words[0]).suffix.lower() in CONFIG_SUFFIXES and is_file(words[0]):
            path, words = words[0], words[1:]
    command = read_pasted_command(words) if words else None
    if command is not None:
        return command.framework, None
    found: list[str] = []
    release: dict[str, str] = {}  # each one's keys judged as of the release that prints the message, as explain does
    for pattern, _ in match_error(text):
        if pattern.framework not in found:
            found.append(pattern.framework)
            release[pattern.framework] = pattern.framework + (
                f"=={max(pattern.versions, key=release_numbers)}" if pattern.versions else "")
    if len(found) < 2:
        return (found[0] if found else None), None
    alike = f"the message is printed by {' and '.join(found)} alike"
    launched = [name for name in found if any(_says(words, entry) for entry in get_framework(name).launcher_entries)]
    if len(launched) == 1:
        return launched[0], f"{alike}; read as {launched[0]}'s: the command starts its launcher; --framework to " \
                            "name another"
    if path and is_file(path) and Path(path).suffix.lower() in CONFIG_SUFFIXES:
        flat = {**load_config_file(path), **flat}
    # the fewest keys refused (where we know every key a parser takes), then the most known
    read = {name: {**flat, **_parsed(release[name], words)} for name in found}
    scores: dict[str, tuple[int, int]] = {}
    for name in found:
        known, refused = key_counts(release[name], read[name])
        scores[name] = (-refused, known)
    best = max(scores.values())
    top = [name for name in found if scores[name] == best]
    if best[1] == 0:
        return found[0], None  # keys of none of them: the first's reading says what it could not read
    if len(top) == 1:
        return top[0], f"{alike}; read as {top[0]}'s: " + "; ".join(
            _keys_said(name, scores[name]) for name in [top[0]] + [n for n in found if n != top[0]]) \
            + "; --framework to name another"
    raise InputError("framework", f"{alike}, and the config reads as the config of each of {', '.join(top)} "
                     f"({best[1]} of its keys known to each; the pasted words name no entry point of one).",
                     f"name the framework you run with --framework ({' or '.join(top)}), or paste the command "
                     f"with its entry point ({', '.join(_entry_point(name) + ' ...' for name in top)}).")


def _entry_point(name: str) -> str:
    """The command that starts a run of the framework ``name`` (``swift rlhf``, ``python -m verl.trainer.main_ppo``)."""
    fw = get_framework(name)
    return " ".join(fw.entry_commands[0]) if fw.entry_commands else f"python -m {fw.script_entries()[0]}"


def _keys_said(name: str, score: tuple[int, int]) -> str:
    """How many of the config's keys a framework knows and refuses, in words."""
    return f"{name} knows {score[1]} of the config's keys" + (f" and refuses {-score[0]}" if score[0] else "")


def _says(words: Sequence[str], entry: str) -> bool:
    """Whether ``words`` hold the command ``entry`` (``accelerate launch``), its words one after another."""
    parts = entry.split()
    bases = [w.rsplit("/", 1)[-1] for w in words]
    return any(bases[i:i + len(parts)] == parts for i in range(len(bases)))


def _parsed(name: str, words: Sequence[str]) -> dict[str, Any]:
    """The words as the framework ``name``'s parser reads them ({} where it refuses them)."""
    if not words:
        return {}
    try:
        return get_framework(name).parse(list(words))[0]
    except InputError:
        return {}


def explain(
    text: str,
    *,
    framework: str | None = None,
    config: Sequence[str] | Mapping[str, Any] | str | Path | None = None,
    gpus: int | None = None,
    model: str | ModelCard | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    started: float | None = None,
    gpu: str | None = None,
) -> ExplainReport:
    """Which of our rules a framework's error message is, in plain words; given the config (as ``check`` takes it:
    a launch script's path too, its framework then the script's), its fix."""
    from ..frameworks.error_text import match_error
    from .script_args import api_config

    if not text or not text.strip():
        raise no_error_line('paste the line your job died on, in quotes: rlbatch explain "..."')
    check_gpu_count(gpus)  # judged whether or not a config comes to use it, as the command line judges --gpus
    config, framework, gpus, model, script_notes = api_config(config, framework, gpus, model)
    if framework:
        get_framework(framework)  # unknown name -> exit 2
    elif config is not None:  # the framework the config is read as: the command line's choice (config_framework)
        framework, said = config_framework(text, config)
        script_notes = script_notes + ([said] if said else [])
    found = match_error(text, framework)
    rules: list[ExplainedRule] = []
    numbers: dict[str, str] = {}
    meaning: list[str] = []
    meaning_of: list[str] = []
    notes: list[str] = list(script_notes)
    checked_as = framework
    for pattern, nums in found:
        numbers.update(nums)
        fw = get_framework(framework or pattern.framework)
        if pattern.versions and not fw.pinned and fw.version not in pattern.versions:
            # a message only some versions print: their rules (verl's legacy workers, 0.6's sync rollout)
            newest = max(pattern.versions, key=release_numbers)
            fw = get_framework(f"{fw.name}=={newest}")
            checked_as = f"{fw.name}=={newest}"
            note = (f"this message is printed by {fw.name} {', '.join(pattern.versions)} (not {NEWEST_NOTE}): "
                    f"explained with the {newest} rules; name your version with --framework {fw.name}==VERSION")
            if note not in notes:
                notes.append(note)
        said = pattern.explain(nums)
        if said and said not in meaning:
            meaning.append(said)
            meaning_of.append(fw.name)
        for rid in pattern.rules_for(nums):
            if rid not in {r.id for r in fw.ruleset.rules}:
                continue  # e.g. an FSDP-only rule of a verl message, asked about a Megatron config
            r = fw.ruleset.rule(rid)
            # the message's own source once where it starts with the rule's (TRL's GRPOTrainer.__init__ both)
            source = pattern.source if pattern.source.startswith(r.source) else f"{r.source} (message: {pattern.source})"
            rules.append(ExplainedRule(fw.name, rid, r.stage.value, r.explanation or r.message, source))
    if not meaning and rules:  # a message without numbers: what its first rule says happens
        meaning.append(rules[0].why)
        meaning_of.append(rules[0].framework)
    report = ExplainReport(text, numbers, rules, meaning=meaning, notes=notes, meaning_of=meaning_of)
    found_framework = None
    if not found:  # a parser refusing keys the release does not have (a misspelling, most often)?
        by, keys = refused_in_message(text)
        if keys:
            fw = get_framework(framework or by or "openrlhf")
            # the launcher the message names, where the framework's parse reads it (OpenRLHF's train_ppo.py)
            entry = launcher_in_message(text) if fw.name == "openrlhf" else []
            report.unknown_keys = refused_keys(fw, keys, entry)
            report.meaning = [f"{fw.name} {fw.release_named}'s parser has no {u.shown}" + (
                (f" ({u.release_words}): rename it {u.suggestion_shown}" if u.suggestion else
                 f" ({u.release_words}; no flag of the same meaning we know): drop it") if u.release_words else
                (f": did you mean {u.suggestion_shown}?" if u.suggestion else "")) for u in report.unknown_keys]
            found_framework = fw.name
    if not found and not report.unknown_keys:  # an out-of-memory message, from torch, the engine, Ray or the kernel?
        from .explain_oom import explain_oom

        report.oom = explain_oom(text, framework=framework, config=config, gpus=gpus, model=model, gpu=gpu,
                                 time_limit_s=time_limit_s, started=started)
        return report
    if config is not None:
        fw_name = checked_as or framework or (found[0][0].framework if found else found_framework)
        # the release the message showed, and what the newest one would refuse on upgrading
        newest = (framework or found[0][0].framework) if checked_as != framework and found else None
        report.check = check(config, framework=fw_name, gpus=gpus, model=model, compare_with=newest)
        ids = {r.rule for r in rules}
        # keep only the matched rules the config actually breaks, when it breaks any of them
        broken = [r for r in rules if r.rule in {v.rule for v in report.check.violations}]
        if broken:
            report.rules = broken
        elif report.check.valid:
            report.rules = [r for r in rules if r.rule in ids]
        report.fix = fix(config, framework=fw_name, gpus=gpus, model=model, time_limit_s=time_limit_s,
                         started=started if started is not None else time.monotonic())
    return report
