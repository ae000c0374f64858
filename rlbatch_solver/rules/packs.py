"""A framework release's rules written as edits of a newer release's (frameworks/verl/versions.py and
frameworks/trl/versions.py): rules dropped, rules replaced or added, and the rest kept with their source files and
the release named in their texts moved to the older release."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from .base import Rule


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
