"""Widgets of the trust page: the target and its settings, Run / Cancel as a background job, and the
report's figures with the verdict on top."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from attnviz.attribution import figures as af
from attnviz.attribution import targets as tg
from attnviz.attribution.faithfulness import AOPC_BINS, corr_text
from attnviz.attribution.gradients import DEFAULT_STEPS, MAX_STEPS, MIN_STEPS, check_steps
from attnviz.errors import AttnvizError
from attnviz.extract import encode
from attnviz.metrics.flow import MAX_FLOW_TOKENS
from attnviz import timings
from attnviz.models.registry import parameter_count
from attnviz.types import Request
from attnviz.ui import jobs
from attnviz.ui.cache import get_model, trust_report
from attnviz.ui.figure import figure_beside, show_figure
from attnviz.ui.heads import token_picker
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.units import count_text

JOB = "trust_job"  # session key of the running report
DONE = "trust_done"  # session key: {settings: TrustReport} of the reports this session has seen
URL_KEYS = {"trust_kind": str, "trust_pos": int, "trust_token": str, "trust_second": str, "trust_steps": int, "trust_random": bool}
EARLIER_LINK_NAMES = {"tr" + key[len("trust"):]: key for key in URL_KEYS}  # links naming them tr_* still open them
DEFAULT_SECOND = "A dog slept on the rug because it was exhausted."
# Above this many parameters the model-randomisation check starts off: it runs every method a second time on a
# randomised copy (about doubling the run), and on SmolLM2 (135 M) a run on 11 tokens took minutes here.
RANDOMISE_MAX_PARAMETERS = 50_000_000
s = st.session_state


def randomise_by_default(n_parameters: int) -> bool:
    """Whether the model-randomisation check starts on for a model of this size."""
    return n_parameters <= RANDOMISE_MAX_PARAMETERS


def _randomise_default(model_key: str, loaded) -> int:
    """Put the check's default for this model in the toggle (a link's value wins; another model chosen later
    gets its own default); the model's parameter count."""
    n_params = parameter_count(loaded)
    if s.get("_trust_random_model") not in (None, model_key):
        s["trust_random"] = randomise_by_default(n_params)
    s["_trust_random_model"] = model_key
    s.setdefault("trust_random", randomise_by_default(n_params))
    return n_params


@dataclass(frozen=True)
class Settings:
    """One report's key: everything the numbers depend on."""

    request: Request  # the model and text (no pair, no token limit: the report reads neither)
    kind: str
    position: int | None
    token: str | None
    second: str | None
    steps: int
    randomise: bool

    def report(self, report=None, cancel=None):
        return trust_report(self.request, self.kind, self.position, self.token, self.second, self.steps,
                            self.randomise, _report=report, _cancel=cancel)


def _default_position(kind: str, enc) -> int:
    content = np.flatnonzero(~np.asarray(enc.special))
    if kind == tg.NEXT_TOKEN:
        return len(enc.ids) - 1  # the prediction after the whole text
    return int(content[min(1, len(content) - 1)]) if len(content) else 0


