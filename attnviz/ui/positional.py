"""Streamlit widgets of the Positional page: one function per tab, plus its display helpers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from attnviz import positional as pe
from attnviz.errors import AttnvizError, BadInput
from attnviz.positional import figures as plots
from attnviz.ui import choices
from attnviz.ui.numbers import number_box
from attnviz.units import count_text

SMALL_SIDE = 128  # cells per side of the sinusoidal companions in the Learned tab (keeps it under ~1 MB)
SCHEME_LABELS = {"none": "no positions", "sinusoidal": "sinusoidal PE added", "rope": "RoPE on q and k"}


def show(fig, key: str) -> None:
    """Render a plotly figure full width with a stable key (app-wide exports, presentation sizing)."""
    from attnviz.ui.figure import show_figure

    show_figure(fig, key=key)


def explain(markdown: str) -> None:
    """An explanation beside a view: a few sentences in a bordered box."""
    with st.container(border=True):
        st.markdown(markdown.strip())


# ---------------------------------------------------------------- Sinusoidal
def sinusoidal_tab() -> None:
    c1, c2, c3 = st.columns(3)
    max_len = number_box(c1, "Maximum length (positions)", 1, pe.MAX_LENGTH, key="pe_maxlen")
    d_model = number_box(c2, "d_model", 2, pe.MAX_DIM, step=2, key="pe_dmodel",
                         help="Must be even: the dimensions come in (sin, cos) pairs.")
    base = number_box(c3, "Base", 2.0, 1e7, step=1000.0, format="%.0f", key="pe_base",
                      help="10000 in the original Transformer. A larger base gives slower waves.")
    try:
        with st.spinner("Building the table…"):
            table = pe.sinusoidal(int(max_len), int(d_model), float(base))
    except BadInput as e:
        st.warning(str(e))
        return
    d_model, max_len = int(d_model), int(max_len)
    left, right = st.columns([3, 2])
    with left:
        show(plots.sinusoidal_table(table), "pe_sin_table")
        if max(table.shape) > plots.MAX_CELLS_SIDE:
            st.caption(f"Shown as block means to keep the figure small ({plots.MAX_CELLS_SIDE} cells per side at most); "
                       "fast waves in the first dimensions blur at this scale.")
    with right:
        explain(f"""
Row *pos* is the vector added to the token at position *pos*. Column pair (2i, 2i+1) holds
sin and cos of *pos · w_i* with **w_i = {base:g}^(-2i/{d_model})**: the first pairs turn fast
(w_0 = 1 radian per position), the last ones so slowly that they barely change over
{count_text(max_len)} positions. Together they give every position a distinct pattern, like the hands of
a clock running at many speeds.""")
        default = [d for d in (0, 1, 10, d_model // 2) if d < d_model]
        dims = st.multiselect("Dimensions to draw as waves", list(range(d_model)), default=sorted(set(default)),
                              key="pe_dims", max_selections=6)
    if dims:
        show(plots.sinusoidal_waves(table, dims, pe.sinusoidal_frequencies(d_model, base)), "pe_sin_waves")
    _offset_similarity(table)
    _shift_map(table, base)


def _offset_similarity(table: np.ndarray) -> None:
    st.subheader("Similarity depends on the offset alone")
    idx, stride = pe.sample_positions(table.shape[0])
    sim = pe.cosine_similarity(table[idx])
    means, spreads = pe.offset_profile(sim)
    left, right = st.columns(2)
    with left:
        axis = "position index" + (f" (every {stride}th)" if stride > 1 else "")
        show(plots.similarity_heatmap(sim, title="Cosine similarity of positions", axis_title=axis), "pe_sin_sim")
    with right:
        show(plots.offset_lines(idx - idx[0], {"mean cosine at this offset": means}, title="Similarity against offset",
                                y_title="cosine", height=300), "pe_sin_offset")
        explain(f"""
