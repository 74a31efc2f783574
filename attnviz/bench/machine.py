"""machine_*: how busy and how fast the machine was while the bench ran, printed beside its figures.

The figures are ratios of two timings of one run, but the machine under both can change: another process (the load
average shows it) or, on a shared virtual machine, other guests on the same host, which the load average does not
show (here a 2,048 x 2,048 float32 product on one thread took 100-110 ms in a quiet hour and 117-139 ms in a busy
one, with the load average below 1 both times). So the bench reads both at its start and at its end:

machine_load_start, machine_load_end            the 1-minute load average
machine_matmul_ms_start, machine_matmul_ms_end  one 2,048 x 2,048 float32 product on one torch thread (median of 5)
"""
from __future__ import annotations

import os
import statistics
import time

SIZE = 2048
REPEATS = 5


def matmul_ms(size: int = SIZE, repeats: int = REPEATS) -> float:
    """Median milliseconds of one size x size float32 product on one torch thread (the thread count is put back)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(0)
        a, b = torch.rand(size, size, generator=gen), torch.rand(size, size, generator=gen)
        a @ b  # the first product pays for its memory
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e3
    finally:
        torch.set_num_threads(threads)


def probe(when: str) -> dict[str, float]:
    """{machine_load_<when>, machine_matmul_ms_<when>}: the load average read before the product."""
    load = os.getloadavg()[0]
    return {f"machine_load_{when}": load, f"machine_matmul_ms_{when}": matmul_ms()}
