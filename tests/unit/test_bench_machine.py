"""The bench's machine figures: the load average and a fixed product's time, at its start and at its end."""
import os

import torch

from attnviz.bench import machine, run


def test_the_product_time_grows_with_its_size_and_leaves_torchs_threads_as_they_were():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        small, large = machine.matmul_ms(128, 3), machine.matmul_ms(512, 3)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    # 64 times the multiply-adds: far more than 4 times the time, whatever the machine's noise
    assert 0 < small and large > 4 * small


def test_probe_names_its_moment_and_reads_the_load_average(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (3.25, 1.0, 0.5))
    monkeypatch.setattr(machine, "matmul_ms", lambda: 117.5)
    assert machine.probe("end") == {"machine_load_end": 3.25, "machine_matmul_ms_end": 117.5}


def test_the_bench_prints_the_machine_first_and_last(monkeypatch):
    moments = iter([1.5, 2.5])
    monkeypatch.setattr(os, "getloadavg", lambda: (next(moments), 0.0, 0.0))
    monkeypatch.setattr(machine, "matmul_ms", lambda: 100.0)
    out = run.collect(modules=["attnviz.bench.no_such_figures"])  # a module that does not exist is skipped
    assert list(out) == ["machine_load_start", "machine_matmul_ms_start", "machine_load_end", "machine_matmul_ms_end"]
    assert out["machine_load_start"] == 1.5 and out["machine_load_end"] == 2.5
