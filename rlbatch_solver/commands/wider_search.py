"""``recommend``: the arms a default search leaves out (``Framework.arms_left_out``: TRL's and ms-swift's
generation without vLLM), searched too when the answer is tight or none fits, and named where they stay out.

An expert asked for a config that does not fit, or only fits within the memory model's error, tries the other way
to run before saying none has room: a default search that holds a switch to one value answers for part of the
space only. Searching both arms for every scenario would add their solve to every answer (and list the slower arm
among the alternatives); the answers that need it are the few without headroom. Where the arms are priced alike
(``LeftOut.by_default``: ms-swift, whose command carries the prompt length either way) they are searched in the
answer's own solve instead (``recommend.with_open_arms``): the faster arm may have room to spare, and an answer with
room never asks for this search (7B LoRA on one RTX 4090: 48.6 s a step without vLLM, 52.9 s with it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

# the least time left to the command's deadline for the wider solve to run: below it the answer keeps its own
# search and names the arms it left out (the placement command gives a layout's solve as little, MIN_LAYOUT_S)
MIN_WIDER_S = 1.0


def lacks_room(report: Any) -> str:
    """Why the answer asks for the arms left out: its best is tight, or the search proved none fits; '' else."""
    if not report.choices:
        return "no config fits" if report.status == "infeasible" else ""
    if report.margin_note.startswith("tight"):
        return "the best config is tight (its peak within the memory model's observed error of the usable memory)"
    return ""


def _memory_bound(report: Any) -> bool:
    """Whether a search that found no config was held by memory (a memory rule among the conflicting ones, or no
    conflict named): another engine's arm may change that; a rule of the config's own values alone (TRL 1.16.0
    refusing --set max_prompt_length) it does not, and the wider search's notes would only be noise."""
    conflict = getattr(report, "conflict", None)
    ids = list(getattr(conflict, "ids", None) or [r.id for r in getattr(conflict, "rules", None) or []])
    return not ids or any(".memory." in rid or rid.endswith(".memory") for rid in ids)


def with_arms_left_out(asked: Any, report: Any, framework: Any, deadline: Any,
                       solve: Callable[[Any], Any]) -> Any:
    """``report`` (the answer to ``asked``), or, where it lacks room and the framework's default search left out
    arms the user did not choose, the answer of ``solve`` on ``asked`` with those arms searched too (the wider
    search is a superset: its answer is the default's, or one the default could not reach), said in a note; the
    arms that stay out are named in the tight note (or, when none fits, in a note)."""
    why = lacks_room(report)
    arms = framework.arms_left_out(asked) if why else []
    if not arms:
        return report
    chosen = [a for a in arms if a.chosen]
    open_arms = [a for a in arms if not a.chosen]
    if open_arms and deadline.left() >= MIN_WIDER_S:
        wider = solve(replace(asked, search={**asked.search, **{a.key: list(a.values) for a in open_arms}}))
        if wider.choices or wider.status == "infeasible" and _memory_bound(report):
            held = ", ".join(f"{a.key}={v}" for a in open_arms for v in a.values if v not in a.left)
            wider.key_notes = [*wider.key_notes, f"{' and '.join(a.what for a in open_arms)} searched too: with "
                               f"{held} alone (the default search) {why}"]
            return _named(wider, chosen)
        if wider.status == "infeasible":  # searched, and held by the config's own rules: not for want of time
            return _named(report, chosen)
    return _named(report, arms)


def _named(report: Any, arms: list) -> Any:
    """``report`` with the arms its search left out named where it says none has headroom or none fits, and how to
    search them (the user's own choice is kept; the others had no time left)."""
    if not arms or not lacks_room(report):
        return report
    words = "; ".join(f"{a.what}, as you chose: --search {a.key}={','.join(a.values)} tries it" if a.chosen else
                      f"{a.what}, for want of time: raise --time-limit, or --search {a.key}={','.join(a.values)}"
                      for a in arms)
    if report.choices:
        report.margin_note = f"{report.margin_note}; the search left out {words}"
    else:
        report.key_notes = [*report.key_notes, f"the search left out {words}"]
    return report