def controls(request: Request) -> Settings | None:
    """The target (only the kinds this model has), its position or second sentence (the request's pair by
    default), the steps; None after a plain message when the text or model cannot be used."""
    model_key, text, pair = request.model, request.text, request.pair
    bind(URL_KEYS, former=EARLIER_LINK_NAMES)
    loaded = get_model(model_key)
    kinds = tg.supported_kinds(loaded)
    if not kinds:
        st.info(f"Attributions here support encoders and causal decoders; {model_key} is an "
                f"{loaded.facts.kind}. Pick another model in the sidebar.")
        return None
    try:
        enc = encode(loaded, text)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    if s.get("trust_kind") not in kinds:
        s["trust_kind"] = kinds[0]
    steps = s.get("trust_steps", DEFAULT_STEPS)
    try:
        check_steps(steps)
    except AttnvizError as e:  # a hand-edited link: say so and use the default
        st.warning(f"{e} Using {DEFAULT_STEPS}.")
        s["trust_steps"] = DEFAULT_STEPS
    s.setdefault("trust_steps", DEFAULT_STEPS)
    n_params = _randomise_default(model_key, loaded)
    s.setdefault("trust_second", pair or DEFAULT_SECOND)
    busy = jobs.running(JOB)
    logit = s["trust_kind"] in (tg.NEXT_TOKEN, tg.MASKED_TOKEN)
    c1, c2, c3 = st.columns([4, 3, 2] if logit else [4, 4, 0.01])
    kind = c1.selectbox("Output to explain", kinds, key="trust_kind", format_func=tg.KIND_LABELS.get, disabled=busy,
                        help="One number the model computes from this text. Every method below is asked which "
                             "input tokens that number depends on. Only the outputs this model has are offered.")
    position = token = second = None
    if kind in tg.POSITIONAL:
        pos = s.get("trust_pos")
        bad = not isinstance(pos, int) or not 0 <= pos < len(enc.ids) or (kind != tg.NEXT_TOKEN and enc.special[pos])
        if bad:
            s["trust_pos"] = _default_position(kind, enc)
        what = {tg.NEXT_TOKEN: "Predict the token after", tg.MASKED_TOKEN: "Token to mask and predict",
                tg.SIMILARITY_MASKED: "Token to mask in the copy"}[kind]
        position = token_picker(enc.tokens, "trust_pos", label=what, container=c2,
                                help="The position the output is read at. For the next token, later positions "
                                     "cannot matter (the model is causal) and are never removed.")
        if kind != tg.NEXT_TOKEN and enc.special[position]:
            c2.caption("Special tokens cannot be masked: pick a word.")
    else:
        second = c2.text_input("Second sentence", key="trust_second", disabled=busy,
                               help="The output is the cosine similarity between the two sentence embeddings "
                                    "(mean of the last hidden states over the tokens, as sentence-transformers "
                                    "pools). The methods explain the first sentence's tokens.")
    if kind in (tg.NEXT_TOKEN, tg.MASKED_TOKEN):
        token = c3.text_input("Explain the logit of", key="trust_token", placeholder="top prediction", disabled=busy,
                              help="Leave empty for the model's own top prediction there, or type one token. A "
                                   "leading space counts: for most causal models ' Paris' and 'Paris' are different "
                                   "tokens.") or None
    c4, c5 = st.columns([3, 5])
    steps = number_box(c4, "Integrated-gradients steps", MIN_STEPS, MAX_STEPS, DEFAULT_STEPS, step=8,
                       key="trust_steps", disabled=busy,
                       help=f"Points on the path from the baseline to the input ({MIN_STEPS}-{MAX_STEPS}): "
                            "all-zero word embeddings for an encoder, a neutral token's embedding for a causal "
                            "model. Each is one forward and one backward pass: the cost grows linearly with the "
                            "steps. The result says how far the scores are from adding up; more steps reduce it.")
    randomise = c5.toggle("Model-randomisation check (about doubles the time)", key="trust_random", disabled=busy,
                          help="Recompute every method on a copy of the model whose transformer blocks are "
                               "re-initialised at random (Adebayo et al. 2018).")
    if not randomise_by_default(n_params):
        c5.caption(f"Off by default here: {loaded.facts.name} has {n_params / 1e6:,.0f} million parameters (more than "
                   f"{RANDOMISE_MAX_PARAMETERS / 1e6:,.0f} million), and the check runs every method a second time.")
    n = len(enc.ids)
    if n > MAX_FLOW_TOKENS:
        st.caption(f"This input has {count_text(n)} tokens: attention flow runs up to {count_text(MAX_FLOW_TOKENS)} tokens, so it is skipped "
                   "(rollout, gradients and the rest work at any length).")
    # a token's leading space is part of it (' Paris' is not 'Paris'): only the end is trimmed
    return Settings(Request(model_key, text), kind, position, (token or "").rstrip() or None,
                    (second or "").strip() or None, int(steps), bool(randomise))


def _detail(settings: Settings) -> str:
    """The conditions a run's duration is kept with: tokens, steps, the randomisation check."""
    n = len(encode(get_model(settings.request.model), settings.request.text).ids)
    return (f"{n:,} tokens, {settings.steps} steps, randomisation check {'on' if settings.randomise else 'off'}")


def _start(settings: Settings) -> None:
    jobs.start(JOB, lambda report, cancel: settings.report(report, cancel), "attributions", tag=settings,
               timing=(settings.request.model, timings.TRUST, _detail(settings)), settings=settings)


def _collect(job: jobs.Job) -> None:
    if job.result is not None:
        done = dict(s.get(DONE, {}))
        done[job.data["settings"]] = job.result
        s[DONE] = dict(list(done.items())[-4:])  # the last few only: a report holds the scores twice


def _draw(job: jobs.Job) -> None:
    jobs.bar(job)


def run_controls(settings: Settings) -> None:
    """Run and Cancel, then the job's progress while it runs."""
    busy = jobs.running(JOB)
    b = st.columns([1, 1, 5])
    b[0].button("▶ Run", key="trust_run", type="primary", disabled=busy, on_click=_start, args=(settings,))
    b[1].button("■ Cancel", key="trust_cancel", disabled=not busy, on_click=jobs.cancel, args=(JOB,))
    b[2].caption("Runs in the background with progress and the time left. On "
                 f"{settings.request.model}: {timings.hint(settings.request.model, timings.TRUST)}.")
    jobs.watch(JOB, _draw, on_done=_collect)
    job = jobs.current(JOB)
    if job is not None and job.done and job.error and job.data["settings"] == settings:
        st.warning(job.error)


