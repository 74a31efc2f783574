"""Which heads cause it: activation patching, attribution patching, direct logit attribution, the score split of
one head and pruning curves on clean/corrupted prompt pairs of a causal language model (an encoder: sentence
similarity, patched and pruned)."""
import streamlit as st

from attnviz.causal import figures as cf
from attnviz.causal.circuits import N_LOW
from attnviz.causal.scores import split_score
from attnviz.causal.study import preview
from attnviz.causal.writes import head_writes
from attnviz.errors import AttnvizError
from attnviz.ui import causal as uc
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import head_picker, token_picker
from attnviz.ui.metrics import open_head, sidebar_model
from attnviz.ui.page import stop as stop_page
from attnviz.ui.present import page_intro
from attnviz.ui.share import bind

page_intro("Which heads cause it",
    "Attention maps show where a head looks, not whether the answer depends on it. Here the model reads two "
    "prompts that differ in one clue: a **clean** one it answers right (\"When Mary and John went to the store, "
    "John gave a drink to\" → Mary) and a **corrupted** twin with the clue removed (John replaced by Anna). The "
    "score is the logit difference answer − wrong answer, scaled so the corrupted run scores 0 and the clean run 1. "
    "**Activation patching** runs the corrupted prompt with one head's output taken from the clean run: a head "
    "that brings the score back towards 1 carries the clue. The sidebar's text is not used: each task brings its "
    "own prompts. An encoder such as MiniLM gets the sentence-similarity task: the score is then the cosine "
    "similarity of the sentence embedding to a reference sentence.")

bind(uc.KEYS)
request, loaded = sidebar_model("Causal analysis")
uc.require_model(loaded)
task = uc.task_controls(loaded)
rid = uc.run_id(request, task)
st.subheader("What the model predicts")
try:
    uc.predictions(loaded, uc.cached("preview", rid, (), lambda: preview(loaded, task)))
except AttnvizError as e:  # e.g. both runs give the same logit difference: nothing to patch
    st.warning(str(e))
    stop_page()
s = uc.run_panel(request, task)
if s is None:
    stop_page()

uc.take_click("ca_heads")
uc.take_click("ca_estimate")
uc.take_click("ca_dla")
pair = task.pairs[0]
n_layers, n_heads = s.heads.shape
st.subheader("The head chosen")
c = st.columns([1, 1, 2], vertical_alignment="bottom")
layer, head = head_picker(n_layers, n_heads, "ca", columns=c[:2])
if c[2].button("Open this head on the heatmap", key="ca_open", icon=":material/grid_on:",
               help="The Attention heatmap page on the first clean prompt, at this layer and head."):
    open_head(layer, head, uc.prompt_text(loaded, pair.clean))
direct = "" if s.dla_heads is None else f", direct logit attribution {s.dla_heads[layer, head]:+.3f}"
st.caption(f"Layer {layer}, head {head}: exact patching {s.heads[layer, head]:.3f}, attribution estimate "
           f"{s.heads_estimate[layer, head]:.3f}{direct}. Click a cell of any layer × head map to choose another "
           "head.")
# what reads logits through the unembedding or splits pre-norm scores: not for an encoder's similarity score
NEEDS_DECODER = (f"{loaded.facts.name} is an encoder scored by sentence similarity: it has no unembedding to read "
                 "logits through, and its norms come after each block, so {what} is not defined for it. Switch to a "
                 "causal language model such as SmolLM2 in the sidebar for it.")

# only the open tab runs: the circuits of a head cost seconds on SmolLM2; the open tab goes into the link
if st.session_state.get(uc.TAB) not in uc.TABS:
    st.session_state[uc.TAB] = uc.TABS[0]
patch, dla, why, prune = st.tabs(uc.TABS, key=uc.TAB, on_change="rerun")
if patch.open:
    with patch:
        left, right = st.columns(2)
        uc.head_map(left, s.heads, "Exact patching of each head", "metric", (layer, head), key="ca_heads")
        uc.head_map(right, s.heads_estimate, "Attribution patching (estimate)", "estimate", (layer, head),
                    key="ca_estimate")
        st.caption("Left: the corrupted run with one head's output (every position) from the clean run, one forward "
                   "per head; blue heads restore the clean score, red ones push against it. Right: attribution "
                   "patching's first-order estimate of the same, (clean − corrupted activation) × gradient, for every "
                   f"head from one backward pass. Both pooled over {len(task.pairs)} pair(s).")
        fig_col, text_col = st.columns([3, 2])
        with fig_col:
            show_figure(cf.estimate_scatter(s.heads, s.heads_estimate, s.correlation), key="ca_scatter")
        text_col.caption("Each dot is a head. On the dotted diagonal the estimate equals the exact effect. The "
                         "estimate is exact where the model is linear in that activation; attention's softmax and the "
                         "norms bend it, most for heads with large effects, which it tends to understate. Pearson r "
                         "summarises how well it ranks the heads.")
        show_figure(cf.residual_map(s.residual, pair.clean_tokens, "Residual stream patching (first pair)"),
                    key="ca_residual")
        moved = ("The sentence embedding averages every position, so the clue need not move: blue cells at other "
                 "positions in later rows show where attention has copied it." if pair.similarity else
                 "Where the blue cells move to the last position, the clue has been moved there by attention.")
        st.caption("Row i: the residual stream entering block i, taken from the clean run at one position. Early on "
                   f"only the position where the prompts differ matters. {moved}")
        show_figure(cf.layer_bars({"exact": s.mlps, "estimate": s.mlps_estimate}, "Patching each MLP",
                                  "metric (0 = corrupted, 1 = clean)"), key="ca_mlps")
        st.caption("The same score with one block's MLP output (every position) from the clean run.")
        uc.head_in_parts(loaded, task, rid, layer, head)

