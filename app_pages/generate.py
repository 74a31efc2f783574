"""Generate page: a causal LM continues the sidebar's text; for every token it wrote, what it attended to."""
import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.generate import figures as gf
from attnviz.generate.run import step_lens, token_labels
from attnviz.ui import generate as ug
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import clicked_head, head_picker
from attnviz.ui.metrics import sidebar_model
from attnviz.ui.page import stop as stop_page
from attnviz.ui.present import page_intro
from attnviz.ui.share import bind

page_intro("Generate",
    "A causal language model writes one token at a time: it reads everything so far, scores every token of its "
    "vocabulary as the next one, one is chosen, appended, and the model runs again on one new position, reusing "
    "the keys and values it cached for the earlier ones (the **KV cache**). Here the model continues the sidebar's "
    "text and every step is recorded: what the new token's query attended to in every layer and head, the "
    "candidates it weighed before and after **temperature**, **top-k** and **top-p**, and what each layer would "
    "have guessed (the logit lens). Click a written token to open its step.")

bind(ug.KEYS)
request, loaded = sidebar_model("Generation")
ug.require_causal(loaded)
try:
    from attnviz.extract import encode

    e = encode(loaded, request.text)
except AttnvizError as err:  # an empty or unusable prompt: a sentence, never a traceback
    st.warning(str(err))
    stop_page()
if e.truncation.truncated:
    t = e.truncation
    context = loaded.facts.max_positions
    st.info(f"The text is {t.n_tokens_requested:,} tokens long; the prompt is its first {t.max_tokens:,} (the last "
            f"{t.n_dropped:,} were dropped): " + ("the model's whole context." if context and context <= t.max_tokens
                                                 else "the most this page records every step's attention over."))
if request.pair:
    st.caption("The second sentence (B) is not used: the model continues one text.")
ids = [int(i) for i in e.ids]
encoder_decoder = loaded.facts.kind == "encoder-decoder"
if encoder_decoder:  # the encoder reads the prompt; the decoder writes from its start token, with its own positions
    room = (loaded.facts.max_positions or ug.MAX_NEW + 1) - 1
    st.caption(f"{loaded.facts.name} is an encoder-decoder: its encoder reads the sidebar's text once, and its "
               "decoder writes a new text from its start token, attending to what it wrote (self-attention) and to "
               "the prompt (cross-attention).")
else:
    room = (loaded.facts.max_positions or (len(ids) + ug.MAX_NEW)) - len(ids)
st.subheader("Settings")
sampling = ug.settings(room)
g = ug.run_panel(request, loaded, ids, sampling)
if g is None or not g.steps:
    stop_page()

labels = token_labels(loaded, g.ids)
ended = {"eos": "it wrote its end-of-sequence token", "cancelled": "you cancelled it; the tokens written are kept",
         "length": "it reached the number of new tokens asked for"}[g.stopped]
n_layers, n_heads = g.shape
c_layers, c_kv, c_dim = ug.cache_dims(g)
st.success(f"Wrote **{len(g.steps):,} tokens** in {g.seconds:.1f} s ({ended}). The "
           + ("decoder's " if encoder_decoder else "") + f"KV cache holds {g.cache_bytes:,} bytes, as measured: 2 "
           f"(keys and values) × {c_layers} layers × {c_kv} key/value heads × {c_dim} dimensions × "
           f"{len(g.ids) - 1:,} positions × 4 bytes (float32).", icon=":material/check:")

st.subheader("The text, step by step")
step = ug.step_chooser(g, labels)
s = g.steps[step]
written = labels[g.n_prompt + step]
layer, head = head_picker(n_layers, n_heads, "gen")
scope = st.segmented_control("Attention shown", ug.SCOPES, key=ug.SCOPE,
                             help="One head, the mean of the chosen layer's heads, or the mean over every layer and head.") \
    or ug.SCOPES[0]
w, what = ug.shown_weights(loaded, g, step, layer, head, scope)
where = {"This head": f"layer {layer}, head {head}", "Layer mean": f"mean of layer {layer}'s heads",
         "All layers": "mean of every layer and head"}[scope]
st.markdown(f"**Step {step}** wrote **{written}** (probability {s.chosen_before:.3f} from the model"
            + ("" if g.sampling.is_greedy else f", {s.chosen_after:.3f} after sampling's changes") + "). "
            f"Its query was the token at position {s.query} (**{labels[s.query]}**); the text below is shaded by what "
            f"it attended to ({where}). Hover a token for its value.")
