"""Shareable views: the model, text, page, chosen head and each page's main settings in the URL,
and the shared settings kept across page switches."""
from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st
from streamlit.errors import StreamlitAPIException

# How long a note about the link itself stays on screen: a link's page may take seconds to load (a model's first
# load), and Streamlit's short notes go after 4 s
LINK_NOTE_SECONDS = 12


def link_note(text: str) -> None:
    """A note about the link itself (a value it gives that this view cannot use), shown for LINK_NOTE_SECONDS."""
    st.toast(text, icon=":material/link_off:", duration=LINK_NOTE_SECONDS)

# Keys every page shares, with their types. Pages add their own with bind().
GLOBAL_KEYS: dict[str, type] = {
    "model_choice": str, "custom_model": str, "text": str, "use_pair": bool, "text_pair": str,
    "layer": int, "head": int, "present": bool, "lens": str, "words": bool,
}
MAX_TEXT_IN_URL = 2000  # longer texts are left out of links (browsers cap URLs)
TEXT_LEFT_OUT = "long_text"  # in a link whose view had a text too long for it: the page opened from it says so
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
# A run that stops early (st.stop() after a plain message) keeps its controls' values on the server
# but not in the browser: the browser forgets every control the run did not draw, and draws it again
# at its default unless the server sends the value (Streamlit skips its clean-up after st.stop()).
_STOPPED = "_share_stopped"  # a run ended with st.stop() and no run has gone through to its end since
_RESEND = "_share_resend"  # this run follows such a run: send the values of the controls again
_HELD = "_share_held"  # widget keys kept across runs without going into the URL (see hold)
_LAST_PAGE = "_share_last_page"  # the page whose run last ended
# The page and page keys of the last run that went through to its end, and whether a run has begun since. A run
# cut short by a rerun has bound only the keys of the parts it reached; a button's callback (which runs before the
# next run, say the deck's "Add this view") and the cut-short run's own closing sync take the rest from here.
_DONE_KEYS = "_share_done_keys"
_OPEN = "_share_open"
_REPLACED = "_share_replaced"  # the key prefixes this run bound anew (bind's `replacing`)
# Streamlit's browser side adds a history entry each time a run changes the query string, so Back
# stepped through every run of a page. This makes an entry for the same page replace the current one:
# each page visited is one entry, and Back returns to the previous page in one press.
HISTORY_JS = """<script>
(() => {
  const h = window.history;
  if (h.__attnvizOneEntryPerPage) return;
  const push = h.pushState.bind(h);
  h.pushState = function (state, title, url) {
    try {
      if (url != null && new URL(url, window.location.href).pathname === window.location.pathname) {
        return h.replaceState(state, title, url);
      }
    } catch (e) { /* an odd URL: leave it to the browser */ }
    return push(state, title, url);
  };
  h.__attnvizOneEntryPerPage = true;
})();
</script>"""


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


def _restore(keys: dict[str, type], former: dict[str, str] | None = None) -> None:
    """Copy URL values into session state, once per key and session (before widgets exist).
    former: {earlier URL name: key} read when the link has the earlier name instead of the key."""
    done = st.session_state.setdefault(_RESTORED, set())
    earlier = {key: name for name, key in (former or {}).items()}
    for key, kind in keys.items():
        if key in done:
            continue
        done.add(key)
        name = key if key in st.query_params else earlier.get(key)
        if name is not None and name in st.query_params:
            done.add(name)  # an earlier name read here is not carried along in the URL
            try:
                st.session_state[key] = _parse(st.query_params[name], kind)
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
    for key in {**GLOBAL_KEYS, **st.session_state.get(_ALL_KEYS, {}), **dict.fromkeys(st.session_state.get(_HELD, ()))}:
        if key in st.session_state:
            kept[key] = st.session_state[key]


def forget(*keys: str) -> None:
    """Drop shared keys for good (their widgets start from their defaults next time)."""
    kept = st.session_state.get(_KEPT, {})
    for key in keys:
        kept.pop(key, None)
        st.session_state.pop(key, None)


def open_link(keep: tuple[str, ...] = ()) -> None:
    """Make this run read the URL as a freshly opened link does, inside the same browser session: every
    shared key takes the link's value, or its default when the link has none (except those in `keep`).
    For a deck's slides, reached without a page load. Call before start_run."""
    st.session_state.pop(_RESTORED, None)
    st.session_state.pop(_FROM_LINK, None)
    for key in {**GLOBAL_KEYS, **st.session_state.get(_ALL_KEYS, {}), **st.session_state.get(_KEPT, {})}:
        if key not in st.query_params and key not in keep:
            forget(key)


