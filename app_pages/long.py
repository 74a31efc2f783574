"""Long inputs page: thousands of tokens on a real LLM, maps on demand, the pooled grid, attention sinks."""
import streamlit as st

from attnviz.types import Request
from attnviz.ui.heads import head_picker
from attnviz.ui.long import inputs, recording, sinks, views
from attnviz.ui.page import lazy_tabs, part, stop
from attnviz.ui.present import page_intro
from attnviz.ui.share import bind

page_intro("Long inputs",
    "The other pages keep every head's full map: layers × heads × n × n weights, 72 GB for SmolLM2 at 8,192 "
    "tokens. Here one forward pass with an efficient attention kernel records only each layer's **queries and "
    "keys** (after RoPE; the keys once per key/value head). Any head's map, or any block of it, is rebuilt "
    "**exactly** from them when you look at it, with the model's own scaling and mask; summaries (the pooled "
    "grid, distances, sink mass) are computed block by block during the pass. A model whose queries and keys "
    "cannot be recorded is shown from its dense weights, up to 512 tokens, in the same views.")

bind(inputs.KEYS)
key, loaded = inputs.model()
inputs.context_note(loaded)

st.subheader("Text and length")
text = inputs.text_source()
if text is None:
    stop()
picked = inputs.length_picker(loaded, text)
if picked is None:
    stop()
limit, n = picked
request = Request(key, text, None, limit)
rec = recording.record_panel(request, loaded, n)
if rec is None:
    stop()
recording.summary_line(rec)

st.subheader("Every head, pooled")
c1, c2 = st.columns([1, 3])
how = c1.radio("Pool each tile by", ["mean", "max"], key="lg_how", horizontal=True,
               help="mean: the average weight of the tile (what the head does on average there); max: its "
                    "strongest single weight (a sharp pattern stays visible in a large tile).")
c2.caption("A recording at thousands of tokens cannot send every weight to the browser: each head's map is cut "
           "into tiles, and each tile shows one number. Heads sharing a key/value head stand together, with a wider "
           "gap between groups.")
layer_head = (st.session_state.get("lg_layer"), st.session_state.get("lg_head"))
views.grid(rec, how, layer_head if None not in layer_head else None)

st.subheader("One head: overview and exact zoom")
layer, head = head_picker(rec.la.n_layers, rec.la.n_heads, "lg")


@part
def one_head(layer: int, head: int, how: str) -> None:
    """The head's overview and zoom: a move of the zoom window reruns them alone."""
    views.head_view(rec, layer, head, how)


one_head(layer, head, how)


def focus_view() -> None:
    st.markdown("One query's attention over the **whole** document, exact: its row of the map is recomputed "
                "from the recorded query and keys (one row costs a few milliseconds even at 8,192 tokens).")
    views.token_focus(rec, layer, head)


def lines_view() -> None:
    st.markdown("A dense map of thousands of queries is unreadable; its **heaviest few keys per query** are "
                "not. For a range of queries, each row keeps its top k keys (computed exactly, row block by block).")
    views.top_k_view(rec, layer, head)


def distance_view() -> None:
    st.markdown("How much weight goes how far back: the **attention-vs-distance profile** of each head of the "
                "chosen layer (left) and of each layer averaged over its heads (right), summed block by block "
                "during the recording pass.")
    views.profiles(rec, layer)


def sinks_view() -> None:
    st.markdown("**Attention sinks.** Many heads of causal LLMs put a large share of their weight on the "
                "first token, whatever it is. Softmax must give its weight to *some* key, and a head with "
                "nothing useful to read parks it there: the first token is seen by every query, so it becomes a "
                "cheap place to dump weight (Xiao et al., 2023, *Efficient Streaming Language Models with "
                "Attention Sinks*).")
    views.sink_mass(rec)
    st.markdown("**Local and global layers.** Some models (Mistral, Gemma, gpt-oss) let some layers see only a "
                "sliding window of recent keys; their config says which.")
    views.window_pattern(rec)


lazy_tabs(inputs.TABS, inputs.TAB, (focus_view, lines_view, distance_view, sinks_view))

st.subheader("Attention sinks, live")
st.markdown("StreamingLLM's experiment on the loaded model: read the text with a KV cache of fixed size. A "
            "**window-only** cache evicts the oldest tokens, the first ones included, and the loss jumps once "
            "the window is full: the heads that parked their weight on the first tokens lose their sink and "
            "spread it over the wrong keys. Keeping just the **first 4 tokens** beside the window (same cache "
            "size) brings the loss back near the full cache's. Slow: three passes over the text, with progress.")
sinks.sinks_live(request, loaded, n, rec)
