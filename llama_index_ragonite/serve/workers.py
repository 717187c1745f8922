"""Worker threads back to their idle count after a burst: a lifespan task that lets anyio retire them.

Why: every model, index and database call runs on anyio's worker threads (``routes.off_loop``,
``routes.turn_thread``; both limiters share one pool per event loop). A burst of turns starts one
thread per turn running at once (up to ``--max-turns`` plus anyio's 40 for the rest), and anyio
retires a worker idle for ``WorkerThread.MAX_IDLE_TIME`` (10 s) only when a later call takes a
worker: a server left alone after a burst kept them all (39 threads 60 s after three bursts of
45 dropped streams, against 5 before). ``retire_idle_workers`` makes that later call, a no-op every
``RETIRE_EVERY_S``; so within about 15 s of a burst the pool is down to the one worker the call
ran on.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

__all__ = ["RETIRE_EVERY_S", "lifespan", "retire_idle_workers"]

RETIRE_EVERY_S = 5.0


def _nothing() -> None:
    return None


async def retire_idle_workers(every: float = RETIRE_EVERY_S) -> None:
    """Forever: every ``every`` seconds, one no-op call on anyio's pool, which retires the workers idle
    longer than anyio's limit (the call itself runs on the most recently idle one)."""
    import anyio

    while True:
        await asyncio.sleep(every)
        await anyio.to_thread.run_sync(_nothing)


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The app's lifespan (FastAPI ``lifespan=``): ``retire_idle_workers`` while it serves."""
    task = asyncio.create_task(retire_idle_workers())
    try:
        yield
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
