"""The one timing loop of the benchmarks: a warm-up call, then the median of timed calls."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(operation: Callable[[int], object], repeats: int) -> float:
    """Median milliseconds of `operation(n)` for n in 0..repeats-1, after `operation(-1)`.

    The warm-up call is not timed: it pays what only a first call pays (an import, a cold
    cache), which a running daemon has paid long before.
    """
    operation(-1)
    times = []
    for number in range(repeats):
        began = time.perf_counter()
        operation(number)
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)
