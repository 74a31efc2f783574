"""AppTest of the causal page: sentence similarity on the default encoder, its maps equal to patching run here; on a tiny random Llama saved in a folder, the
IOI analysis whose maps equal patching, attribution patching and direct attribution run here pair by pair, the
accuracy and its warning, the head with the largest effect chosen, its score split, what it writes and its OV and QK
circuits; the user's own pair and its plain messages."""
from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz.causal import patching
from attnviz.causal.attribution import attribution_patching
from attnviz.causal.circuits import candidate_ids, ov_circuit, qk_circuit
from attnviz.causal.dla import direct_attribution
from attnviz.causal.pruning import pruning_curves
from attnviz.causal.scores import split_score
from attnviz.causal.tasks import ioi, task_set, user_pair
from attnviz.models.hf import model_facts
from attnviz.types import LoadedModel
from tests.app.apptest import open_page, run_until
from tests.figures import decode
from tests.tiny_models import build

PAGE = "app_pages/causal.py"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    model, tok, config = build("llama", seed=3)
    folder = tmp_path_factory.mktemp("tiny-llama-causal")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder), LoadedModel(key="tiny", model=model, tokenizer=tok, facts=model_facts(config, "tiny"))


def _specs(at, tab: str | None = None) -> dict:
    """The page's plotly figures by title; with `tab`, after opening that tab (only the open tab runs)."""
    if tab is not None:
        at.session_state["ca_tab"] = tab
        at.run()
        assert not at.exception, at.exception
    return {s["layout"]["title"]["text"]: s for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))}


def test_the_default_encoder_analyses_sentence_similarity():
    at = open_page(PAGE, ca_pairs=2)  # the sidebar's default, MiniLM
    assert not at.warning
    from attnviz.models import load_model

    loaded = load_model("minilm")
    task = task_set(loaded.tokenizer, "similarity", n_pairs=2, embed=patching.sentence_embedder(loaded))
    runs = [patching.cache(loaded, p) for p in task.pairs]
    clean = np.array([r.metric.clean for r in runs])
    corrupted = np.array([r.metric.corrupted for r in runs])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Clean: cosine similarity to the reference"] == f"{clean[0]:.3f}"
    assert metrics["Corrupted: cosine similarity to the reference"] == f"{corrupted[0]:.3f}"
    assert metrics["Clean cosine similarity"] == f"{clean.mean():.3f}"
    assert metrics["Clean accuracy"] == f"{np.mean(clean > corrupted):.0%}"
    assert any(task.pairs[0].reference_text in c.value for c in at.caption)
    at.button(key="ca_job_run").click()
    run_until(at, "_ca_done")
    raw = np.mean([r.metric.corrupted + patching.patch_heads(loaded, r) * (r.metric.clean - r.metric.corrupted)
                   for r in runs], 0)
    want = (raw - corrupted.mean()) / (clean.mean() - corrupted.mean())
    specs = _specs(at)
    np.testing.assert_allclose(decode(specs["Exact patching of each head"]["data"][0]["z"]), want, atol=1e-4)
    assert "Attribution patching (estimate)" in specs and not at.info  # only the open tab runs
    assert not _specs(at, "Direct logit attribution")
    said = " ".join(i.value for i in at.info)
    assert "minilm is an encoder scored by sentence similarity" in said and "direct logit attribution" in said
    assert not _specs(at, "Why it attends") and "the split of a head's score" in at.info[0].value
    assert not at.warning and not at.exception


