"""The pasted config ``fix`` works on (``Job``): read and checked, its misspelt keys renamed, its ``--keep`` pins,
its repair policy and its memory model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError
from ..frameworks import Framework, get_framework
from ..frameworks.key_names import UnknownKey, findings, plus_words
from ..rules.base import Value, Violation
from ..costmodel.efficiency import Efficiency
from ..scenario import check_length_fraction
from .common import Upgrade, framework_for, memory_evaluated, read_inputs, read_config, unmodelled_note, vision_note, upgrade_check

if TYPE_CHECKING:
    from ..costmodel.tables import CostSpec
    from ..frameworks.repair_policies import RepairPolicy


@dataclass
class Job:
    """What one fix works on: the framework version, the pasted config's values, the pins, the repair policy,
    the memory model (``spec``, None without --gpu and --model) and the notes said so far."""

    fw: Framework
    card: ModelCard | None
    values: dict[str, Value]
    kept: set[str]
    policy: RepairPolicy
    notes: list[str]
    spec: CostSpec | None
    memory: bool
    gpu: str | None
    extra_gpus: str | Path | None
    length_fraction: float
    calibration: "Efficiency | None"
    upgrade: Upgrade | None = None
    given: frozenset[str] = frozenset()  # the config's own keys (as written, less a leading --)
    unknown: list[UnknownKey] = field(default_factory=list)  # keys the release lacks (key_names.py)
    refused: list[Violation] = field(default_factory=list)  # those its parser refuses, as violations
    renames: list[tuple[str, str, str]] = field(default_factory=list)  # refused keys renamed: diff lines
    old_names: list[str] = field(default_factory=list)  # an older release's keys renamed to this one's (old_names)
    flat: dict[str, Any] = field(default_factory=dict)  # the config as read, its renames made (what config_notes read)
    replaced: dict[str, str | None] = field(default_factory=dict)  # the keys refused by name -> their items (ByName)
    written: frozenset[str] = frozenset()  # the config's keys as the user wrote them (less a leading --), no rename


def read_job(config: Any, framework: str | None, gpus: int | None, model: str | ModelCard | None, gpu: str | None,
             keep: Sequence[str], extra_gpus: str | Path | None, length_fraction: float,
             calibration: "Efficiency | None") -> Job:
    """The pasted config (or launch script, ``script_args.api_config``) read and checked, its pins, its repair
    policy and its memory model."""
    from ..frameworks.repair_policies import policy_for
    from .script_args import api_config

    check_length_fraction(length_fraction)
    config, framework, gpus, model, script_notes = api_config(config, framework, gpus, model)
    asked = get_framework(framework or "verl")
    flat, _ = read_config(asked, config)
    fw, version_notes = framework_for(asked, flat)
    key_list = fw.key_list(flat)
    unknown, refused, typos = findings(key_list, fw.name, fw.release_named)
    written_keys = frozenset(str(k).removeprefix("--") for k in flat)
    flat, renames = _renamed(fw, flat, _misspelt(flat, unknown))
    pasted = flat  # in the older release's names, as check reads it
    by_name = refused_by_name(fw, flat, unknown)
    flat, old_keys, unrenamed = by_name.flat, by_name.old_keys, by_name.unrenamed
    card, values = read_inputs(fw, flat, gpus=gpus, model=model, gpu=gpu, extra_gpus=extra_gpus)
    if by_name.dropped or unrenamed:  # the answer is written in the release's names; those it cannot rename are said
        written = {**values, **fw.names_written()}
        held = {v.rule for v in fw.ruleset.check(written).errors}
        before = fw.to_values(pasted, gpus=gpus, model=card) if old_keys else values  # the old names' rule breaks
        refused = refused + [v for v in fw.ruleset.check(before).errors if v.rule not in held]
        values = written
    kept = _keep_names(fw, keep)
    policy = policy_for(fw.name, fw.ruleset, values)
    renamed = {old_arg: new_arg for _, old_arg, new_arg in renames}
    notes: list[str] = script_notes + typos + [
        f"read {old_arg} as {new_arg}, the flag it misspells (a repair renames it)"
        for old_arg, new_arg in renamed.items()] + [
        f"{u.shown}: fix changes values, not key names; "
        + (plus_words(u.key) if u.key in key_list.plus_adds else "rename or remove it by hand")
        for u in unknown if u.refused and not u.release_words and not any(o.startswith(u.shown) for o in renamed)
    ] + [f"{u.shown}: {fw.name} {fw.release_named} refuses it ({u.release_words}): "
         + (f"a repair renames it {u.suggestion_shown}" if u.suggestion else "a repair drops it")
         for u in unknown if u.refused and u.release_words] + list(version_notes)
    if by_name.renamed:
        notes.append(f"{fw.name} {fw.version} reads none of the older releases' flag names: fix renames the "
                     f"{len(by_name.renamed)} it has a successor of the same meaning for")
    if unrenamed:
        notes.append(", ".join(f"--{k}" for k in unrenamed) + f": an older release's flag {fw.name} {fw.version} "
                     "refuses, with no successor of the same meaning we know; rename or remove it by hand (the "
                     "repair assumes it is)")
    notes += by_name.notes
    notes += vision_note(fw, card, values, memory_evaluated(gpu, card, fw, flat))
    notes += fw.config_notes(flat, priced=memory_evaluated(gpu, card, fw, flat))  # what reading the config assumed or could not read (check says it too)
    spec, memory = _memory_spec(fw, card, gpu, extra_gpus, length_fraction, calibration, notes, flat)
    upgrade = upgrade_check(asked, fw, flat, {v.rule for v in fw.ruleset.check(values).errors}, gpus=gpus, model=card)
    given = frozenset(str(k).removeprefix("--") for k in flat)
    return Job(fw, card, values, kept, policy, notes, spec, memory, gpu, extra_gpus, length_fraction, calibration,
               upgrade, given | {k.replace("-", "_") for k in given}, unknown, refused, renames + by_name.lines,
               by_name.dropped, dict(flat), by_name.items, written_keys)


@dataclass
class ByName:
    """The keys of a config its release refuses by name (not misspellings: ``_misspelt``), as ``fix`` and ``recommend
    --from --write`` both take them out of the config and write their successors: an older release's names with a
    successor (``Framework.old_names``: ``renamed``; ``converted_names``, whose successors take other values) and
    another release's flags (``UnknownKey.release_words``: ``moved``)."""

    flat: dict[str, Any]  # the config with the older releases' keys renamed and converted (another release's left)
    renamed: dict[str, str]  # an older release's key -> its successor (old_names)
    old_keys: list[str]  # those and the converted ones, as written (less a leading --)
    moved: list[str]  # another release's keys
    items: dict[str, str | None]  # each key taken out -> the argument replacing it at its value (None: none), and
    # a successor added beside them -> itself
    lines: list[tuple[str, str, str]]  # the changes as diff lines (key, old argument, new argument)
    unrenamed: list[str]  # older releases' keys with no successor of the same meaning we know (left to the user)
    notes: list[str]  # what converting said (converted_names)

    @property
    def dropped(self) -> list[str]:
        """The keys taken out of the config, as written (less a leading --)."""
        return self.old_keys + self.moved


