"""Benchmark: the cost of one deadline around one loop turn, collectors/aio.py's `deadline` against
asyncio.timeout (both sides in one run, interleaved, CPU time): every frame of every node goes through one
(transport/base.py request), so the deadline that never loses a cancel must cost no more.
Run: python3 bench/bench_deadline.py
"""
from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pinscope.collectors.aio import deadline

N = 50_000


async def one_timeout() -> None:
    async with asyncio.timeout(10):
        await asyncio.sleep(0)


async def one_deadline() -> None:
    async with deadline(10):
        await asyncio.sleep(0)


async def main() -> None:
    res: dict[str, list[float]] = {}
    for _ in range(3):
        for name, f in (("asyncio.timeout", one_timeout), ("aio.deadline", one_deadline)):
            t0 = time.process_time()
            for _ in range(N):
                await f()
            res.setdefault(name, []).append((time.process_time() - t0) / N * 1e6)
    for k, v in res.items():
        print(f"{k:16} {min(v):.2f} us CPU per block, one loop turn inside (min of 3 x {N})")
    print(f"aio.deadline / asyncio.timeout: {min(res['aio.deadline']) / min(res['asyncio.timeout']):.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
