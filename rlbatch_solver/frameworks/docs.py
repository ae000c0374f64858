"""The rules page of each framework, as written to docs/ (``rlbatch rules``; tests check the pages are in sync)."""

from __future__ import annotations

from ..rules.describe import rules_markdown
from .base import Framework


def rules_page(fw: Framework) -> str:
    """The rule table of ``fw`` under its introduction (``Framework.doc_intro``, from the framework folder's
    ``docs.py``). A framework that checks several backends documents one of them per page (``doc_ruleset``)."""
    ruleset = fw.ruleset if fw.doc_ruleset is None else fw.doc_ruleset
    page = rules_markdown(ruleset, f"{fw.name} {fw.version} rules", fw.doc_intro)
    appendix = fw.doc_appendix()
    return page + ("\n" + appendix if appendix else "")


def rule_changes_table(diff: dict[str, list[tuple[str, str]]], newest: str, word: str) -> list[str]:
    """A release's rule changes (``rules.packs.rule_changes``) as the lines of a markdown table: what it adds,
    changes (with its own source) and lacks (with the ``newest`` release's source); ``word``: release or version."""
    lines = [f"| change | rule | source in this {word} |", "|---|---|---|"]
    for kind in ("added", "changed", "absent"):
        for rule_id, source in diff[kind]:
            where = source if kind != "absent" else f"({newest}: {source})"
            lines.append(f"| {kind} | `{rule_id}` | `{where.replace('|', '/')}` |")
    return lines