def current_report(settings: Settings):
    """The report for these settings if this session computed it, else None."""
    return s.get(DONE, {}).get(settings)


def headline(report) -> None:
    st.success(report.verdict, icon=":material/fact_check:")
    m = st.columns(4)
    m[0].metric("Output f(x)", f"{report.f_input:.4g}", help=report.target.label)
    if report.ig is not None:
        m[1].metric("IG adds up within", completeness_text(report.ig),
                    help="How far the integrated-gradients scores are from adding up to f(x) − f(baseline), as a "
                         f"share of it: their sum minus (f(x) − f(baseline)) = {report.ig.delta:.3g} with "
                         f"{report.ig_steps} steps; f(baseline) = {report.ig.f_baseline:.4g}. "
                         f"Baseline: {report.ig.baseline}.")
    m[2].metric("Removable tokens", f"{count_text(int(report.candidates.sum()))} of {count_text(len(report.tokens))}")
    m[3].metric("Time", f"{report.seconds:.1f} s")
    st.caption(f"Explained: **{report.target.label}**. Baseline (where integrated gradients start, and what a "
               f"removed token becomes): {report.baseline}.")
    err = report.ig.completeness_error if report.ig is not None else None
    if err is not None and err > 0.05:
        st.warning(f"Integrated gradients do not add up here: their sum misses f(x) − f(baseline) by "
                   f"{completeness_text(report.ig)} at {report.ig_steps} steps. The output changes abruptly somewhere "
                   "on the straight path from the baseline, between the points the steps look at. More steps usually "
                   "help (each costs one forward and one backward pass); until then read its scores with caution. "
                   "The deletion and insertion tests below still say how well its ranking tracks the output.")
    for name, why in report.skipped.items():
        st.info(f"**{name}** skipped: {why}.")


def completeness_text(ig) -> str:
    """How far integrated gradients miss f(x) - f(baseline), as a percentage of it."""
    err = ig.completeness_error
    if err is None:
        return "—"
    return f"{100 * err:.2g}%" if err < 0.1 else f"{100 * err:,.0f}%"


def scores_figure(report):
    """Every method's scores; integrated gradients' row says how far they are from adding up."""
    def name(k):
        if k == "integrated gradients" and report.ig is not None:
            return f"{k} (adds up within {completeness_text(report.ig)})"
        return k

    return af.methods_heatmap({name(k): v for k, v in report.scores.items()}, report.tokens,
                              title="Each method's token scores (row scaled to its max)", candidates=report.candidates)


def spearman_figure(report):
    names, mat = report.spearman
    return af.spearman_heatmap(names, mat, title="Rank agreement over the removable tokens")


def faithfulness_table(report) -> pd.DataFrame:
    return pd.DataFrame([{"method": k, "comprehensiveness ↑": round(c.comprehensiveness, 4),
                          "sufficiency ↓": round(c.sufficiency, 4)} for k, c in report.curves.items()])


def curves(report, ytitle: str) -> None:
    left, right = st.columns(2)
    with left:
        show_figure(af.perturbation_curves(report.curves, "deletion", ytitle=ytitle), key="trust_deletion")
    with right:
        show_figure(af.perturbation_curves(report.curves, "insertion", ytitle=ytitle), key="trust_insertion")
    st.dataframe(faithfulness_table(report), hide_index=True, width="stretch")
    st.caption("Means over DeYoung et al.'s bins: the top " + ", ".join(f"{100 * b:g}" for b in AOPC_BINS)
               + "% of the removable tokens (at least one token each). Comprehensiveness = f(x) − f(x without them): "
                 "higher is better. Sufficiency = f(x) − f(only them): lower is better.")
    if report.noise is not None and len(report.noise) > 1:
        st.caption(f"**Noise:** {len(report.noise)} random orders of the same removable tokens reach a "
                   f"comprehensiveness of {np.mean(report.noise):.3g} ± {np.std(report.noise, ddof=1):.2g} (mean ± "
                   "standard deviation). The verdict above counts one method as ahead of another only by more than "
                   "that spread.")


def randomisation(report):
    """The randomisation bars, or None when the check was off."""
    if report.randomised is None:
        return None
    return af.randomisation_bars(report.randomised, title="Trained vs randomised model: how much each method changes")


def randomisation_words(report) -> str:
    r = report.randomised or {}
    return "; ".join(f"{k}: {corr_text(v)}" for k, v in r.items())
