"""A value computed once per object, kept by the object's identity.

For objects that do not change once built but are not hashable (a ``RuleSet``) or are costly to hash (a
``ModelCard``'s thirty fields, asked on every row of a cost table). The object is kept beside its value, so a freed
object's reused ``id`` is never taken for it.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, TypeVar

T = TypeVar("T")


def by_identity(store: dict[tuple[int, Hashable], tuple[Any, Any]], obj: Any, compute: Callable[[], T],
                key: Hashable = None, limit: int | None = None) -> T:
    """``compute()`` for ``(obj, key)``, computed the first time only; ``limit``: the most entries ``store`` keeps
    (emptied when full: for objects built per command, as rule sets are)."""
    hit = store.get((id(obj), key))
    if hit is None or hit[0] is not obj:
        if limit is not None and len(store) >= limit:
            store.clear()
        hit = store[(id(obj), key)] = (obj, compute())
    return hit[1]
