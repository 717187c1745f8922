"""How long anyio lets an idle worker thread live (checked on anyio 4.16.0).

``serve/workers.py`` retires idle workers by making a call every ``RETIRE_EVERY_S``, which only works
because anyio retires a worker idle longer than ``WorkerThread.MAX_IDLE_TIME`` (10 s) when a later call
takes one; the load test waits that long before it counts threads. The constant lives on the private
``anyio._backends._asyncio.WorkerThread``; anyio documents the behaviour, not the number.
"""

from __future__ import annotations

__all__ = ["worker_idle_seconds"]


def worker_idle_seconds() -> float:
    """``WorkerThread.MAX_IDLE_TIME``: seconds an idle worker of anyio's thread pool outlives."""
    from anyio._backends._asyncio import WorkerThread

    return float(WorkerThread.MAX_IDLE_TIME)
