"""A framework release's rules written as edits of a newer release's (the versions.py of frameworks/verl, trl and
openrlhf): rules dropped, rules replaced or added, and the rest kept with their source files and the release named in
their texts moved to the older release; variables and derived quantities replaced or added by name."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from .base import Derived, Rule, RuleSet, VarSpec


@dataclass(frozen=True)
class Pack:
    """What one release does differently from the next newer release's we follow (TRL's and OpenRLHF's packs; verl's
    edits its FSDP and Megatron rules apart and has its own)."""

    version: str
    edits: str  # the release this pack edits
    drop: frozenset[str] = frozenset()
    rules: tuple[Rule, ...] = ()  # new or replacing (same id)
    derived: tuple[Derived, ...] = ()  # replacing (same name) or new, after the base's
    variables: tuple[tuple, ...] = ()  # (name, key, kind, default, optional, description): replacing or new
    sources: tuple[tuple[str, str], ...] = ()  # (old, new) substrings of the kept rules' sources
    summary: str = ""


def edit_variables(variables: Mapping[str, VarSpec], new: Iterable[tuple], *,
                   drop: Iterable[str] = ()) -> dict[str, VarSpec]:
    """``variables`` without the names in ``drop``, each of ``new`` ((name, key, kind, default, optional,
    description), a release pack's) in place of the variable of its name, or added after them."""
    drop = set(drop)
    out = {k: v for k, v in variables.items() if k not in drop}
    for name, key, kind, default, optional, desc in new:
        out[name] = VarSpec(name, key, kind, default, optional, desc)
    return out


def edit_derived(derived: Iterable[Derived], new: Iterable[Derived]) -> list[Derived]:
    """``derived`` with each of ``new`` in place of the quantity of its name, the rest of ``new`` after them."""
    by_name = {d.name: d for d in new}
    return [by_name.pop(d.name, d) for d in derived] + list(by_name.values())


def edit_rules(rules: Iterable[Rule], *, drop: Iterable[str], new: Iterable[Rule], sources: Iterable[tuple[str, str]],
               release: tuple[str, str], explanations: bool = False) -> list[Rule]:
    """``rules`` without the ids in ``drop``, each rule of ``new`` in place of the rule with its id (or appended),
    the rest with each ``sources`` (old, new) substitution applied to its source and ``release`` (the newer release's
    name, the older's: "verl 0.9.1", "verl 0.7.1") to its message (and its explanation with ``explanations``)."""
    by_id = {r.id: r for r in new}
    drop, sources = set(drop), list(sources)
    old_name, new_name = release
    out = []
    for rule in rules:
        if rule.id in drop:
            continue
        if rule.id in by_id:
            out.append(by_id.pop(rule.id))
            continue
        source = rule.source
        for old, repl in sources:
            source = source.replace(old, repl)
        message = rule.message.replace(old_name, new_name)
        explanation = rule.explanation.replace(old_name, new_name) if explanations and rule.explanation else \
            rule.explanation
        same = (source, message, explanation) == (rule.source, rule.message, rule.explanation)
        out.append(rule if same else replace(rule, source=source, message=message, explanation=explanation))
    return out + [r for r in by_id.values()]


def rule_changes(base: Iterable[Rule], here: Iterable[Rule]) -> dict[str, list[tuple[str, str]]]:
    """What a release's rules (``here``) do differently from the newest's (``base``): {"absent", "added",
    "changed"} -> (rule id, source); a rule changed when its condition, its test or its source file did."""
    from .expr import _source

    def sig(r: Rule) -> tuple[str, str, str]:
        return _source(r.holds), _source(r.when), r.source

    old, new = {r.id: r for r in base}, {r.id: r for r in here}
    return {"absent": [(i, old[i].source) for i in old if i not in new],
            "added": [(i, new[i].source) for i in new if i not in old],
            "changed": [(i, new[i].source) for i in new if i in old and sig(new[i]) != sig(old[i])]}


def pack_ruleset(framework: str, pack: Pack, base: RuleSet, release: tuple[str, str], *,
                 explanations: bool = False) -> RuleSet:
    """The rule set of ``pack``'s release: ``base`` (the release it edits) with the pack's variables, derived
    quantities and rules (``edit_rules``, ``release`` the names to replace in messages)."""
    return RuleSet(framework, pack.version, edit_variables(base.variables, pack.variables),
                   edit_derived(base.derived, pack.derived),
                   edit_rules(list(base.rules), drop=pack.drop, new=pack.rules, sources=pack.sources, release=release,
                              explanations=explanations))
