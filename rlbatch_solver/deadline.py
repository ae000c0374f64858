"""One time budget for a whole command.

``--time-limit`` bounds what the user waits for, not each solve inside: every
step of a command (direct search, CP-SAT solves, conflict cores, relaxations)
asks the same ``Deadline`` how much time is left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Deadline:
    seconds: float
    start: float = field(default_factory=time.monotonic)

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def share(self, fraction: float, floor: float = 0.05) -> float:
        """A solve's limit: ``fraction`` of what is left, at least ``floor`` seconds while any is left."""
        left = self.left()
        return min(left, max(floor, left * fraction))

    def elapsed(self) -> float:
        return time.monotonic() - self.start
