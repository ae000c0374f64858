"""A release string as numbers, to order and compare releases: one definition for the frameworks' release packs
(verl, OpenRLHF, TRL) and the cost model's pinned libraries (DeepSpeed, vLLM). It imports nothing of the package."""

from __future__ import annotations


def release_numbers(version: str) -> tuple[int, ...]:
    """A release's leading numbers: "0.16.4" -> (0, 16, 4), "0.10.4" after "0.9.10"; a part that is not a number
    ends them ("0.2.0.post2" -> (0, 2, 0), "0.9.1rc1" -> (0, 9))."""
    out: list[int] = []
    for part in version.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)
