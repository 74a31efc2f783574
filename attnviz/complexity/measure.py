"""A bounded micro-benchmark of attention on this machine: time and peak memory against n.

Three implementations of the same single-layer attention (float32, CPU):
- "naive": softmax(Q Kᵀ / √d_head) V with the n×n matrix materialised;
- "sdpa": torch.nn.functional.scaled_dot_product_attention (a fused kernel);
- "linear": linear attention with φ(x) = elu(x) + 1 (Katharopoulos et al. 2020), non-causal.

Time is the CPU time of the measuring thread with torch on one thread (steady even when
other programs share the cores); the fastest of a few calls counts. Memory is predicted before each run and sizes that would not fit are skipped. Peak memory is
read from the torch profiler's allocation events (allocations minus frees during the call,
in time order); torch's CPU allocator is invisible to tracemalloc, and RSS does not shrink
reliably after frees. torch is imported lazily so importing this module is cheap.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from attnviz.errors import BadInput
from attnviz.progress import is_cancelled
from attnviz.runtime import available_bytes
from attnviz.units import human_bytes

IMPLEMENTATIONS = {  # key -> label
    "naive": "Naive softmax attention",
    "sdpa": "torch scaled_dot_product_attention",
    "linear": "Linear attention (elu+1)",
}
SHORT_NAMES = {"naive": "naive", "sdpa": "torch SDPA", "linear": "linear"}  # for legends
PREDICTED_SLOPE = {"naive": 2.0, "sdpa": 2.0, "linear": 1.0}  # time ~ n^slope for n >> d_head
FLOAT_BYTES = 4  # the benchmark runs in float32

_LOCK = threading.Lock()  # one measurement at a time per process (timings, profiler)


@dataclass(frozen=True)
class BenchConfig:
    """What the micro-benchmark runs; validated on construction (BadInput)."""

    sizes: tuple[int, ...] = (256, 512, 1024, 2048, 4096)  # sequence lengths n, increasing
    implementations: tuple[str, ...] = ("naive", "sdpa", "linear")  # keys of IMPLEMENTATIONS
    n_heads: int = 4  # heads h
    d_head: int = 64  # width of one head
    batch: int = 1  # sequences
    repeats: int = 3  # timed calls per size; the fastest counts
    time_limit: float = 4.0  # seconds: skip a size whose predicted call time is longer
    memory_budget: int | None = None  # bytes a run may allocate; None = half the free RAM
    measure_memory: bool = True  # profile one extra call for its peak allocation
    threads: int = 1  # torch threads while measuring; with 1, time is the thread's CPU time,
    # which other programs on the machine barely disturb (more threads: wall-clock time)

    def __post_init__(self):
        if not self.sizes:
            raise BadInput("Pick at least one sequence length to measure.")
        sizes = tuple(int(n) for n in self.sizes)
        if any(n < 1 or n != s for n, s in zip(sizes, self.sizes)):
            raise BadInput("Sequence lengths to measure must be whole numbers of at least 1.")
        object.__setattr__(self, "sizes", tuple(sorted(set(sizes))))
        unknown = [i for i in self.implementations if i not in IMPLEMENTATIONS]
        if unknown or not self.implementations:
            raise BadInput(f"Pick implementations among {', '.join(IMPLEMENTATIONS)} (got {unknown or 'none'}).")
        for name in ("n_heads", "d_head", "batch", "repeats", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise BadInput(f"The benchmark's {name.replace('_', ' ')} must be a whole number of at least 1.")


@dataclass(frozen=True)
class Measurement:
    impl: str  # key of IMPLEMENTATIONS
    n: int  # sequence length
    seconds: float | None  # fastest call; None when skipped
    peak_bytes: int | None  # extra bytes allocated at the peak of one call; None if unknown
    predicted_bytes: int  # what predict_peak_bytes said before running
    flops: int  # FLOPs of one call (flops())
    skipped: str | None = None  # why the size was not run

    @property
    def gflops_per_s(self) -> float | None:
        return self.flops / self.seconds / 1e9 if self.seconds else None


def flops(impl: str, n: int, cfg: BenchConfig) -> int:
    """FLOPs of one call: 4·b·h·n²·dh for softmax attention, 4·b·h·n·dh² + 3·b·h·n·dh linear."""
    b, h, dh = cfg.batch, cfg.n_heads, cfg.d_head
    if impl == "linear":
        return 4 * b * h * n * dh * dh + 3 * b * h * n * dh
    return 4 * b * h * n * n * dh


def predict_peak_bytes(impl: str, n: int, cfg: BenchConfig) -> int:
    """Bytes one call allocates at its peak (inputs excluded), float32.

    naive: the scores and the probabilities (2 n×n per head) plus the output;
    sdpa: the output, the per-row statistics and per-thread tiles (about 2 n·dh per head);
    linear: φ(Q), φ(K) and the numerator or output, live at once (3 n·dh per head), plus the
    dh×dh state and the n normalisers."""
    b, h, dh = cfg.batch, cfg.n_heads, cfg.d_head
    if impl == "naive":
        per_head = 2 * n * n + n * dh
    elif impl == "sdpa":
        per_head = 2 * n * dh
    elif impl == "linear":
        per_head = 3 * n * dh + dh * dh + n + dh
    else:
        raise BadInput(f"Unknown implementation {impl!r}: choose one of {', '.join(IMPLEMENTATIONS)}.")
    return b * h * per_head * FLOAT_BYTES


def input_bytes(n: int, cfg: BenchConfig) -> int:
    """Q, K and V: 3·b·h·n·dh float32 values."""
    return 3 * cfg.batch * cfg.n_heads * n * cfg.d_head * FLOAT_BYTES


UNKNOWN_FREE = 2 ** 30  # budget when the free memory cannot be read: 1 GiB


def memory_budget(cfg: BenchConfig) -> int:
    """Bytes a call may use: the config's cap, at most half the memory available now."""
    free = available_bytes()
    free_half = free // 2 if free else UNKNOWN_FREE
    return min(cfg.memory_budget, free_half) if cfg.memory_budget else free_half