if dla.open:
    with dla:
        if s.dla_heads is None:
            st.info(NEEDS_DECODER.format(what="direct logit attribution"))
        else:
            left, right = st.columns([3, 2])
            uc.head_map(left, s.dla_heads, "Direct logit attribution per head", "logit diff", (layer, head),
                        key="ca_dla")
            right.caption("How much of the clean prompts' logit difference each head writes directly into the last "
                          "position's residual stream, read through the final norm (its scale frozen) and the "
                          "unembedding, averaged over the pairs. With the embeddings, the MLPs and the biases the parts "
                          "add up to the model's own logit difference. A head can matter by patching yet write little "
                          "directly: it then works through later heads.")
            right.metric("Heads + MLPs, mean over pairs", f"{s.dla_heads.sum() + s.dla_mlps.sum():.3f}",
                         help="The rest of the clean logit difference comes from the embeddings and the biases.")
            show_figure(cf.layer_bars({"direct logit attribution": s.dla_mlps}, "Direct logit attribution per MLP",
                                      "logit difference"), key="ca_dla_mlps")
            uc.head_by_source(loaded, pair, rid, layer, head)

if why.open:
    with why:
        if pair.similarity:
            st.info(NEEDS_DECODER.format(what="the split of a head's score, what it writes and its OV and QK circuits"))
        else:
            word = loaded.tokenizer.decode
            query = token_picker(pair.clean_tokens, uc.QUERY, "Query position", default=pair.n - 1,
                                 help="The position whose attention is split; the last one predicts the answer.")
            key = token_picker(pair.clean_tokens, uc.KEY, "Key position", default=uc.default_key(pair, query),
                               positions=range(query + 1), help="A position at or before the query.")
            try:
                split = uc.cached("split", rid, (layer, head, query, key),
                                  lambda: split_score(loaded, pair.clean, layer, head, query, key))
                writes = uc.cached("writes", rid, (layer, head),
                                   lambda: head_writes(loaded, pair.clean, layer, head, k=8))
            except AttnvizError as e:
                st.warning(str(e))
            else:
                left, right = st.columns(2)
                with left:
                    title = f"L{layer} H{head}: {pair.clean_tokens[query]!r} → {pair.clean_tokens[key]!r}"
                    show_figure(cf.split_pairs(split.terms, split.labels, split.score, title), key="ca_split")
                    st.caption("The head's pre-softmax score from the query to the key, q · k × scaling, split into "
                               "pairs of parts of the two residual streams (embeddings, each earlier block's attention "
                               "and MLP output, biases), each read through the block's norm with its scale frozen; all "
                               "pairs add up to the score. The largest pairs say which earlier parts make this head look "
                               "there.")
                with right:
                    show_figure(cf.writes_bars([(word([i]), v) for i, v in writes.promoted],
                                               [(word([i]), v) for i, v in writes.suppressed],
                                               f"What L{layer} H{head} writes at the last position"), key="ca_writes")
                    st.caption("The head's output at the last position of the first clean prompt, read through the "
                               "final norm and the unembedding: the tokens whose logits it raises most (blue) and lowers "
                               f"most (red). The answer {word([pair.answer])!r} changes by "
                               f"{writes.logits[pair.answer]:+.3f}, the wrong answer {word([pair.wrong])!r} by "
                               f"{writes.logits[pair.wrong]:+.3f}.")
            try:
                ov, qk, n_candidates, vocab = uc.circuits(loaded, rid, task.pairs, layer, head)
            except AttnvizError as e:
                st.warning(str(e))
            else:
                ov_says = ("What the head writes when it attends to a token: each source token's embedding through "
                           "the block's norm, the head's value and output projections, the final norm (its scale frozen "
                           "at the first clean prompt's last position) and the unembedding; the largest logit changes "
                           f"over the whole vocabulary of {vocab:,} tokens. A head that copies shows pairs of the same "
                           "token.")
                qk_says = ("Where the head looks from a token: the pre-softmax score between a query token and a key "
                           "token, both embeddings through the block's norm and the head's query and key projections "
                           "(its shared key/value head under grouped-query attention). No positions: rotary positions "
                           "at relative distance 0, where the rotation cancels. Biases are left out of both circuits.")
                for col, circuit, name, chart, xtitle, what, says in zip(
                        st.columns(2), (ov, qk), ("OV", "QK"), ("ca_ov", "ca_qk"),
                        ("direct logit change", "score q · k × scaling"),
                        ("source → promoted token", "query token → key token"), (ov_says, qk_says)):
                    with col:
                        show_figure(cf.circuit_bars([(word([a]), word([b])) for a, b in circuit.pairs], circuit.values,
                                                    f"{name} circuit of L{layer} H{head}: {what}", xtitle, what),
                                    key=chart)
                        st.caption(says)
                st.caption(f"Both circuits range over {n_candidates:,} candidate tokens: every token of the task's "
                           f"prompts and answers (clean and corrupted) and the {N_LOW:,} lowest token ids, since the "
                           "vocabulary is too large for every pair.")

if prune.open:
    with prune:
        st.caption("Remove heads one after another and watch the score on the clean prompts. In patching order the "
                   "heads that matter least go first, so the curve should hold near 1 longest; a random order and the "
                   "broadest-attention-first order (high entropy) are the baselines. The score is scaled as above.")
        curves = uc.pruning_panel(request, s)
        if curves is not None:
            show_figure(cf.pruning_figure(curves.counts, curves.metric, n_layers * n_heads, curves.mode),
                        key="ca_pruning")
