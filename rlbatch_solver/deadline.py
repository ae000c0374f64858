"""One time budget for a whole command.

``--time-limit`` bounds what the user waits for, not each solve inside: every
step of a command (direct search, CP-SAT solves, conflict cores, relaxations)
asks the same ``Deadline`` how much time is left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


def now() -> float:
    """The clock every deadline reads (one place, so a test can run a command on a clock of its own)."""
    return time.monotonic()


@dataclass
class Deadline:
    seconds: float
    start: float = field(default_factory=lambda: now())

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def left(self) -> float:
        return max(0.0, self.end - now())

    def expired(self) -> bool:
        return now() >= self.end

    def share(self, fraction: float, floor: float = 0.05) -> float:
        """A solve's limit: ``fraction`` of what is left, at least ``floor`` seconds while any is left."""
        left = self.left()
        return min(left, max(floor, left * fraction))

    def within(self, seconds: float) -> "Deadline":
        """A deadline ``seconds`` from now, never later than this one (a step's own budget inside the command's)."""
        return Deadline(min(max(0.0, seconds), self.left()))

    def elapsed(self) -> float:
        return now() - self.start


class OutOfTime(Exception):
    """A step that is not a solve (pricing a cost table's rows) found its deadline passed: its caller answers
    "unknown", as a solve out of time would."""