def skip_reason(impl: str, n: int, cfg: BenchConfig, history: Iterable[Measurement] = ()) -> str | None:
    """Why (impl, n) should not run, judged before running: memory or predicted time."""
    need = predict_peak_bytes(impl, n, cfg) + input_bytes(n, cfg)
    budget = memory_budget(cfg)
    if need > budget:
        return f"needs about {human_bytes(need)}, more than the {human_bytes(budget)} allowed"
    done = [m for m in history if m.impl == impl and m.seconds]
    if done:
        last = max(done, key=lambda m: m.n)
        expected = last.seconds * (n / last.n) ** PREDICTED_SLOPE[impl] * max(1, cfg.repeats)
        if expected > cfg.time_limit * max(1, cfg.repeats):
            return f"would take about {expected:.0f} s"
    return None


# ---------------------------------------------------------------- implementations

def naive_attention(q, k, v):
    """q, k, v: (batch, heads, n, d_head) -> (batch, heads, n, d_head); n×n scores kept."""
    scores = (q * (q.shape[-1] ** -0.5)) @ k.transpose(-2, -1)  # (b, h, n, n)
    probs = scores.softmax(dim=-1)  # (b, h, n, n)
    del scores
    return probs @ v


def sdpa_attention(q, k, v):
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q, k, v)


def linear_attention(q, k, v, eps: float = 1e-6):
    """Non-causal linear attention, φ = elu + 1: out_i = φ(q_i)ᵀ S / φ(q_i)ᵀ z with
    S = Σ_j φ(k_j) v_jᵀ (d_head × d_head) and z = Σ_j φ(k_j); shapes as naive_attention."""
    import torch.nn.functional as F

    fq = F.elu(q) + 1  # (b, h, n, dh)
    fk = F.elu(k) + 1  # (b, h, n, dh)
    state = fk.transpose(-2, -1) @ v  # (b, h, dh, dh)
    z = fk.sum(dim=-2)  # (b, h, dh)
    del fk
    num = fq @ state  # (b, h, n, dh)
    den = (fq * z.unsqueeze(-2)).sum(-1, keepdim=True)  # (b, h, n, 1)
    return num / (den + eps)


_FUNCTIONS = {"naive": naive_attention, "sdpa": sdpa_attention, "linear": linear_attention}


def _peak_allocation(fn, *args) -> int | None:
    """Peak of (allocated - freed) bytes during fn(*args), from torch profiler events."""
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = fn(*args)
            del out
        events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    except Exception:  # profiler internals differ between torch versions: report unknown
        return None
    current = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        current += e.nbytes()
        peak = max(peak, current)
    return int(peak) if events else None