def test_ioi_maps_equal_patching_run_pair_by_pair(llama):
    folder, loaded = llama
    at = open_page(PAGE, model_choice="other", custom_model=folder, ca_pairs=2)
    at.button(key="ca_job_run").click()
    run_until(at, "_ca_done")
    s = at.session_state["_ca_done"][1]
    pairs = ioi(loaded.tokenizer, n_pairs=2).pairs
    assert [p.clean for p in s.task.pairs] == [p.clean for p in pairs]
    runs = [patching.cache(loaded, p) for p in pairs]
    clean = np.array([r.metric.clean for r in runs])
    corrupted = np.array([r.metric.corrupted for r in runs])
    raw = np.mean([r.metric.corrupted + patching.patch_heads(loaded, r) * (r.metric.clean - r.metric.corrupted)
                   for r in runs], 0)
    want = (raw - corrupted.mean()) / (clean.mean() - corrupted.mean())
    est = np.mean([r.metric.corrupted + attribution_patching(loaded, p).heads * (r.metric.clean - r.metric.corrupted)
                   for r, p in zip(runs, pairs)], 0)
    est = (est - corrupted.mean()) / (clean.mean() - corrupted.mean())
    dla = np.mean([direct_attribution(loaded, p).heads for p in pairs], 0)
    specs = _specs(at)
    np.testing.assert_allclose(decode(specs["Exact patching of each head"]["data"][0]["z"]), want, atol=1e-4)
    np.testing.assert_allclose(decode(specs["Attribution patching (estimate)"]["data"][0]["z"]), est, atol=1e-4)
    assert "Direct logit attribution per head" not in specs  # only the open tab runs
    r = np.corrcoef(want.ravel(), est.ravel())[0, 1]
    assert f"Attribution vs exact patching, Pearson r = {r:.3f}" in specs
    residual = decode(specs["Residual stream patching (first pair)"]["data"][0]["z"])
    np.testing.assert_allclose(residual, patching.patch_residual(loaded, runs[0]), atol=1e-4)
    dla_specs = _specs(at, "Direct logit attribution")
    np.testing.assert_allclose(decode(dla_specs["Direct logit attribution per head"]["data"][0]["z"]), dla, atol=1e-4)
    assert "Exact patching of each head" not in dla_specs

    accuracy = np.mean(clean > 0)
    assert at.metric[0].value == f"{accuracy:.0%}"
    assert at.metric[1].value == f"{clean.mean():.3f}" and at.metric[2].value == f"{corrupted.mean():.3f}"
    said = " ".join(w.value for w in at.warning)
    assert ("The model cannot do this task" in said) == (accuracy < 0.75)

    # the head with the largest |effect| is chosen, its split from the last position to the answer's name
    layer, head = np.unravel_index(int(np.argmax(np.abs(want))), want.shape)
    assert (at.session_state["ca_layer"], at.session_state["ca_head"]) == (layer, head)
    # the head chosen, in parts: by position on the first pair, whole, pattern only and values only pooled
    parts = [patching.patch_head_detail(loaded, p, int(layer), int(head)) for p in pairs]
    bars = _specs(at, "Patching")[f"L{layer} H{head}: its output patched at one position (first pair)"]["data"][0]
    np.testing.assert_allclose(decode(bars["y"]), parts[0].by_position, atol=1e-5)
    mean = lambda f: np.mean([d.metric.corrupted + f(d) * (d.metric.clean - d.metric.corrupted) for d in parts])
    for label, f in (("Every position", lambda d: d.whole), ("Pattern only", lambda d: d.pattern_only),
                     ("Values only", lambda d: d.values_only)):
        expected = (mean(f) - corrupted.mean()) / (clean.mean() - corrupted.mean())
        assert next(m.value for m in at.metric if m.label == label) == f"{expected:.3f}", label
    assert next(m.value for m in at.metric if m.label == "Every position") == f"{want[layer, head]:.3f}"
    from attnviz.causal.dla import by_source

    source = _specs(at, "Direct logit attribution")[
        f"L{layer} H{head}: its direct logit attribution by the position it reads (first pair)"]["data"][0]
    np.testing.assert_allclose(decode(source["y"]), by_source(loaded, pairs[0], int(layer), int(head)), atol=1e-5)
    assert np.sum(decode(source["y"])) == pytest.approx(direct_attribution(loaded, pairs[0]).heads[layer, head],
                                                        abs=1e-4)
    key = max(p for p, t in enumerate(pairs[0].clean) if t == pairs[0].answer)  # the name answered, in the prompt
    split = split_score(loaded, pairs[0].clean, int(layer), int(head), pairs[0].n - 1, key)
    specs = _specs(at, "Why it attends")
    name = next(t for t in specs if t.startswith(f"L{layer} H{head}:"))
    assert f"score {split.score:.3f}," in name
    top = np.sort(np.abs(split.terms).ravel())[::-1][:12]
    np.testing.assert_allclose(np.sort(np.abs(decode(specs[name]["data"][0]["x"])))[::-1], top, atol=1e-5)
    assert f"What L{layer} H{head} writes at the last position" in specs
    ids = candidate_ids(pairs, loaded.model.config.vocab_size)
    word = loaded.tokenizer.decode
    for circuit, title in ((ov_circuit, f"OV circuit of L{layer} H{head}: source → promoted token"),
                           (qk_circuit, f"QK circuit of L{layer} H{head}: query token → key token")):
        top = circuit(loaded, int(layer), int(head), ids, k=12, prompt=pairs[0].clean)
        bars = specs[title]["data"][0]
        np.testing.assert_allclose(decode(bars["x"]), top.values, rtol=1e-5)
        assert bars["customdata"] == [f"{word([a])!r} → {word([b])!r}" for a, b in top.pairs]

    # the pruning curves, zeroing the heads: each line equals the curve computed here from the same map
    assert not _specs(at, "Pruning curve")  # nothing until it is run
    at.segmented_control(key="ca_prune_mode").set_value("zero").run()
    at.button(key="ca_prune_job_run").click()
    run_until(at, "_ca_pruned")
    curves = pruning_curves(loaded, pairs, want, mode="zero")
    lines = {d["name"]: d for d in _specs(at)["Pruning curve: heads removed (zeroed)"]["data"]}
    for name, values in curves.metric.items():
        np.testing.assert_allclose(decode(lines[name]["x"]), curves.counts)
        np.testing.assert_allclose(decode(lines[name]["y"]), values, atol=1e-4)


def test_your_own_pair_and_its_plain_messages(llama):
    folder, loaded = llama
    at = open_page(PAGE, model_choice="other", custom_model=folder, ca_task="user",
                   ca_corrupted="When Mary and John went to the big store, Anna gave a drink to")
    said = " ".join(w.value for w in at.warning)
    assert "The clean prompt has" in said and "Clean: " in said and "Corrupted: " in said and "| store" in said
    at.text_input(key="ca_corrupted").set_value("When Mary and John went to the store, John gave a drink to").run()
    assert "are the same" in " ".join(w.value for w in at.warning)
    at.text_input(key="ca_corrupted").set_value("When Mary and John went to the store, Anna gave a drink to")
    at.text_input(key="ca_answer").set_value(" Maryqzx").run()
    # no message about the pair; the predictions come before any analysis, with the logit differences of both runs
    said = [w.value for w in at.warning]
    assert all(w.startswith("The model cannot do this task") for w in said), said
    pair = user_pair(loaded.tokenizer, "When Mary and John went to the store, John gave a drink to",
                     "When Mary and John went to the store, Anna gave a drink to", " Maryqzx", " John")
    metric = patching.cache(loaded, pair).metric
    assert [m.value for m in at.metric[1:3]] == [f"{metric.clean:.3f}", f"{metric.corrupted:.3f}"]
    assert not at.get("plotly_chart")  # nothing is patched before ▶ Analyse
    ids = loaded.tokenizer(" Maryqzx", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1
    assert any(f"is {len(ids)} tokens; only its first token" in c.value for c in at.caption)