Every diagonal of the matrix is constant: PE(p)·PE(p + k) = Σ_i cos(k · w_i) does not involve p.
Measured: the largest difference between two pairs with the same offset is
**{spreads.max():.1e}** (rounding only).""")


def _shift_map(table: np.ndarray, base: float) -> None:
    max_len, d_model = table.shape
    st.subheader("PE(pos + k) is a fixed linear map of PE(pos)")
    c1, c2 = st.columns(2)
    k = number_box(c1, "Offset k", 0, max(0, max_len - 1), min(5, max_len - 1), key="pe_shift")
    pos = number_box(c2, "Position pos", 0, max(0, max_len - 1 - int(k)), min(10, max(0, max_len - 1 - int(k))), key="pe_pos")
    k, pos = int(k), int(pos)
    try:
        m_k, actual, predicted = pe.shift_prediction(table, pos, k, base)
    except BadInput as e:
        st.warning(str(e))
        return
    error = pe.shift_property_error(table, k, base)
    shown = min(8, d_model)
    left, right = st.columns([2, 3])
    with left:
        show(plots.shift_matrix_heatmap(m_k[:shown, :shown], k), "pe_sin_mk")
    with right:
        df = pd.DataFrame({"dimension": np.arange(shown), f"PE({pos + k})": actual[:shown],
                           f"M_k · PE({pos})": predicted[:shown], "difference": (actual - predicted)[:shown]})
        st.dataframe(df, hide_index=True, width="stretch",
                     column_config={**{c: st.column_config.NumberColumn(format="%.6f") for c in df.columns[1:3]},
                                    "difference": st.column_config.NumberColumn(format="%.1e")})
        explain(f"""
M_k rotates each (sin, cos) pair by the angle k · w_i and depends on k only, not on pos. Over all
{count_text(max_len - k)} positions with pos + k in the table, the largest |PE(pos+k) − M_k·PE(pos)| is
**{error:.1e}**. A model can therefore learn "look k tokens back" as one linear map.""")


# ---------------------------------------------------------------- Learned
def learned_tab() -> None:
    from attnviz.ui.jobs import load_model
    from attnviz.ui.sidebar import model_key

    key = model_key()
    if not key:
        st.info("Type a HuggingFace hub id or a local model folder in the sidebar.")
        return
    try:
        loaded = load_model(key)
        learned = pe.position_embeddings(loaded)
    except pe.NoPositionEmbeddings as e:
        st.info(str(e))
        explain("Learned tables exist in BERT-style encoders and GPT-2 (1024 positions). Choose the packaged "
                "MiniLM (BERT) model in the sidebar to see one.")
        return
    except AttnvizError as e:
        st.warning(str(e))
        return
    table = learned.positions.astype(np.float64)
    n_pos, d_model = table.shape
    facts = loaded.facts
    st.markdown(f"**{facts.name}** ({facts.architecture}) keeps its position vectors in `{learned.module}`: "
                f"**{count_text(n_pos)} positions x {d_model} dimensions = {n_pos * d_model:,} trained numbers**."
                + (f" The table has {learned.offset} extra reserved rows before position 0, not shown." if learned.offset else "")
                + " Colours of the learned table are clipped at the 99th percentile of |value| so that a few large entries do not wash out the rest.")
    sin_table = pe.sinusoidal(n_pos, d_model) if d_model % 2 == 0 else None
    left, right = st.columns(2)
    with left:
        show(plots.learned_table(table, facts.name), "pe_learn_table")
    with right:
        if sin_table is not None:
            show(plots.sinusoidal_companion(sin_table, SMALL_SIDE), "pe_learn_sin")
    if max(table.shape) > plots.MAX_CELLS_SIDE:
        st.caption(f"Large tables are drawn as block means (at most {plots.MAX_CELLS_SIDE} cells per side for the model, "
                   f"{SMALL_SIDE} for the sinusoidal companions) so the figures stay small; hover shows the block mean.")
    _learned_similarity(table, sin_table)
    _learned_norms(table)


def _learned_similarity(table: np.ndarray, sin_table: np.ndarray | None) -> None:
    n_pos = table.shape[0]
    sim = pe.cosine_similarity(table)
    sin_sim = pe.cosine_similarity(sin_table) if sin_table is not None else None
    left, right = st.columns(2)
    with left:
        show(plots.similarity_heatmap(sim, title="Learned: cosine similarity of positions"), "pe_learn_sim")
    with right:
        if sin_sim is not None:
            show(plots.similarity_heatmap(sin_sim, title="Sinusoidal: cosine similarity of positions", max_side=SMALL_SIDE),
                 "pe_learn_sinsim")
    series = {"learned": pe.offset_profile(sim)[0]}
    if sin_sim is not None:
        series["sinusoidal"] = pe.offset_profile(sin_sim)[0]
    left, right = st.columns([3, 2])
    with left:
        show(plots.offset_lines(np.arange(n_pos), series, title="Mean cosine similarity against offset",
                                y_title="mean cosine", height=340), "pe_learn_offset")
    with right:
        explain(f"""