ug.shaded(labels[: s.query + 1], w, s.query, what)
if encoder_decoder:
    source = token_labels(loaded, g.source_ids)
    cw = ug.scope_weights(g, step, layer, head, scope, cross=True)
    st.markdown(f"**What it read in the prompt** (cross-attention, {where}): the decoder's query at step {step} "
                "over the encoder's positions. Hover a token for its weight.")
    ug.shaded(source, cw, None)

left, right = st.columns(2)
with left:
    top = [int(i) for i in s.top_ids]
    cand = token_labels(loaded, top)
    drawn = top.index(s.token_id) if s.token_id in top else None
    show_figure(gf.candidates_figure(cand, s.p_before, s.p_after, drawn, f"Candidates at step {step}"),
                key="gen_candidates")
    st.caption("Grey: the model's probabilities (softmax of its logits). Blue: after temperature, top-k and top-p, "
               "renormalised: the distribution the token was drawn from (red: the token written)."
               + (" Greedy decoding puts all of it on the most likely token." if g.sampling.is_greedy else ""))
with right:
    if encoder_decoder:
        show_figure(gf.step_grid_figure(s.cross, source, None, f"Step {step}: every head's cross-attention"),
                    key="gen_cross_grid")
        st.caption("One line per decoder head (grouped by layer), one column per prompt token: where each head of "
                   "the decoder looked in the prompt to write this token. The logit lens reads causal language "
                   "models' layers; it is not drawn for an encoder-decoder.")
    else:
        lens_labels, lens_probs = step_lens(loaded, s, k=5)
        show_figure(gf.lens_figure(lens_labels, lens_probs, written, f"Logit lens of step {step}"), key="gen_lens")
        st.caption("Each row reads the query position's residual stream after the embeddings (0) and after each "
                   "block through the final norm and the unembedding: the guess forming layer by layer. The top row "
                   "is the model's own output.")

grid = gf.step_grid_figure(g.row(step), labels, s.query, f"Step {step}: every head's attention")
show_figure(grid, key="gen_grid", in_place=True)
st.caption("One line per head (grouped by layer, layer 0 at the top), one column per earlier position: the row of "
           "this step's query in every head at once" + (" (the decoder's self-attention)." if encoder_decoder else "."))

st.subheader("Over all steps")
show_figure(gf.head_map_figure(g.head_map(layer, head), labels, g.n_prompt,
                               f"Layer {layer}, head {head}: the map as it was written"), key="gen_map",
            in_place=True)
st.caption("Row s is the step that wrote token s; its cells are that step's weights over every earlier position. "
           "Stacked, the rows are the head's causal attention map, each row computed when its token was written.")
sink = g.sink_mass()[:, layer].mean(-1)
dist = g.mean_distance()[:, layer].mean(-1)
show_figure(gf.per_step_figure(sink, dist, labels[g.n_prompt:], f"Layer {layer}, mean over its heads"), key="gen_steps")
st.caption("Sink mass: the weight on the first token, where many causal models park attention they do not need. "
           "Mean distance: how far back the query looks on average, in tokens.")
scores, used = g.copying_scores()
if used:
    fig = gf.layer_head_figure(scores, f"Heads that copy ({used} steps whose token occurred before)",
                               "weight on the token after the earlier copy", selected=(layer, head))
    show_figure(fig, key="gen_copy", on_select="rerun", selection_mode="points")
    hit = clicked_head("gen_copy")
    if hit is not None:
        st.session_state["gen_layer"], st.session_state["gen_head"] = hit
        st.rerun()
    best = np.unravel_index(int(np.argmax(scores)), scores.shape)
    st.caption(f"When the token being read occurred earlier, an induction head attends to the token that followed "
               f"that earlier copy (… A B … A → B) and helps write it again. Strongest here: layer {best[0]}, head "
               f"{best[1]} ({scores[best]:.2f} of its attention on average). Click a head to follow it above.")
else:
    st.caption("No token the model read occurred earlier in the text, so no head can be seen copying: generate "
               "longer, or use a prompt that repeats itself.")

st.subheader("Export")
ug.exports(g, labels, layer, head)