class _torch_threads:
    """Context manager: torch.set_num_threads(n) inside, the previous count restored after
    (process-wide: other sessions' forwards run with n threads for that moment)."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        import torch

        self.before = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self.before)


def measure(impl: str, n: int, cfg: BenchConfig, history: Sequence[Measurement] = ()) -> Measurement:
    """Time (fastest of cfg.repeats calls) and peak memory of one implementation at length n,
    unless skip_reason says no; never raises for memory, returns a skipped Measurement."""
    if impl not in _FUNCTIONS:
        raise BadInput(f"Unknown implementation {impl!r}: choose one of {', '.join(IMPLEMENTATIONS)}.")
    predicted = predict_peak_bytes(impl, n, cfg)
    reason = skip_reason(impl, n, cfg, history)
    if reason:
        return Measurement(impl, n, None, None, predicted, flops(impl, n, cfg), reason)
    import torch

    fn = _FUNCTIONS[impl]
    with _LOCK, torch.inference_mode(), _torch_threads(cfg.threads):
        gen = torch.Generator().manual_seed(n)
        shape = (cfg.batch, cfg.n_heads, n, cfg.d_head)
        q, k, v = (torch.randn(shape, generator=gen) for _ in range(3))
        fn(q[..., :8, :], k[..., :8, :], v[..., :8, :])  # warm the code path, not the caches
        best = math.inf
        clock = time.thread_time if cfg.threads == 1 else time.perf_counter
        for i in range(cfg.repeats):
            t0 = clock()
            out = fn(q, k, v)
            elapsed = clock() - t0
            del out
            best = min(best, elapsed)
            if elapsed > cfg.time_limit:  # one slow call is measurement enough
                break
        peak = _peak_allocation(fn, q, k, v) if cfg.measure_memory else None
    return Measurement(impl, n, best, peak, predicted, flops(impl, n, cfg))


def plan(cfg: BenchConfig) -> list[tuple[str, int]]:
    """(impl, n) in the order they run: all implementations at one n, then the next n."""
    return [(impl, n) for n in cfg.sizes for impl in cfg.implementations]


def run(cfg: BenchConfig, progress: Callable[[int, int, str], None] | None = None,
        cancel: Callable[[], bool] | threading.Event | None = None,
        into: list[Measurement] | None = None) -> list[Measurement]:
    """Measure every (impl, n) of plan(cfg). progress(done, total, message) is called before
    each size and at the end; cancel() (or a set Event) is checked before each size and stops
    the run early, returning what was measured so far. `into`: a list filled as each size
    finishes (another thread may read it while the run goes on); returned."""
    jobs = plan(cfg)
    results: list[Measurement] = [] if into is None else into
    for i, (impl, n) in enumerate(jobs):
        if progress:
            progress(i, len(jobs), f"{IMPLEMENTATIONS[impl]} at n = {n:,}")
        if is_cancelled(cancel):
            break
        results.append(measure(impl, n, cfg, results))
    if progress:
        progress(len(results), len(jobs), "done" if len(results) == len(jobs) else "cancelled")
    return results


# ---------------------------------------------------------------- slope fitting

def fit_slope(ns, values) -> tuple[float, float]:
    """Least-squares line through (log n, log value): (slope, intercept) with value ≈
    exp(intercept) · n^slope. ns, values: 1-D, same length, positive, at least 2 distinct n."""
    x = np.asarray(ns, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise BadInput(f"Need two 1-D sequences of the same length, got shapes {x.shape} and {y.shape}.")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.any(x <= 0) or np.any(y <= 0):
        raise BadInput("A log-log fit needs positive, finite lengths and values.")
    if np.unique(x).size < 2:
        raise BadInput("A slope needs measurements at two or more different lengths.")
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(intercept)


def slopes(measurements: Iterable[Measurement], what: str = "seconds") -> dict[str, float]:
    """Fitted log-log slope per implementation of seconds (or peak_bytes) against n, for the
    implementations with at least two measured lengths."""
    out: dict[str, float] = {}
    by_impl: dict[str, list[Measurement]] = {}
    for m in measurements:
        if getattr(m, what):
            by_impl.setdefault(m.impl, []).append(m)
    for impl, ms in by_impl.items():
        if len({m.n for m in ms}) >= 2:
            out[impl] = fit_slope([m.n for m in ms], [getattr(m, what) for m in ms])[0]
    return out


# ---------------------------------------------------------------- what the page shows

SIZE_CHOICES = (256, 512, 1024, 2048, 4096, 8192, 16384)  # lengths the page lets you measure up to


def page_config(largest: int, implementations: Sequence[str], n_heads: int, cap_gib: float) -> BenchConfig:
    """The page's BenchConfig: every SIZE_CHOICES length up to `largest`, d_head 64, a memory
    cap in GiB (2^30 bytes); no implementation picked measures the naive one."""
    sizes = tuple(n for n in SIZE_CHOICES if n <= largest)
    return BenchConfig(sizes=sizes, implementations=tuple(implementations) or ("naive",),
                       n_heads=int(n_heads), d_head=64, memory_budget=int(cap_gib * 2 ** 30))


def prediction_rows(cfg: BenchConfig) -> list[dict[str, str]]:
    """One row per planned (impl, n): its predicted peak and whether it fits the budget."""
    budget = memory_budget(cfg)
    rows = []
    for impl, n in plan(cfg):
        peak = predict_peak_bytes(impl, n, cfg)
        rows.append({"n": f"{n:,}", "Implementation": IMPLEMENTATIONS[impl], "Predicted peak": human_bytes(peak),
                     "Fits the cap": "yes" if peak + input_bytes(n, cfg) <= budget else "no: skipped"})
    return rows


def result_rows(results: Iterable[Measurement]) -> list[dict]:
    """One row per measurement: time in ms, GFLOP/s, measured and predicted peak, why skipped."""
    return [{"Implementation": IMPLEMENTATIONS[m.impl], "n": m.n,
             "Time (ms)": round(m.seconds * 1e3, 3) if m.seconds else None,
             "GFLOP/s": round(m.gflops_per_s, 2) if m.seconds else None,
             "Peak memory": human_bytes(m.peak_bytes) if m.peak_bytes else "—",
             "Predicted": human_bytes(m.predicted_bytes),
             "Note": f"skipped: {m.skipped}" if m.skipped else ""}
            for m in results]