Nobody wrote these vectors down: training found them. Still, neighbouring positions end up similar
(the bright band along the diagonal), much like the sinusoidal table, but unlike it the
similarity is not exactly a function of the offset (the diagonals are not constant).

**Positions past {n_pos - 1} do not exist.** The table has one row per position, so an input longer
than {count_text(n_pos)} tokens (special tokens included) has no vector for position {n_pos} onward and the model
cannot encode it. attnviz drops the tokens after the first {n_pos} and says so in the sidebar; to
cover a long text, cut it into windows of at most {count_text(n_pos)} tokens (overlapping, if context matters)
and run each window separately; tokens in different windows then never attend to each other.""")


def _learned_norms(table: np.ndarray) -> None:
    norms, top = pe.vector_norms(table)
    left, right = st.columns([3, 2])
    with left:
        show(plots.norm_lines(norms), "pe_learn_norms")
    with right:
        explain(f"""
Median length {np.median(norms):.2f}. The longest vectors are at positions
{", ".join(f"{p} ({norms[p]:.2f})" for p in top)}. In a BERT-style encoder position 0 always holds
[CLS], so its vector is free to specialise. A lone bump at a later position often marks the last
position of the text length used most in training (a reading of the numbers, not something the
weights prove).""")


# ---------------------------------------------------------------- RoPE
def rope_tab() -> None:
    c1, c2, c3 = st.columns(3)
    d_head = number_box(c1, "d_head", 2, 512, step=2, key="pe_rope_d", help="Must be even: RoPE rotates pairs.")
    base = number_box(c2, "Base θ", 2.0, 1e7, step=1000.0, format="%.0f", key="pe_rope_base",
                      help="10000 in the RoPE paper; SmolLM2 uses 100000.")
    m = c3.slider("Position m", 0, 200, key="pe_rope_m")
    try:
        thetas = pe.rope_frequencies(int(d_head), float(base))
    except BadInput as e:
        st.warning(str(e))
        return
    d_head = int(d_head)
    n_pairs = d_head // 2
    left, right = st.columns([3, 2])
    with right:
        default = [i for i in (0, 1, 2, n_pairs // 2) if i < n_pairs]
        pairs = st.multiselect("Pairs to draw", list(range(n_pairs)), default=sorted(set(default)), key="pe_rope_pairs",
                               max_selections=6, format_func=lambda i: f"pair {i}")
        explain(f"""
