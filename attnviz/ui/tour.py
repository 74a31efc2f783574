"""Guided tours of the Learn pages: one control or figure at a time, outlined on the page, with one or
two sentences. A tour step names a widget or figure by its Streamlit key (Streamlit gives each keyed
element the CSS class st-key-<key>), so the outline follows the element wherever the layout puts it."""
from __future__ import annotations

import json

import streamlit as st

# page name -> [(element key, what to do and what to see)]
TOURS: dict[str, list[tuple[str, str]]] = {
    "lab_steps": [
        ("steps_fig_scores", "Each score is one query's dot product with one key: a row per query, a column per key."),
        ("steps_scale", "Switch **Divide by √d_k** off: the scores grow and the softmax gets sharper."),
        ("steps_fig_weights", "The softmax turns each row of scores into weights that sum to 1."),
        ("steps_row", "Pick a row to follow one query through the whole computation."),
        ("steps_fig_output", "The output row is the weighted average of the value rows, with those weights."),
    ],
    "lab_scaling": [
        ("scaling_dk", "Raise d_k: unscaled dot products spread out like √d_k."),
        ("scaling_fig_max", "Without the division the largest weight goes to 1: the softmax saturates."),
        ("scaling_fig_grad", "A saturated softmax has almost no gradient; dividing by √d_k keeps it learning."),
    ],
    "lab_temperature": [
        ("temp_T", "Move the temperature to 0.1: each row becomes one-hot, a hard lookup."),
        ("temp_fig_weights", "Each row is softmax(scores / T): high T averages, low T picks one key."),
        ("temp_fig_curve", "One query across temperatures: from uniform weights to a single key."),
    ],
    "lab_masks": [
        ("masks_kind", "Switch between a causal mask (no looking ahead) and a padding mask (no looking at pads)."),
        ("masks_fig_mask", "Blocked cells get −∞ before the softmax, so their weight is exactly 0."),
        ("masks_fig_leak", "Forget the mask and weight leaks to future or padding tokens."),
    ],
    "lab_multihead": [
        ("mh_heads", "Change the number of heads: each head works in d_model / h dimensions."),
        ("mh_fig_split", "The projections are cut into slices, one per head; each head attends on its own."),
        ("mh_fig_concat", "The heads' outputs are put side by side again and mixed by W_O."),
    ],
    "lab_variants": [
        ("var_da", "d_a is the width of Bahdanau's additive scorer; Luong's dot product has no parameters at all."),
        ("var_seed", "A new seed draws new (untrained) weights: the mechanics stay, the alignments change."),
    ],
    "lab_kv_cache": [
        ("kv_step", "Step through generation: each new token adds one key and one value per layer and KV head."),
        ("kv_preset", "Pick a real model: the cache is 2 × layers × KV heads × d_head × tokens × bytes."),
    ],
    "lab_quiz": [
        ("quiz_dmodel", "Try d_model = 256 with 6 heads: 256 does not split evenly, so the model cannot be built."),
        ("quiz_heads", "Change the heads until they divide d_model: every head gets the same width."),
    ],
    "lab_explanation": [
        ("nx_w", "Each cell: the share of a head's weight that lands on the special token."),
        ("nx_v", "The same heads once each weight is multiplied by the length of the value it moves: the stripe fades."),
        ("nx_mix", "With the residual connection, most of each token stays itself."),
    ],
    "positional": [
        ("pe_tab", "Each tab is one way of giving attention word order; this tour stays on **Sinusoidal**."),
        ("pe_sin_table", "Row *pos* is the vector added to the token at that position: fast waves on the left, slow on the right."),
        ("pe_dims", "Draw a few dimensions as waves: dimension 0 turns once per ~6 positions, the last barely moves."),
        ("pe_base", "Raise the base: every wave slows down and far positions look more alike."),
        ("pe_sin_offset", "Similarity of two positions depends only on their distance k, not on where they are."),
    ],
    "complexity": [
        ("cx_preset", "Pick a real model: its sizes fill the boxes below (the sidebar's model loads only if you pick it)."),
        ("cx_n", "Type 4096, then 100k: one head's n × n matrix grows with n², the KV cache only with n."),
        ("cx_kv", "Fewer KV heads (grouped-query attention) shrink the KV cache, not the score matrices."),
        ("cx_headline", "Five numbers at the chosen n; the tabs below break them down and measure them on this machine."),
    ],
    "training": [
        ("tr_source", "Watch a toy task trained here, the packaged BERT fine-tuned, or saved checkpoints."),
        ("tr_train", "Press **Train now** to train live on the CPU, or look at the recorded run below first."),
        ("tr_frame", "Drag the slider through training: early on the cross-attention is a blur."),
        ("tr_heat", "Later it snaps onto the anti-diagonal: output i must read input n−1−i to reverse the sequence."),
        ("tr_entropy", "Entropy falls as a head becomes selective; a flat line is a head that stopped changing."),
    ],
    "deck": [
        ("deck_shipped", "Pick the deck shipped with the app, *Attention in 50 minutes*, or open a deck file you saved."),
        ("deck_open_shipped", "Open it: its slides appear below, where you edit titles and speaker notes and reorder."),
        ("deck_upload", "A deck is a small JSON file: save yours after editing, open it here next time. "
                        "Then **Prepare deck** computes every slide once and **Start presenting** opens slide 1."),
    ],
}

