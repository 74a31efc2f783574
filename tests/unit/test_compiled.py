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
    result's read-only weights, the contributions' loops for MiniLM's 12 heads (the maps' from read-only weights too)
    and the long rows' loop all load
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
            "spread(w[0], np.ones((12, 7), np.float32))\n"  # read-only: a Contributions' weights, for its maps
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
    assert stats == {"head_pass": [1, 0], "spread": [2, 0], "rows": [1, 0], "pairs": [1, 0], "softmax_rows": [1, 0]}


def test_the_cached_loops_are_dropped_when_a_module_they_take_in_changes(tmp_path, monkeypatch):
    """numba keys a cached loop by its own file: a change to vecmath.py (the log and exponential the loops inline)
    must remove the package's cached loops, and nothing else may."""
    root = tmp_path / "attnviz"
    for name in compiled.INLINED:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    (root / "long" / "__pycache__").mkdir(parents=True)
    loops = [root / "long" / "__pycache__" / "rowkernel.softmax_rows-15.py311.nbi",
             root / "long" / "__pycache__" / "rowkernel.softmax_rows-15.py311.1.nbc"]
    other = root / "long" / "__pycache__" / "rowkernel.cpython-311.pyc"
    for f in (*loops, other):
        f.write_bytes(b"x")
    monkeypatch.setattr(compiled, "STAMP", root / "__pycache__" / "compiled-loops.stamp")

    assert compiled.drop_stale_cache() is True  # no stamp yet: nothing says the cache is current
    assert not any(f.exists() for f in loops) and other.exists()
    for f in loops:
        f.write_bytes(b"x")  # compiled again
    assert compiled.drop_stale_cache() is False
    assert all(f.exists() for f in loops)
    (root / "vecmath.py").write_text("# vecmath.py, a polynomial changed\n")
    assert compiled.drop_stale_cache() is True
    assert not any(f.exists() for f in loops) and other.exists()
    assert compiled.drop_stale_cache() is False
