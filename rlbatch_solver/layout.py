"""The layouts a framework offers ``recommend --placement`` (``Framework.placements``): one solve each.

Below the commands: frameworks build their layouts from these, and ``commands/placement.py`` solves them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple, Optional

from .errors import InputError
from .scenario import Scenario


class Layout(NamedTuple):
    """One layout ``recommend --placement`` may solve (``Framework.placements``)."""

    placement: str  # "colocate" | "split"
    label: str  # "16 trainer (2x8) + 16 rollout (2x8) GPUs"
    scenario: Any  # the Scenario of its solve (placement settled)
    coarse: bool = True  # solved first; the others only next to the best of their family
    family: Optional[str] = None  # split layouts of one family are ordered by trainer GPUs


def placement_kind(placement: str) -> str:
    """The adjective for a placement in our sentences: "colocated" or "split"."""
    return "colocated" if placement == "colocate" else "split"


def admits(scenario: Scenario, placement: str, wanted: dict[str, Any], notes: list[str]) -> bool:
    """Whether the scenario's fixed keys allow the layouts of ``placement``, which set ``wanted``: asked for by name,
    a clash is an ``InputError``; under ``auto`` that kind is left out and ``notes`` says why."""
    clash = {k: v for k, v in wanted.items() if k in scenario.fixed and str(scenario.fixed[k]).lower() != str(v).lower()}
    if not clash:
        return True
    k, v = next(iter(clash.items()))
    if scenario.placement == placement:
        raise InputError("placement", f"--placement {placement} needs {k}={v}, but the scenario fixes "
                         f"{k}={scenario.fixed[k]}.", f"drop {k} from the scenario, or use another --placement.")
    notes.append(f"no {placement_kind(placement)} layout was solved: the scenario fixes {k}={scenario.fixed[k]}")
    return False


def sub_scenario(scenario: Scenario, **changes: Any) -> Scenario:
    """A copy of ``scenario`` for one layout's solve (its own placement settled: no further split). ``fixed`` keys
    the user set win over the layout's, except those the layout is made of (``layout_keys``)."""
    layout_keys = set(changes.pop("layout_keys", ()))
    given = changes.pop("fixed", {})
    fixed = {**given, **scenario.fixed}
    fixed.update({k: v for k, v in given.items() if k in layout_keys})
    search = {**scenario.search, **changes.pop("search", {})}
    return replace(scenario, placement=None, fixed=fixed, search=search, **changes)
