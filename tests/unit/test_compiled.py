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


def test_attnviz_compile_leaves_every_loop_the_pages_use_in_numbas_cache(tmp_path):
    """`attnviz compile` (make setup runs it) into an empty cache; then, in a new process, the analysis's pass on a
    result's read-only weights, the contributions' loops for MiniLM's 12 heads and the long rows' loop all load
    from the cache, none is compiled."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "attnviz.cli", "compile"], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    assert "compiled loops ready" in done.stdout
    code = ("import json, numpy as np, torch\n"
            "from attnviz.contrib.pairs import _kernel, _rows, _spreader, pairs, spread\n"
            "from attnviz.long.rowpass import softmax_block\n"
            "from attnviz.metrics.analysis import head_pass\n"
            "from attnviz.metrics import headkernel\n"
            "from attnviz.long import rowkernel\n"
            "w = np.random.default_rng(0).random((2, 12, 7, 7)).astype(np.float32)\n"
            "w.flags.writeable = False\n"
            "head_pass(w, np.tril(np.ones((7, 7), bool)), np.full(7, 1 / 7, np.float32))\n"
            "_, ak = spread(np.array(w[0]), np.ones((12, 7), np.float32))\n"  # writable, as a tensor's numpy()
            "pairs(ak, np.ones((12, 7, 5), np.float32), np.ones((7, 12, 12), np.float32),"
            " np.ones((7, 5), np.float32))\n"
            "s = torch.zeros((3, 8, 8))\n"
            "softmax_block(s, torch.empty_like(s), np.zeros(8, np.int64), None, 0)\n"
            "stats = {n: (sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())) for n, d in [\n"
            "    ('head_pass', headkernel.head_pass), ('spread', _spreader()), ('rows', _rows()),\n"
            "    ('pairs', _kernel(12)), ('softmax_rows', rowkernel.softmax_rows)]}\n"
            "print(json.dumps(stats))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    assert stats == {name: [1, 0] for name in ("head_pass", "spread", "rows", "pairs", "softmax_rows")}
