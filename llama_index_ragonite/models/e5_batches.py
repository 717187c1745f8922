"""How ``E5Encoder`` groups its texts' token windows into batches, and runs the batches on the cores.

Why batches side by side, each on one onnxruntime thread, rather than one batch at a time on two:
a batch of short evidences is a small product per layer, and two threads working on each one wait
for each other at every step. On 800 ConfQuestions evidences (vectors and terms, 2 cores, three runs
each, alternating) the encoder took 9.6-10.9 s and 18.7-21.2 CPU-s, against 11.0-13.3 s and
20.3-24.3 CPU-s before. The cost: a lone query, one batch, runs on one thread, 8.3-10.8 ms p50 against
7.9-8.1 ms on two (300 ConfQuestions questions, vectors and terms); a server answering several users
at once keeps both cores busy either way. Results are merged in batch order, so the vectors are the
same bits as one batch at a time.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, List, Sequence, Tuple, TypeVar

__all__ = ["MAX_WORKERS", "Piece", "available_cores", "default_workers", "length_batches", "run_batches"]

MAX_WORKERS = 4  # each worker holds its batch's activations (tens of MB); measured on 2 cores only

Piece = Tuple[int, List[int], int]  # (text index, token ids with specials, first content row to pool for terms)
Result = TypeVar("Result")


def available_cores() -> int:
    """The cores this process may use: its CPU affinity, and a container's CPU quota (cgroup v2) where set."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(quota) // int(period)))
    except (OSError, ValueError):  # no cgroup v2 file here, or one we do not read
        pass
    return cores


def default_workers() -> int:
    return min(available_cores(), MAX_WORKERS)


def length_batches(pieces: Sequence[Piece], batch_tokens: int) -> List[List[Piece]]:
    """The pieces sorted by length and cut into batches of at most ``batch_tokens`` padded tokens
    (at least one piece each): similar lengths pad little."""
    order = sorted(pieces, key=lambda piece: len(piece[1]))
    batches: List[List[Piece]] = []
    for piece in order:
        if batches and (len(batches[-1]) + 1) * len(piece[1]) <= batch_tokens:
            batches[-1].append(piece)
        else:
            batches.append([piece])
    return batches


def run_batches(run: Callable[[List[Piece]], Result], batches: List[List[Piece]], workers: int) -> Iterator[Result]:
    """``run(batch)`` for every batch, in order, on up to ``workers`` threads side by side."""
    if workers <= 1 or len(batches) <= 1:
        yield from map(run, batches)
        return
    with ThreadPoolExecutor(min(workers, len(batches)), thread_name_prefix="ragonite-e5") as pool:
        yield from pool.map(run, batches)