def refused_by_name(fw: Framework, flat: dict[str, Any], unknown: list[UnknownKey]) -> ByName:
    """The keys of ``flat`` that ``fw``'s release refuses by name (``unknown``: ``findings`` of its key list), with
    their successors at the values they were read as (``ByName``)."""
    given = {str(k).removeprefix("--"): v for k, v in flat.items()}
    old, unrenamed = fw.old_names(flat)
    items: dict[str, str | None] = {k: _arg_text(fw, new, given[k]) for k, new in old.items()}
    renamed, flag_lines = _renamed(fw, flat, old)
    rows, notes = fw.converted_names(renamed)
    converted, converted_lines = _converted(fw, renamed, rows)
    # an old key -> its successor at its value (None: dropped); a successor added beside them under its own name
    items.update({was or new: None if new is None else _arg_text(fw, new, value) for was, new, value in rows})
    moved = _other_release_lines(fw, converted, unknown)
    for key, (_, _, new_arg) in moved:
        items[key] = None if new_arg.startswith("(drop ") else new_arg
    moved_keys = [key for key, _ in moved]
    return ByName(converted, old, list(old) + [was for was, _, _ in rows if was], moved_keys, items,
                  flag_lines + converted_lines + [line for _, line in moved],
                  [k for k in unrenamed if k not in moved_keys], notes)


def _misspelt(flat: dict[str, Any], unknown: list[UnknownKey]) -> dict[str, str]:
    """Each key the release refuses -> the one it misspells (where the config does not set that one too): the
    framework stops on the misspelt key, so the value can only have been meant for the other. Another release's key
    is not a misspelling: ``_other_release_lines`` writes it."""
    return {u.key: u.suggestion for u in unknown
            if u.refused and u.suggestion and not u.release_words and u.suggestion not in flat}