RoPE splits q and k into {n_pairs} pairs of numbers and turns pair i by the angle **m · θ_i** at
position m, with θ_i = {base:g}^(−2i/{d_head}). Move the slider: pair 0 turns one radian per
position, later pairs ever more slowly. Nothing is added to the token: only its direction in each
plane changes, so its length (and the content it carries) is kept.""")
    with left:
        if pairs:
            show(plots.rope_rotation(m, thetas, pairs), "pe_rope_rot")
        else:
            st.info("Pick at least one pair to draw.")
    _rope_offsets(d_head, base)
    _rope_decay(d_head, base)
    _rope_attention(d_head, base)


def _rope_offsets(d_head: int, base: float) -> None:
    from attnviz.ui.cache import rope_relative_errors

    st.subheader("q_m · k_n depends only on the offset n − m")
    c1, c2, c3 = st.columns(3)
    qm = number_box(c1, "Query position m", 0, 100_000, 5, key="pe_rope_qm")
    kn = number_box(c2, "Key position n", 0, 100_000, 12, key="pe_rope_kn")
    shift = number_box(c3, "Shift both by s", 0, 100_000, 1000, key="pe_rope_s")
    q, k = pe.random_query_key(d_head, seed=0)
    plain, shifted, by_offset = pe.offset_scores(q, k, qm, kn, shift, base)
    rows = [("(R_m q) · (R_n k)", f"m = {qm}, n = {kn}", plain),
            ("(R_(m+s) q) · (R_(n+s) k)", f"m = {qm + shift}, n = {kn + shift}", shifted),
            ("q · (R_(n−m) k)", f"offset n − m = {kn - qm}", by_offset)]
    left, right = st.columns([3, 2])
    with left:
        st.dataframe(pd.DataFrame(rows, columns=["score", "positions", "value"]), hide_index=True, width="stretch",
                     column_config={"value": st.column_config.NumberColumn(format="%.10f")})
        errs = rope_relative_errors(d_head, float(base))
        st.markdown(f"Over 200 random pairs with positions up to 4096: largest difference **{errs['float64']['vs_offset_rotation']:.1e}** "
                    f"in float64, **{errs['float32']['vs_offset_rotation']:.1e}** in float32 (typical score size "
                    f"{errs['float64']['typical_score']:.1f}): float32 rounding grows with the angle, which is why long "
                    "contexts compute RoPE angles carefully.")
    with right:
        explain("""
R_m is a rotation, so R_m^T = R_(−m) and (R_m q)·(R_n k) = q^T R_m^T R_n k = **q^T R_(n−m) k**:
the two positions enter only through n − m (note the order: n − m, not m − n). Shifting both
positions by the same s leaves the score unchanged: the three numbers agree to rounding.""")
    scores = pe.position_scores(q, k, 48, base)
    spread = pe.offset_profile(scores)[1].max()
    left, right = st.columns([3, 2])
    with left:
        show(plots.rope_scores(scores), "pe_rope_toeplitz")
    with right:
        explain(f"""
One fixed q placed at every position m, one fixed k at every position n. Each diagonal
(constant n − m) is one colour: measured largest spread along a diagonal **{spread:.1e}**.""")


def _rope_decay(d_head: int, base: float) -> None:
    st.subheader("Does the score decay with distance?")
    decay = pe.score_decay(d_head, float(base), 512)
    show(plots.rope_decay(decay), "pe_rope_decay")
    explain(f"""
Which case is shown matters. **Aligned** q and k (the same vector) score highest at distance 0 and
lower, with ripples, further away: the pairs drift out of phase. The **paper's upper bound** on
|score| decays too. But for **independent random** q and k the mean score is about zero at every
distance (measured mean at distance 0: {decay['random_mean'][0]:+.3f}, at 512: {decay['random_mean'][-1]:+.3f}):
RoPE does not by itself make far tokens score lower; it makes it easy for a head to learn to.""")


def _rope_attention(d_head: int, base: float) -> None:
    st.subheader("RoPE inside a small attention head")
    c1, c2, c3 = st.columns(3)
    content = c1.radio("Tokens", ["the same token at every position", "random tokens"], key="pe_rope_content")
    seq_len = c2.slider("Sequence length", 2, 32, 16, key="pe_rope_len")
    strength = c3.slider("Match strength (score at distance 0)", 0.5, 16.0, 8.0, 0.5, key="pe_rope_strength")
    demo = pe.rope_attention_demo(seq_len, d_head, base, "repeated" if content.startswith("the same") else "random", strength)
    left, right = st.columns(2)
    zmax = float(max(demo["plain"].max(), demo["rope"].max()))
    with left:
        show(plots.position_attention(demo["plain"], title="Without positions", zmax=zmax), "pe_rope_plain")
    with right:
        show(plots.position_attention(demo["rope"], title="With RoPE", zmax=zmax), "pe_rope_with")
    explain("""