HIGHLIGHT = ("outline: 3px solid #e45756; outline-offset: 4px; border-radius: 6px; "
             "box-shadow: 0 0 0 9999px rgba(255, 255, 255, 0.0);")
# The step box floats at the bottom right of the window, over the page, wherever the page is scrolled;
# the page gets room below its last element so that nothing stays hidden under the box.
BOX = ("position: fixed; bottom: 1rem; right: 1.5rem; width: min(46rem, calc(100vw - 3rem)); z-index: 999990; "
       "background: white; box-shadow: 0 4px 18px rgba(0, 0, 0, 0.18); border-radius: 0.5rem;")
# Brings the outlined element into the part of the window the header and the step box leave free,
# once per move through the tour (not on the page's other reruns): it waits for the run to end and the
# element to stop changing size, then scrolls the page only if the element is not in view already.
SCROLL_JS = """<script>
(() => {
  const token = %(token)s, key = %(key)s, boxKey = %(box)s;
  if (window.__attnvizTourAt === token) return;
  window.__attnvizTourAt = token;
  const started = Date.now();
  let lastHeight = -1;
  const tick = () => {
    if (window.__attnvizTourAt !== token || Date.now() - started > 20000) return;
    const app = document.querySelector('[data-testid="stApp"]');
    const el = document.querySelector('.st-key-' + key);
    const r = el && el.getBoundingClientRect();
    const running = app && app.getAttribute('data-test-script-state') === 'running';
    if (!r || r.height === 0 || running || r.height !== lastHeight) {
      lastHeight = r ? r.height : -1;
      setTimeout(tick, 150);
      return;
    }
    const header = document.querySelector('[data-testid="stHeader"]');
    const box = document.querySelector('.st-key-' + boxKey);
    const top = (header ? header.getBoundingClientRect().bottom : 0) + 12;
    const bottom = (box ? box.getBoundingClientRect().top : window.innerHeight) - 12;
    if (r.top >= top && r.bottom <= bottom) return;
    const dy = r.height <= bottom - top ? (r.top + r.bottom - top - bottom) / 2 : r.top - top;
    const scroller = el.closest('[data-testid="stMain"]') || document.scrollingElement;
    scroller.scrollBy({top: dy, behavior: 'smooth'});
  };
  tick();
})();
</script>"""


def _moved(page: str) -> None:
    """Counts the moves through a page's tour (turning it on, Back, Next): each one scrolls once."""
    key = f"tour_moves_{page}"
    st.session_state[key] = st.session_state.get(key, 0) + 1


def _step(page: str, delta: int) -> None:
    key = f"tour_step_{page}"
    st.session_state[key] = max(0, min(len(TOURS[page]) - 1, st.session_state.get(key, 0) + delta))
    _moved(page)


def tour(page: str) -> None:
    """The page's tour: a toggle, then (when on) the current step in a box that floats at the bottom of
    the window, Back / Next, and the step's element outlined and scrolled into view."""
    if TOURS.get(page):
        _tour(page)


@st.fragment
def _tour(page: str) -> None:
    """The tour's toggle, box and outline rerun alone: a move through the tour changes nothing else on the page,
    so the page's figures are neither computed nor sent again."""
    steps = TOURS[page]
    on = st.toggle("Guided tour", key=f"tour_on_{page}", on_change=_moved, args=(page,),
                   help="One control or figure at a time, outlined in red, with what to do and what to see.")
    if not on:
        return
    i = max(0, min(len(steps) - 1, int(st.session_state.get(f"tour_step_{page}", 0))))
    element, text = steps[i]
    with st.container(key=f"tour_box_{page}", border=True):
        left, back, nxt = st.columns([8, 1.2, 1.2], vertical_alignment="center")
        left.markdown(f"**Tour · step {i + 1} of {len(steps)}** · {text}")
        back.button("Back", key=f"tour_back_{page}", on_click=_step, args=(page, -1), disabled=i == 0)
        nxt.button("Next", key=f"tour_next_{page}", on_click=_step, args=(page, 1), disabled=i == len(steps) - 1)
        with st.container(key=f"tour_scroll_{page}"):
            token = f"{page}:{i}:{st.session_state.get(f'tour_moves_{page}', 0)}"
            st.html(SCROLL_JS % {"token": json.dumps(token), "key": json.dumps(element),
                                 "box": json.dumps(f"tour_box_{page}")}, unsafe_allow_javascript=True)
    st.html(f"<style>.st-key-{element} {{ {HIGHLIGHT} }} .st-key-tour_box_{page} {{ {BOX} }} "
            f".st-key-tour_scroll_{page}, [data-testid='stLayoutWrapper']:has(> .st-key-tour_scroll_{page}) "
            f"{{ display: none; }} "
            f'[data-testid="stMainBlockContainer"] {{ padding-bottom: 12rem; }}</style>')