def start_run(page: str = "") -> None:
    """Called by app.py before the sidebar: restore the shared keys, forget last run's page keys.
    `page` is the URL path of the page this run shows. HISTORY_JS is in the page before it (ui.page's scripts)."""
    st.session_state[_PAGE] = page
    st.session_state[_PAGE_KEYS] = {}
    st.session_state[_OPEN] = True
    st.session_state[_REPLACED] = set()
    st.session_state[_REVIVED] = set()
    st.session_state[_RESEND] = bool(st.session_state.get(_STOPPED))
    _restore(GLOBAL_KEYS)
    _revive(GLOBAL_KEYS)
    done = st.session_state[_RESTORED]
    if TEXT_LEFT_OUT not in done:  # read once per session, like the link's values
        done.add(TEXT_LEFT_OUT)
        if TEXT_LEFT_OUT in st.query_params and "text" not in st.query_params:
            link_note(f"The text of this view was longer than a link can hold ({MAX_TEXT_IN_URL:,} characters), so "
                      "the link did not keep it: the default text is shown. Paste the text into the sidebar again.")
    dropped = st.session_state.pop(_LINK_RESET, None)
    if dropped:
        link_note("Some settings in the link were out of range, so this view uses the defaults for: "
                  + ", ".join(dropped) + ".")


def current_page() -> str:
    """The URL path of the page this run shows ("" for the home page)."""
    return st.session_state.get(_PAGE, "")


def start_part() -> None:
    """Called when a part of the page reruns alone (ui.page.part), where start_run is not: after a run that stopped
    early, the page's keys whose widgets it left undrawn get their values back, and the browser is told them again."""
    st.session_state[_RESEND] = bool(st.session_state.get(_STOPPED))
    keys = [*page_keys(), *st.session_state.get(_HELD, ())]
    _revive(keys)
    _resend(keys)


def stopped_early() -> None:
    """Called just before st.stop() (after it no state can be written): the next runs send their controls'
    values again, until one goes through to its end (one cut short by a rerun may not have drawn them)."""
    st.session_state[_STOPPED] = True


def run_completed() -> None:
    """Called by app.py after a page ran to its end: it drew every control it shows and bound every key it has."""
    st.session_state.pop(_STOPPED, None)
    st.session_state[_OPEN] = False
    st.session_state[_DONE_KEYS] = (st.session_state.get(_PAGE, ""), dict(st.session_state.get(_PAGE_KEYS, {})))


def _resend(keys) -> None:
    """After a run that ended with st.stop(), give each of `keys` its value again before its widget
    is drawn: Streamlit then sends the value to the browser, which had forgotten the control and
    would draw it at its default (and send that back on the next touch) while the figures use the value."""
    if not st.session_state.get(_RESEND):
        return
    for key in keys:
        if key in st.session_state:
            try:
                st.session_state[key] = st.session_state[key]
            except StreamlitAPIException:  # its widget is drawn already in this run: the browser has it
                pass


def hold(*keys: str) -> None:
    """Widget keys whose values persist like bind()'s but stay out of the URL (a picker's own keys, a
    page's secondary switches). Call before their widgets: a value Streamlit dropped while the widget
    was not drawn comes back, and after a run that stopped early the browser is told it again."""
    held = st.session_state.setdefault(_HELD, set())
    held.update(keys)
    _revive(keys)
    _resend(keys)


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


def bind(keys: dict[str, type], former: dict[str, str] | None = None, replacing: str | None = None) -> None:
    """A page's main settings (widget keys -> type) that go into the URL. Call before the widgets.
    former: {earlier URL name: key} for settings renamed since links were shared (old links keep working).
    replacing: a key prefix; the page's other settings with it leave the URL (a setting with one widget per
    value of another, bound again in a part of the page when that other value changes)."""
    _restore(keys, former)
    _revive(keys)
    _resend(keys)
    bound = st.session_state.setdefault(_PAGE_KEYS, {})
    if replacing:
        st.session_state.setdefault(_REPLACED, set()).add(replacing)
        for key in [k for k in bound if k.startswith(replacing) and k not in keys]:
            del bound[key]
    bound.update(keys)
    st.session_state.setdefault(_ALL_KEYS, {}).update(keys)


def page_keys() -> dict[str, type]:
    """The page's keys: those bound in this run, and while a run has not reached its end (cut short by a rerun, or
    stopped), those the same page's last whole run bound beneath them."""
    keys = dict(st.session_state.get(_PAGE_KEYS, {}))
    done_page, done_keys = st.session_state.get(_DONE_KEYS, ("", {}))
    if st.session_state.get(_OPEN) and done_page == st.session_state.get(_PAGE, ""):
        replaced = tuple(st.session_state.get(_REPLACED, ()))
        keys = {**{k: t for k, t in done_keys.items() if not (replaced and k.startswith(replaced))}, **keys}
    return keys


def current_params() -> dict[str, str]:
    keys = {**GLOBAL_KEYS, **page_keys()}
    out = {}
    for key in keys:
        value = st.session_state.get(key)
        if value is None or value == "":
            continue
        if key in ("text_pair",) and not st.session_state.get("use_pair"):
            continue
        if key in ("text", "text_pair") and len(str(value)) > MAX_TEXT_IN_URL:
            out[TEXT_LEFT_OUT] = "1"
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
    if early and _LAST_PAGE not in st.session_state:
        return  # the first run after a page load: the browser shows the address just opened, and a
        # write this early would come before HISTORY_JS is in the page (an extra history entry)
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
