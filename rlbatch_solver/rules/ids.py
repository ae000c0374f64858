"""Rule ids of the rules we add to a framework's own: memory limits and search-space ties, built in one place.

A rule's kind is its ``Rule.kind`` field; the helpers on bare ids (``is_memory_rule_id``) are for the places that
hold ids only (a conflict's ids, ``memory_floor``'s keys).
"""

from __future__ import annotations

from ..costmodel.phase import Phase
from .base import Rule, RuleKind, Stage
from .expr import BoolExpr, IntVar

MEMORY_INFIX = ".memory."
TIE_PREFIX = "search.tie."
MEM_TABLE_PREFIX = "mem_"


def memory_rule_id(framework: str, phase: str) -> str:
    """``<fw>.memory.<phase>``: the id of a phase's memory limit (``host`` for the node's RAM)."""
    return f"{framework}{MEMORY_INFIX}{phase}"


def is_memory_rule_id(rule_id: str) -> bool:
    return MEMORY_INFIX in rule_id


def table_phase(name: str) -> Phase:
    """The phase of a ``mem_<phase>`` table."""
    return Phase(name.removeprefix(MEM_TABLE_PREFIX))


def tie_rule(follower: str, holds: BoolExpr, message: str, source: str) -> Rule:
    """``search.tie.<follower>``: the search keeps ``follower`` equal to another variable, as the framework's
    defaults do."""
    return Rule(f"{TIE_PREFIX}{follower}", holds, message, Stage.SEARCH, source, kind=RuleKind.SEARCH_TIE,
                subject=follower)


def follow_in_search(domains: dict, follower: str, leader: str, message: str, source: str) -> Rule:
    """The search gives the integer ``follower`` the values of ``leader`` and the tie rule keeping them equal."""
    domains[follower] = list(domains[leader])
    return tie_rule(follower, IntVar(follower).eq(IntVar(leader)), message, source)


def tied_followers(rules: list[Rule]) -> set[str]:
    """The variables that search ties among ``rules`` make follow another."""
    return {r.subject for r in rules if r.kind is RuleKind.SEARCH_TIE}
