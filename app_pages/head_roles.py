"""Head roles page: what kind of pattern each head follows, scored per head."""
import numpy as np
import pandas as pd
import streamlit as st

from attnviz.metrics.roles import ROLES, applicable_roles, strongest_role, top_heads
from attnviz.metrics.top_pairs import offset_counts, top_pairs
from attnviz.metrics.figures import head_grid, role_map
from attnviz.ui import metrics as aw
from attnviz.ui.choices import keep_choice
from attnviz.ui.heads import head_picker
from attnviz.ui.sidebar import require_result
from attnviz.ui import contrib as lens_ui
from attnviz.ui.share import bind
from attnviz.ui.present import page_intro
from attnviz.ui.page import stop as stop_page
from attnviz.units import count_text

page_intro("Head roles",
    "Clark et al. (2019) found that many BERT heads follow simple, recognisable patterns: looking at the "
    "previous or next token, at [CLS] or [SEP], at punctuation, or spreading out evenly. Each score below is "
    "a number between 0 and 1 per head; a head's **strongest role** is its highest score. Scores on one "
    "sentence are noisy, so by default they are **averaged over the example sentences** shipped with the app."
)

result = require_result(lens=True)
key = aw.model_key()
ablated = aw.ablated_heads()
n_examples = len(aw.examples())
PAIR_COUNTS = [10, 20, 50, 100]  # the strongest pairs listed for one head

bind({"hr_scope": str, "hr_min": float})
st.session_state.setdefault("hr_min", 0.4)
c1, c2 = st.columns([2, 1])
scopes = [f"the {n_examples} example sentences (averaged)", "the current sentence"]
trained = aw.using_trained()
if trained or st.session_state.get("hr_scope") not in scopes:
    st.session_state["hr_scope"] = scopes[1] if trained else scopes[0]
scope = c1.radio("Scores from", scopes, horizontal=True, key="hr_scope", disabled=trained,
                 help="The trained toy model has only its probe input." if trained else None)
min_score = c2.slider("Minimum score for a role", 0.0, 1.0, step=0.05, key="hr_min",
                      help="Heads whose best score is below this are shown grey: no clear role.")
if scope.startswith("the current"):
    lens_ui.note(result)  # only this map is seen through the sidebar's Show: the rest of the page reads weights
    scores = aw.analysis_of_sidebar(result=result).roles
    where = f"the current sentence ({count_text(result.seq_len)} tokens)"
else:
    scores = aw.corpus_role_scores(key, words=result.word_starts is not None)
    if result.quantity != "weights":
        st.caption("Averaged scores are computed from attention weights; choose the current sentence to score "
                   f"the {lens_ui.label(result)}.")
    if scores is None:
        stop_page()
    where = f"{scores.n_inputs} example sentences"

roles, left_out = applicable_roles(scores, causal=result.facts.causal)
scores = scores.only(roles)
labels = [ROLES[r][0] for r in roles]
best, best_score = strongest_role(scores, min_score)
summed = result.heads_summed and scope.startswith("the current")  # the corpus scores are the weights' own
fig = role_map(best, best_score, scores.scores, labels, ablated=ablated, summed=summed,
               title=f"Strongest role of each {'layer, heads summed' if summed else 'head'} · {where}")
st.caption("The number in each cell is the best score of the layer's heads summed. Hover for every score; click a "
           "cell to open that layer on the heatmap page." if summed else
           "The number in each cell is the head's best score. Hover for every score; click a cell to open "
           "that head on the heatmap page.")
aw.clickable_head_grid(fig, "hr_map")
if left_out:
    st.caption("Not shown: " + "; ".join(f"**{ROLES[r][0]}** ({why})" for r, why in left_out.items()) + ".")

if "cls" in roles and "first" in roles and result.tokens and result.tokens[0] in ("[CLS]", "<s>"):
    st.info(f"In this model every input starts with {result.tokens[0]}, so 'attends to [CLS]' and "
            "'first-token sink' measure the same column and give the same scores; the map shows it as "
            "'attends to [CLS]'.")
if result.facts.causal:
    st.info("This is a causal model: each token attends only to itself and the tokens before it. Causal models "
            "often dump attention on the first token (an 'attention sink').")

st.subheader("Top heads of each role")
cols = st.columns(4)
for i, role in enumerate(roles):
    tops = top_heads(scores, role, k=5)
    with cols[i % 4]:
        st.markdown(f"**{ROLES[role][0]}**")
        if not tops:
            st.caption("not defined for these inputs")
        else:
            st.markdown("\n".join(f"- layer {l}, head {h}: {v:.2f}" for l, h, v in tops))

st.subheader("Induction and duplicate-token heads")
st.markdown(
    "Some heads only show what they do on a special input. Take random words and repeat them: "
    "*w1 w2 … wn w1 w2 … wn*. In the second copy the next word can be predicted by finding where the current "
    "word appeared before and copying the word that followed it. An **induction head** (Olsson et al., 2022) "
    "does the finding: from a word in the second copy it attends to the word **after** that word's first "
    "occurrence. A **duplicate-token head** attends to the first occurrence itself. Random words leave no other "
    "clue, so high scores mean the pattern. Induction heads are a hallmark of causal language models (they "
    "appear suddenly during training and drive in-context copying); a sentence-embedding BERT like the default "
    "model has duplicate-token heads but hardly any induction heads.")
