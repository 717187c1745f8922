"""``TurnSlots``: how many turns may run at once, per user and in total (429 beyond).

Why: a turn holds a worker thread and, with an LLM, an open HTTP connection for as long as the
LLM writes. Without a cap one user can open dozens of streaming turns and take every worker
thread, so that the other users' light requests (listing conversations) wait behind them. The
slots are counted on the event loop (no lock needed) and taken before a turn starts; the caller
releases them when the turn has ended, whether it finished, failed or was cancelled.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Iterator

__all__ = ["RETRY_AFTER_SECONDS", "TooManyTurns", "TurnSlots"]

RETRY_AFTER_SECONDS = 5


class TooManyTurns(Exception):
    """The user (or the server) has as many turns running as allowed: 429 with ``Retry-After``."""

    retry_after = RETRY_AFTER_SECONDS


class TurnSlots:
    """At most ``per_user`` turns of one user and ``total`` turns of all users at once."""

    def __init__(self, per_user: int, total: int) -> None:
        self.per_user, self.total = per_user, total
        self.running: Counter = Counter()

    @property
    def in_use(self) -> int:
        return sum(self.running.values())

    def take(self, user: str) -> None:
        if self.running[user] >= self.per_user:
            raise TooManyTurns(
                f"You have {self.per_user} turns running; wait for one to finish (at most {self.per_user} at once)"
            )
        if self.in_use >= self.total:
            raise TooManyTurns("The server is answering as many turns as it can; try again in a few seconds")
        self.running[user] += 1

    def give_back(self, user: str) -> None:
        self.running[user] -= 1
        if self.running[user] <= 0:
            del self.running[user]

    @contextmanager
    def slot(self, user: str) -> Iterator[None]:
        self.take(user)
        try:
            yield
        finally:
            self.give_back(user)
