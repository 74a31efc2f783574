"""numba as the compiled loops get it: on a CPU with AVX-512 its loops vectorise over 512-bit registers."""
import numpy as np
import pytest

from attnviz import compiled


def test_a_loop_vectorises_over_512_bit_registers_on_an_avx512_cpu():
    import llvmlite.binding as ll

    nb = compiled.numba()
    if not ll.get_host_cpu_features().get("avx512f"):
        pytest.skip("this CPU has no AVX-512")

    @nb.njit(fastmath=True)
    def axpy(a, x, y):
        for i in range(x.shape[0]):
            y[i] += a * x[i]

    x = np.arange(1024, dtype=np.float32)
    y = np.ones(1024, np.float32)
    axpy(np.float32(0.5), x, y)
    np.testing.assert_array_equal(y, 1 + 0.5 * np.arange(1024, dtype=np.float32))
    asm = next(iter(axpy.inspect_asm().values()))
    assert "zmm" in asm  # 16 float32 lanes; LLVM's own tuning for this CPU would give ymm (8) alone


def test_a_cpu_chosen_by_the_user_is_left_as_it_is(monkeypatch):
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    compiled._wide_vectors()
    import os

    assert os.environ["NUMBA_CPU_NAME"] == "generic" and "NUMBA_CPU_FEATURES" not in os.environ