if trained:
    st.info("This needs a HuggingFace model (it reads new input): pick one in the sidebar.")
else:
    bind({"hr_words": int, "hr_seqs": int})
    st.session_state.setdefault("hr_words", 40)
    st.session_state.setdefault("hr_seqs", 3)
    i1, i2 = st.columns(2)
    n_words = i1.slider("Random words per copy", 8, 120, step=4, key="hr_words",
                        help="Each sequence is this many distinct words, then the same words again.")
    n_seqs = i2.slider("Random sequences averaged", 1, 8, key="hr_seqs",
                       help="Different random words each time; the scores are averaged.")
    ind = aw.induction_of_model(key, n_words, n_seqs)
    if ind is not None:
        g1, g2 = st.columns(2)
        for col, name, label in ((g1, "induction", "induction score"), (g2, "duplicate", "duplicate-token score")):
            with col:
                aw.clickable_head_grid(
                    head_grid(ind[name], title=f"{label.capitalize()} per head · {n_seqs} x {count_text(2 * n_words)} words",
                              colorbar=label.split()[0], zmin=0.0, zmax=1.0, colorscale="Viridis", fmt=".3f",
                              ablated=ablated), f"hr_{name}", text=ind["text"])
                flat = np.argsort(-ind[name].ravel(), kind="stable")[:3]
                n_h = ind[name].shape[1]
                st.markdown("Top: " + ", ".join(f"L{i // n_h} H{i % n_h} ({ind[name].ravel()[i]:.2f})" for i in flat))
        st.caption("Induction: mean weight from each word of the second copy to the word that followed its first "
                   "occurrence. Duplicate: mean weight on the first occurrence itself. 1 = all of the row's weight "
                   "there. Click a head to open it on the heatmap page **with the first random sequence as the "
                   "text** (the sidebar's text is replaced), where the pattern shows as a stripe parallel to the "
                   "diagonal.")

st.subheader("One head across the example sentences")
st.markdown(
    "A role score is an average. To see what a head does, read its **strongest pairs**: the largest "
    "query → key weights of that head over all the example sentences, each in its context (the query in "
    "«», the key in [[ ]]). Special tokens are left out by default: in BERT they would take most places.")
if trained:
    st.info("This reads the example sentences, so it needs a HuggingFace model: pick one in the sidebar.")
else:
    bind({"hr_pairs_layer": int, "hr_pairs_head": int, "hr_pairs_special": bool, "hr_pairs_self": bool,
          "hr_pairs_k": int})
    p_layer, p_head = head_picker(result.n_layers, result.n_heads, "hr_pairs", write_back=False)
    t1, t2, t3 = st.columns([1, 1, 1])
    st.session_state.setdefault("hr_pairs_special", True)
    skip_special = t1.toggle("Leave out special tokens", key="hr_pairs_special")
    skip_self = t2.toggle("Leave out a token attending to itself", key="hr_pairs_self")
    keep_choice("hr_pairs_k", PAIR_COUNTS, 20)
    k = t3.select_slider("Pairs", PAIR_COUNTS, key="hr_pairs_k")
    results = aw.corpus_results(key)
    pairs = top_pairs([(r.attention[p_layer, p_head], r.tokens, r.special_mask) for r in results], k,
                      skip_special=skip_special, skip_self=skip_self)
    if not pairs:
        st.info("No pairs left: include special tokens or self-attention.")
    else:
        offsets = offset_counts(pairs)
        top_offset, top_count = next(iter(offsets.items()))
        named = {-1: "the previous token", 0: "itself", 1: "the next token"}.get(top_offset,
                                                                                  f"{top_offset:+,d} positions away")
        st.markdown(f"Layer {p_layer}, head {p_head}: **{top_count} of {len(pairs)}** strongest pairs have the key at "
                    f"**{named}** (offset {top_offset:+d}).")
        st.dataframe(pd.DataFrame({
            "weight": [round(p.weight, 4) for p in pairs], "query": [p.query_token for p in pairs],
            "key": [p.key_token for p in pairs], "offset": [p.key - p.query for p in pairs],
            "in context": [p.context for p in pairs], "sentence": [p.sentence + 1 for p in pairs]}),
            hide_index=True, width="stretch")
        st.caption("offset = key position − query position; sentence = the sentence's place in the sidebar's "
                   "Example list (1 = the first). Word pieces keep their ## mark.")

st.subheader("Definitions")
st.markdown("\n".join(f"- **{ROLES[r][0]}**: {ROLES[r][1]}." for r in roles))
st.markdown("Scores are averaged over the query rows (padding left out); a role that needs tokens the "
            "input lacks (no punctuation, no [SEP]) is 'n/a' for that input and averaged over the others.")

with st.expander("All scores as a table"):
    table = aw.head_table({ROLES[r][0]: scores[r] for r in roles})
    table.insert(2, "strongest role", [labels[b] if b >= 0 else "—" for b in best.ravel()])
    st.dataframe(table, hide_index=True, width="stretch")