def _other_release_lines(fw: Framework, flat: dict[str, Any], unknown: list[UnknownKey]) -> list[tuple[str, tuple]]:
    """Another release's keys the release refuses (key_names: ``release_words``): each as a diff line (key, old
    argument, new argument) that renames it to its successor, or drops it where it has none; the fixed config is
    written without it (``FixReport.renamed``: --write takes it out). The config's reading is left as it is."""
    out = []
    for u in unknown:
        if not (u.refused and u.release_words):
            continue
        value = next((v for k, v in flat.items() if str(k).removeprefix("--") == u.key), None)
        if value is None:
            continue
        new = _arg_text(fw, u.suggestion, value) if u.suggestion and u.suggestion not in flat else f"(drop {u.shown})"
        out.append((u.key, (u.suggestion or u.key, _arg_text(fw, u.key, value), new)))
    return out


def _renamed(fw: Framework, flat: dict[str, Any], names: dict[str, str],
             values: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[tuple]]:
    """The config with each key of ``names`` (as written, less a leading --) renamed to its new name, in place, with
    the value ``values`` gives it if any, and the renames as diff lines (key, old argument, new argument) in the
    config's order."""
    if not names:
        return flat, []
    out: dict[str, Any] = {}
    lines = []
    for key, value in flat.items():
        bare = str(key).removeprefix("--")
        new = names.get(bare)
        if new is None:
            out[key] = value
            continue
        written = (values or {}).get(bare, value)
        out[new] = written
        lines.append((new, _arg_text(fw, bare, value), _arg_text(fw, new, written)))
    return out, lines


def _converted(fw: Framework, flat: dict[str, Any],
               rows: list[tuple[str | None, str | None, Any]]) -> tuple[dict[str, Any], list[tuple]]:
    """The config with an older release's keys replaced by their successors and values (``Framework.converted_names``
    rows: old key or None, new key or None, value), each where the old one stood (an added one last, a dropped one
    gone), and the changes as diff lines (key, old argument, new argument)."""
    if not rows:
        return flat, []
    olds = {old: (new, value) for old, new, value in rows if old}
    out: dict[str, Any] = {}
    lines = []
    for key, value in flat.items():
        bare = str(key).removeprefix("--")
        if bare not in olds:
            out[key] = value
            continue
        new, new_value = olds[bare]
        if new is None:
            lines.append((bare, _arg_text(fw, bare, value), f"(drop {'' if fw.syntax == 'hydra' else '--'}{bare})"))
            continue
        out[new] = new_value
        lines.append((new, _arg_text(fw, bare, value), _arg_text(fw, new, new_value)))
    for old, new, value in rows:
        if old is None and new:
            out[new] = value
            lines.append((new, f"(no --{new})", _arg_text(fw, new, value)))
    return out, lines


def _arg_text(fw: Framework, key: str, value: Any) -> str:
    """One pasted key and value as the framework's syntax writes it."""
    text = "" if value is True and fw.syntax == "flags" else f" {value}"
    return f"--{key}{text}" if fw.syntax == "flags" else f"{key}={value}"


def _keep_names(fw: Framework, keep: Sequence[str]) -> set[str]:
    """``--keep`` keys (as written in the config: ``--flag``, dashes, old flag names) -> variable names."""
    by_native: dict[str, set[str]] = {}
    for name in fw.ruleset.variables:
        by_native.setdefault(fw.native_key(name), set()).add(name)
    legacy = fw.legacy_flags
    out = set()
    for k in keep:
        k = k.strip()
        if not k:
            continue
        bare = k[2:] if k.startswith("--") else k
        bare = bare.partition("=")[0].strip()
        for cand in (bare, bare.replace("-", "_"), legacy.get(bare, ""), legacy.get(bare.replace("-", "_"), "")):
            if cand in fw.ruleset.variables:
                out.add(cand)
                break
            if cand in by_native:
                out |= by_native[cand]
                break
        else:
            from ..errors import did_you_mean

            raise InputError("keep", f"'{k}' is not a {fw.name} key we know.{did_you_mean(bare, by_native)}",
                             "name keys as in your config, comma-separated (e.g. data.train_batch_size).")
    return out


def _memory_spec(fw: Framework, card: ModelCard | None, gpu: str | None, extra_gpus: str | Path | None,
                 length_fraction: float, calibration: "Efficiency | None", notes: list[str],
                 flat: Mapping[str, Any] | None = None) -> tuple[CostSpec | None, bool]:
    """The cost spec memory is checked with, and whether it is (given both --gpu and --model, and a training backend
    we model; else said in ``notes``)."""
    if memory_evaluated(gpu, card, fw, flat):
        from ..catalog.gpus import load_gpu
        from ..costmodel.tables import with_efficiency, with_length_fraction

        return with_efficiency(with_length_fraction(fw.cost_spec(card, load_gpu(gpu, extra_gpus)),
                                                    length_fraction), calibration), True
    if gpu and card is not None and flat is not None:
        notes.append(unmodelled_note(fw, flat))
    elif gpu or card:
        from .check import half_given_note

        notes.append(half_given_note(bool(gpu)))
    return None, False
