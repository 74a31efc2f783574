"""Shareable views: the model, text, page, chosen head and each page's main settings in the URL,
and the shared settings kept across page switches."""
from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

# Keys every page shares, with their types. Pages add their own with bind().
GLOBAL_KEYS: dict[str, type] = {
    "model_choice": str, "custom_model": str, "text": str, "use_pair": bool, "text_pair": str,
    "layer": int, "head": int, "present": bool, "lens": str, "words": bool,
}
MAX_TEXT_IN_URL = 2000  # longer texts are left out of links (browsers cap URLs)
_PAGE_KEYS = "_share_page_keys"
_RESTORED = "_share_restored"
_FROM_LINK = "_share_from_link"  # keys given a value from the link, not yet accepted by a widget
_LINK_RESET = "_share_link_reset"  # set when a link's values were dropped, for a message next run
# The last value of every shared widget key. Streamlit drops the state of every widget when a
# script switches page (st.switch_page sends no widget states), and of a page's widgets when
# another page runs: the model, the text and each page's settings are revived from here.
_KEPT = "_share_kept"
_ALL_KEYS = "_share_all_keys"  # every key ever bound in this session (key -> type)
_REVIVED = "_share_revived"  # keys revived in this run, dropped again if a widget refuses them
_PAGE = "_share_page"  # the page of this run (its URL path)
_LAST_PAGE = "_share_last_page"  # the page whose run last ended


def _parse(raw: str, kind: type):
    if kind is list:  # a multiselect's choices, comma-separated
        return [part for part in raw.split(",") if part]
    if kind is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    if kind is int:
        return int(raw)
    if kind is float:
        return float(raw)
    return raw


def _encode(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _restore(keys: dict[str, type]) -> None:
    """Copy URL values into session state, once per key and session (before widgets exist)."""
    done = st.session_state.setdefault(_RESTORED, set())
    for key, kind in keys.items():
        if key in done:
            continue
        done.add(key)
        if key in st.query_params:
            try:
                st.session_state[key] = _parse(st.query_params[key], kind)
                st.session_state.setdefault(_FROM_LINK, set()).add(key)
            except ValueError:
                pass  # a hand-edited link with a bad value keeps the default


def _revive(keys) -> None:
    """Give back the last value of each shared key whose widget state Streamlit dropped."""
    kept = st.session_state.get(_KEPT, {})
    for key in keys:
        if key not in st.session_state and key in kept:
            st.session_state[key] = kept[key]
            st.session_state.setdefault(_REVIVED, set()).add(key)


def keep_values() -> None:
    """Called at the end of every run: remember the value of every shared key."""
    kept = st.session_state.setdefault(_KEPT, {})
    for key in {**GLOBAL_KEYS, **st.session_state.get(_ALL_KEYS, {})}:
        if key in st.session_state:
            kept[key] = st.session_state[key]


def forget(*keys: str) -> None:
    """Drop shared keys for good (their widgets start from their defaults next time)."""
    kept = st.session_state.get(_KEPT, {})
    for key in keys:
        kept.pop(key, None)
        st.session_state.pop(key, None)


def start_run(page: str = "") -> None:
    """Called by app.py before the sidebar: restore the shared keys, forget last run's page keys.
    `page` is the URL path of the page this run shows."""
    st.session_state[_PAGE] = page
    st.session_state[_PAGE_KEYS] = {}
    st.session_state[_REVIVED] = set()
    _restore(GLOBAL_KEYS)
    _revive(GLOBAL_KEYS)
    dropped = st.session_state.pop(_LINK_RESET, None)
    if dropped:
        st.toast("Some settings in the link were out of range, so this view uses the defaults for: "
                 + ", ".join(dropped) + ".", icon=":material/link_off:")


def accept_link_values() -> None:
    """Called after a run that went through: the link's values so far were all accepted."""
    st.session_state.pop(_FROM_LINK, None)


def reject_link_values() -> bool:
    """After a widget refused a value (a hand-edited link with, say, a slider value out of its
    range): forget every value taken from the link in this run, so the rerun uses the defaults.
    Returns False when no link value was involved (the error is something else)."""
    keys = st.session_state.pop(_FROM_LINK, set())
    revived = st.session_state.pop(_REVIVED, set())
    for key in keys | revived:
        forget(key)
        if key in st.query_params:
            del st.query_params[key]
    if keys:
        st.session_state[_LINK_RESET] = sorted(keys)
    return bool(keys or revived)


def from_link(key: str):
    """The value the link gave `key` in this run (the first run of a session opened from a link),
    else None. For settings a page keeps outside its widget (say, per model)."""
    if key in st.session_state.get(_FROM_LINK, set()):
        return st.session_state.get(key)
    return None


def bind(keys: dict[str, type]) -> None:
    """A page's main settings (widget keys -> type) that go into the URL. Call before the widgets."""
    _restore(keys)
    _revive(keys)
    st.session_state.setdefault(_PAGE_KEYS, {}).update(keys)
    st.session_state.setdefault(_ALL_KEYS, {}).update(keys)


def current_params() -> dict[str, str]:
    keys = {**GLOBAL_KEYS, **st.session_state.get(_PAGE_KEYS, {})}
    out = {}
    for key in keys:
        value = st.session_state.get(key)
        if value is None or value == "":
            continue
        if key in ("text", "text_pair") and len(str(value)) > MAX_TEXT_IN_URL:
            continue
        if key in ("text_pair",) and not st.session_state.get("use_pair"):
            continue
        if key == "custom_model" and st.session_state.get("model_choice") != "other":
            continue
        out[key] = _encode(value)
    return out


def sync_url(early: bool = False) -> None:
    """Write the current view into the URL and remember the shared values.

    This is the one way settings reach the URL: no widget is bound to a query parameter
    (Streamlit refuses any write to a bound parameter, and from_dict writes them all).
    Written at the end of every run, changed or not: after a page switch the browser shows the
    new page's bare path while the server's copy of the query still matches, and a run cut short
    by a rerun may lose its message (the browser ignores a query equal to the one it shows).
    early=True (after the sidebar) writes the model and text on the first run of a page, so a
    slow page has them in its URL at once; later runs leave the URL alone until they end."""
    page = st.session_state.get(_PAGE, "")
    if early and st.session_state.get(_LAST_PAGE) == page:
        return
    if not early:
        keep_values()
    params = current_params()
    # keep values meant for a page that has not run yet in this session (a link to page X
    # first opens the app's default page in some clients)
    done = st.session_state.get(_RESTORED, set())
    for key, value in st.query_params.items():
        if key not in done and key not in params:
            params[key] = value
    st.query_params.from_dict(params)
    if not early:
        st.session_state[_LAST_PAGE] = page


def share_link() -> str:
    base = (st.context.url or "").split("?")[0]
    params = current_params()
    return base + ("?" + urlencode(params) if params else "")


def view_link() -> str:
    """This view as a path + query ("/heatmap?layer=2"), without the host (for decks)."""
    params = current_params()
    return "/" + st.session_state.get(_PAGE, "") + ("?" + urlencode(params) if params else "")