With the same token everywhere, attention without positions cannot tell the copies apart: every
weight is 1/n. With RoPE, each copy prefers itself and its neighbours. The raw scores depend on the
offset only (each row is the row above shifted by one); the weights differ a little near the edges,
where a query has fewer neighbours to share its attention with. Try base 100 for a sharper band.""")


# ---------------------------------------------------------------- ALiBi
def alibi_tab() -> None:
    c1, c2, c3 = st.columns(3)
    n_heads = number_box(c1, "Heads", 1, 64, key="pe_alibi_heads")
    seq_len = c2.slider("Sequence length", 2, 64, key="pe_alibi_len")
    causal = c3.toggle("Causal (decoder)", key="pe_alibi_causal",
                       help="ALiBi was made for decoders: keys after the query are masked.")
    try:
        slopes = pe.alibi_slopes(int(n_heads))
    except BadInput as e:
        st.warning(str(e))
        return
    n_heads = int(n_heads)
    exps = np.log2(slopes)
    left, right = st.columns([3, 2])
    with left:
        show(plots.alibi_slope_bars(slopes), "pe_alibi_slopes")
    with right:
        power = pe.power_of_two_below(n_heads)
        rule = (f"{n_heads} is a power of two, so the slopes are the geometric sequence starting at "
                f"2^(−8/{n_heads}) = {slopes[0]:.4g}, each the previous times that ratio, down to 2^−8 = 1/256."
                if power == n_heads else
                f"{n_heads} is not a power of two: the first {power} heads take the {power}-head slopes "
                f"(2^−{8 / power:g} … 2^−8); the other {n_heads - power} take every other slope of the "
                f"{2 * power}-head sequence ({', '.join(f'2^{e:g}' for e in exps[power:])}), as in the ALiBi reference code.")
        explain(f"""
ALiBi adds no vectors. It subtracts **m_h · (i − j)** from the score of query i for key j: the
further back the key, the bigger the penalty. Each head h has its own slope m_h. {rule}
Steep heads look only at the last few tokens; gentle ones see far.

The paper's formula m_h = 2^(−8h/H) and the reference code's `get_slopes` agree for powers of two but
differ for other head counts: for those the reference interleaves slopes of the next power of two.
attnviz uses the reference slopes everywhere, the Training page's toy models included.""")
    head = choices.selectbox(st, "Head", list(range(n_heads)), key="pe_alibi_head",
                             format_func=lambda h: f"head {h}: slope {slopes[h]:.4g} = 2^{exps[h]:g}")
    bias = pe.alibi_bias(n_heads, seq_len, causal)
    left, right = st.columns(2)
    with left:
        show(plots.alibi_bias_heatmap(bias[head], head), "pe_alibi_bias")
    with right:
        show(plots.alibi_bias_lines(slopes, seq_len), "pe_alibi_lines")
    _alibi_effect(n_heads, seq_len, causal, head)


def _alibi_effect(n_heads: int, seq_len: int, causal: bool, head: int) -> None:
    st.subheader("Effect on an attention pattern")
    strength = st.slider("Content score spread (std of q·k/√d)", 0.0, 4.0, 1.0, 0.25, key="pe_alibi_content",
                         help="0 means every key matches equally well, so only the bias shapes the pattern.")
    plain, biased = pe.alibi_attention(pe.content_scores(seq_len, strength, seed=1), n_heads, causal)
    left, right = st.columns(2)
    zmax = float(max(plain.max(), biased[head].max()))
    with left:
        show(plots.position_attention(plain, title="Without ALiBi", zmax=zmax), "pe_alibi_plain")
    with right:
        show(plots.position_attention(biased[head], title=f"With ALiBi, head {head}", zmax=zmax), "pe_alibi_with")
    last = biased[head][-1]
    explain(f"""
The same content scores, with and without head {head}'s bias. The last query gives
**{last[-1]:.2f}** of its attention to itself and {last[max(0, seq_len - 4):].sum():.2f} to the last four tokens with ALiBi,
against {plain[-1][-1]:.2f} and {plain[-1][max(0, seq_len - 4):].sum():.2f} without. Because the bias only depends on
i − j, it works at any length, including lengths never seen in training.""")


