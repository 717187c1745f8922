"""What one ingest did (``IngestReport``) and where its time went (``StepClock``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List

__all__ = ["IngestReport", "StepClock"]


@dataclass
class IngestReport:
    added: List[str] = field(default_factory=list)
    updated: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)
    unchanged: List[str] = field(default_factory=list)
    repaired: List[str] = field(default_factory=list)  # pages dropped by the repair of an earlier, interrupted write
    kept: Dict[str, str] = field(default_factory=dict)  # indexed pages unreadable now -> why (previous version kept)
    nodes_written: int = 0
    refilled: int = 0  # evidences of an older store that gained their structure fields (nothing re-embedded)
    reused: int = 0  # evidences of updated pages whose embedded text was unchanged: vectors kept, not embedded
    seconds: Dict[str, float] = field(default_factory=dict)  # where the time went, step by step

    def __str__(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.removed)} removed, "
            f"{len(self.unchanged)} unchanged pages; {self.nodes_written} evidences written"
            + (f" ({self.reused} with their earlier vectors)" if self.reused else "")
            + (
                f"; structure fields filled into {self.refilled} evidences (nothing re-embedded)"
                if self.refilled
                else ""
            )
            + (f"; {len(self.repaired)} pages of an interrupted write repaired" if self.repaired else "")
            + (f"; {len(self.kept)} kept their previous version (unreadable now)" if self.kept else "")
        )


class StepClock:
    """Records the seconds since the previous lap under each step's name (``add``: summed over
    laps, for steps that take turns batch by batch)."""

    def __init__(self, laps: Dict[str, float]) -> None:
        self.laps, self.t = laps, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self.t
        self.t = now

    def add(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + now - self.t
        self.t = now
