"""Number boxes whose range the server checks: a value outside the range is set to the nearest end of it, a
plain message under the box says so, and the page is computed with the value the box then shows.

Streamlit's own `min_value`/`max_value` make the browser refuse such a value: the box keeps showing it, the
reason appears only on hover, and the page goes on showing results of the previous value."""
from __future__ import annotations

import streamlit as st


def _text(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,g}"


def number_box(where, label: str, lo, hi, default=None, *, key: str, step=None, **kwargs):
    """`where.number_input(label, key=key, ...)` for a value in [lo, hi] (ints when lo, hi and step are ints).

    where: st or a column/container; default: the first value (lo when None). A value out of range (typed,
    from a link or left by a range that narrowed) is replaced by the nearest bound before the box is drawn,
    with a warning under the box. Returns the box's value, always within [lo, hi]."""
    integer = isinstance(lo, int) and isinstance(hi, int) and not isinstance(step, float)
    message = _into_range(key, label, lo, hi, default, integer)
    if step is None and integer:
        step = 1
    got = where.number_input(label, key=key, step=step, **kwargs)
    if message:
        where.warning(message)
    return got


def slider_box(where, label: str, lo: float, hi: float, default: float, *, key: str, **kwargs):
    """`where.slider(label, lo, hi, key=key, ...)` that takes a value out of range (a hand-edited link) as
    number_box does: set to the nearest bound before the slider is drawn, with a warning under it."""
    message = _into_range(key, label, lo, hi, default, False)
    got = where.slider(label, lo, hi, key=key, **kwargs)
    if message:
        where.warning(message)
    return got


def _into_range(key: str, label: str, lo, hi, default, integer: bool) -> str | None:
    """Bring session value `key` into [lo, hi] (default when missing); the warning to show when it was outside."""
    state = st.session_state
    if state.get(key) is None or isinstance(state[key], bool) or not isinstance(state[key], (int, float)):
        state[key] = lo if default is None else default
    value = state[key]
    if integer and isinstance(value, float) and value.is_integer():
        state[key] = value = int(value)  # an int box holds ints (a link may carry "5.0")
    inside = min(max(value, lo), hi)
    if inside == value:
        return None
    state[key] = int(inside) if integer else float(inside)
    used = _text(state[key])
    return (f"“{label}” takes values from {_text(lo)} to {_text(hi)}: {_text(value)} was set to {used}, "
            f"and the page shows results for {used}.")