# ---------------------------------------------------------------- Why positions
def why_tab() -> None:
    st.session_state.setdefault("pe_eq_seed", 0)
    c1, c2, c3 = st.columns([3, 3, 1.3])
    text = c1.text_input("Sentence", key="pe_eq_text", max_chars=400)
    scheme = c2.radio("Positions in the layer", list(SCHEME_LABELS), format_func=SCHEME_LABELS.get, key="pe_eq_scheme",
                      horizontal=True)
    c3.write("")
    if c3.button("Shuffle again", key="pe_eq_shuffle"):
        st.session_state["pe_eq_seed"] += 1
    try:
        rep = pe.permutation_demo(text, scheme, seed=st.session_state["pe_eq_seed"])
    except BadInput as e:
        st.warning(str(e))
        return
    st.markdown(f"**Original:** {' '.join(rep.tokens)}  \n**Shuffled:** {' '.join(rep.shuffled_tokens)}")
    zmax = float(max(rep.weights.max(), rep.weights_shuffled.max()))
    figs = [
        (rep.weights, rep.tokens, "① Original sentence", "pe_eq_orig"),
        (rep.weights_permuted, rep.shuffled_tokens, "② ① with rows, columns shuffled", "pe_eq_perm"),
        (rep.weights_shuffled, rep.shuffled_tokens, "③ Computed on the shuffle", "pe_eq_shuf"),
    ]
    for col, (w, toks, title, key) in zip(st.columns(3), figs):
        with col:
            show(plots.token_heatmap(w, toks, toks, title=title, zmax=zmax, height=380), key)
    c1, c2, c3 = st.columns(3)
    c1.metric("Attention: ② vs ③", f"{rep.attention_error:.1e}", help="Largest |difference| between maps ② and ③.")
    c2.metric("Outputs: shuffled vs recomputed", f"{rep.output_error:.1e}",
              help="Largest |difference| between the original outputs put in the new order and the outputs of the shuffle.")
    c3.metric("Sentence vector change", f"{rep.pooled_error:.1e}", help="Largest change of the mean of the outputs.")
    if rep.equivariant:
        st.success("Without positions, shuffling the words only shuffles the attention and the outputs: each word gets "
                   "exactly the same output wherever it stands, and the sentence vector does not change. "
                   "'dog bites man' and 'man bites dog' look the same to this layer.")
    else:
        st.warning(f"With {SCHEME_LABELS[scheme]}, the shuffled sentence gets different attention and different outputs: "
                   "the layer now knows where each word stands.")
    explain("""
The layer is one seeded attention head (d_model 16) with a fixed random vector per word. Self-attention
only compares tokens with each other, so if nothing marks positions, moving a word moves its row and
column of the attention and nothing else: maps ② and ③ are identical (differences ~1e-16, rounding). Adding sinusoidal vectors to the inputs, or rotating q and k with RoPE, breaks the symmetry.""")


# ---------------------------------------------------------------- Comparison
def comparison_tab() -> None:
    st.table(pd.DataFrame(pe.comparison_rows()).set_index("Scheme"))
    explain("""
Absolute schemes (sinusoidal, learned) add a vector per position to the input; relative ones (T5 bias,
RoPE, ALiBi) act inside attention and see only distances. Learned tables stop at their size: GPT-2 at
1024 positions, BERT at 512. RoPE is exact about offsets but, used as is, degrades on inputs longer
than those seen in training; position interpolation (PI) and YaRN rescale its angles to stretch it.
ALiBi's slopes are consecutive powers of two (2^−1, 2^−2, 2^−3, … for 8 heads).""")


TABS = {"Sinusoidal": sinusoidal_tab, "Learned": learned_tab, "RoPE": rope_tab, "ALiBi": alibi_tab,
        "Why positions": why_tab, "Comparison": comparison_tab}
