"""Units, written once: bytes per dtype and the formatters for bytes, FLOPs, counts, ratios and durations.

One convention for the whole app:
- bytes are memory, and memory comes in powers of two: binary prefixes, 1 KiB = 1024 bytes,
  1 MiB = 2^20, 1 GiB = 2^30 (what `free -h`, torch and the OS report). "512 KiB", never "524 KB";
- FLOPs are counts of operations: decimal SI prefixes, 1 GFLOP = 10^9 FLOPs;
- every formatter shows 3 significant digits (no trailing zeros), whole numbers from 100 up.
"""
from __future__ import annotations

import math

from attnviz.errors import BadInput

# Bytes per stored value, by canonical dtype name (torch's names).
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8": 1, "int8": 1, "uint8": 1}
# Other spellings of the same dtypes: short ones (the calculator's fp16), torch/numpy aliases.
DTYPE_ALIASES = {"fp64": "float64", "double": "float64", "fp32": "float32", "float": "float32",
                 "fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp8": "float8",
                 "float8_e4m3fn": "float8", "float8_e5m2": "float8"}

BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
FLOP_UNITS = ("FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP")


def canonical_dtype(name) -> str:
    """'fp16', 'half', 'torch.float16' -> 'float16'; BadInput for a dtype this table lacks."""
    key = str(name).strip().lower().replace("torch.", "")
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        known = ", ".join(list(DTYPE_BYTES) + list(DTYPE_ALIASES))
        raise BadInput(f"Unknown dtype {name!r}: choose one of {known}.")
    return key


def dtype_bytes(name, default: int | None = None) -> int:
    """Bytes per value of a dtype under any of its names; `default` (when given) for unknown ones."""
    try:
        return DTYPE_BYTES[canonical_dtype(name)]
    except BadInput:
        if default is None:
            raise
        return default


def dtype_label(name) -> str:
    """What a dtype picker shows: 'fp16 (2 B)'."""
    return f"{name} ({dtype_bytes(name)} B)"


def _human(x: float, units: tuple[str, ...], base: int) -> str:
    x = float(x)
    if x < 0 or not math.isfinite(x):
        raise BadInput(f"Cannot express {x} in {units[0]}.")
    i = 0
    while i < len(units) - 1 and round(x) >= base:  # 1023.7 KiB is shown as 1 MiB, not 1,024 KiB
        x /= base
        i += 1
    if i == 0 or x >= 100:
        return f"{x:,.0f} {units[i]}"
    return f"{x:.3g} {units[i]}"


def human_bytes(x: float) -> str:
    """Bytes with binary prefixes, 3 significant digits: 1536 -> '1.5 KiB', 2**30 -> '1 GiB'."""
    return _human(x, BYTE_UNITS, 1024)


def human_flops(x: float) -> str:
    """FLOPs with decimal SI prefixes, 3 significant digits: 9.66e9 -> '9.66 GFLOP'."""
    return _human(x, FLOP_UNITS, 1000)


def human_count(x: float) -> str:
    """Plain words for big counts: '10 billion', '262 thousand'."""
    x = float(x)
    for value, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"), (1e3, "thousand")):
        if x >= value:
            return f"{x / value:.3g} {word}"
    return f"{x:,.0f}"


# Plurals that are not the noun + "s".
_PLURALS = {"query": "queries"}


def count_text(n: int, noun: str | None = None) -> str:
    """An exact count with thousands separators, and its noun when given: 4096 -> '4,096',
    (4096, "token") -> '4,096 tokens', (1, "token") -> '1 token'. The one way to write a count of
    tokens, positions, words or sentences."""
    text = f"{int(n):,}"
    if noun is None:
        return text
    return f"{text} {noun if int(n) == 1 else _PLURALS.get(noun, noun + 's')}"


def human_ratio(x: float) -> str:
    """'33×', '0.25×', '1,300×': a ratio with 2-3 significant digits, never in e-notation above 0.01."""
    x = float(x)
    if x >= 100:
        return f"{x:,.0f}×"
    return f"{x:.2g}×" if x >= 0.01 else f"{x:.1e}×"


def fixed_list(xs, digits: int = 4) -> str:
    """'0.2741, 0.2741, 0.4519': numbers with `digits` decimals, comma-separated (a worked example's row, as the labs
    print it)."""
    return ", ".join(f"{float(x):.{digits}f}" for x in xs)


def human_seconds(x: float) -> str:
    """A duration as people say it: 0.4 -> 'under 1 s', 32.6 -> '33 s', 130 -> '2 min 10 s', 458 -> '7 min 38 s',
    1,250 -> '21 min', 7,500 -> '2 h 5 min'."""
    x = float(x)
    if x < 0 or not math.isfinite(x):
        raise BadInput(f"Cannot express {x} in seconds.")
    if x < 0.5:
        return "under 1 s"
    s = round(x)
    if s < 60:
        return f"{s} s"
    if s < 600:
        m, r = divmod(s, 60)
        return f"{m} min {r} s" if r else f"{m} min"
    m = round(x / 60)
    if m < 60:
        return f"{m} min"
    h, r = divmod(m, 60)
    return f"{h} h {r} min" if r else f"{h} h"
