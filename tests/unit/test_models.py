"""Model registry and loading: packaged default, local folders, plain errors offline."""
import pytest

from attnviz.errors import ModelNotFound
from attnviz.extract import extract
from attnviz.models import available_models, load_model
from tests.tiny_models import build


def test_default_model_facts(minilm):
    f = minilm.facts
    assert (f.kind, f.n_layers, f.n_heads, f.d_model, f.max_positions) == ("encoder", 6, 12, 384, 512)
    assert f.architecture == "BertModel" and f.position_scheme == "learned"
    assert minilm.model.config._attn_implementation == "eager"


def test_available_lists_packaged_models():
    av = available_models()
    assert "minilm" in av and "smollm2" in av


def test_unknown_hub_id_offline_lists_what_is_available(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFound) as e:
        load_model("no-such-org/no-such-model")
    msg = str(e.value)
    assert "no-such-org/no-such-model" in msg and "minilm" in msg and "smollm2" in msg


def test_folder_without_config(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelNotFound, match="config.json"):
        load_model(str(tmp_path))


def test_missing_folder():
    with pytest.raises(ModelNotFound, match="no folder"):
        load_model("./definitely/not/here")


def test_empty_model_name():
    with pytest.raises(ModelNotFound, match="No model"):
        load_model("  ")


@pytest.mark.parametrize("arch", ["bert", "gpt2", "t5"])
def test_local_folder_loads_with_eager_attention(tmp_path, arch):
    model, tok, _ = build(arch)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path))
    assert loaded.model.config._attn_implementation == "eager"
    r = extract(loaded, "hello there world")
    assert r.n_layers == 2 and r.n_heads == 4


@pytest.mark.slow
def test_packaged_smollm2_is_a_causal_llama_and_loads_again_from_its_converted_copy(tmp_path, monkeypatch):
    import time

    import torch

    from attnviz import timings
    from attnviz.models.registry import load_task

    monkeypatch.setenv("ATTNVIZ_CACHE_DIR", str(tmp_path / "cache"))
    assert load_task("smollm2") == timings.LOAD_GGUF
    t0 = time.perf_counter()
    first = load_model("smollm2")  # de-quantises the GGUF file, then saves the converted copy
    t1 = time.perf_counter()
    assert load_task("smollm2") == timings.LOAD_COPY
    loaded = load_model("smollm2")  # reads the copy
    t2 = time.perf_counter()
    print(f"SmolLM2 load from GGUF (and saving the copy) {t1 - t0:.1f} s, from the converted copy {t2 - t1:.1f} s")
    assert timings.last("smollm2", timings.LOAD_GGUF).seconds > 0 and timings.last("smollm2", timings.LOAD_COPY)
    assert loaded.facts == first.facts
    ids = first.tokenizer("The capital of France is", return_tensors="pt").input_ids
    assert ids.tolist() == loaded.tokenizer("The capital of France is", return_tensors="pt").input_ids.tolist()
    with torch.inference_mode():
        torch.testing.assert_close(loaded.model(ids).logits, first.model(ids).logits, rtol=0, atol=0)
    del first
    f = loaded.facts
    assert (f.kind, f.n_layers, f.n_heads, f.n_kv_heads, f.d_model) == ("decoder", 30, 9, 3, 576)
    assert f.architecture == "LlamaForCausalLM" and f.position_scheme == "rope"
    r = extract(loaded, "The cat sat on the mat.")
    import numpy as np

    assert r.attention.shape[:2] == (30, 9)
    assert np.abs(np.triu(r.attention, k=1)).max() == 0.0  # causal: no weight on later tokens
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-4)
    import torch  # the in-place capture gives eager's weights bit for bit

    from attnviz.runtime import threads_for

    assert not r.attention.flags.owndata
    ids = torch.tensor([list(r.token_ids)])
    # on as many threads as extract's pass of these tokens (one, for a short text): sums split over another number
    # of threads round differently in the last bits
    with torch.inference_mode(), threads_for(ids.shape[1]):
        ref = loaded.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    np.testing.assert_array_equal(r.attention, np.stack([a[0].numpy() for a in ref.attentions]))


# ------------------------------------------------------------------ the converted copy of a GGUF model
@pytest.fixture
def cache(tmp_path, monkeypatch):
    """attnviz's cache folder under a temporary XDG_CACHE_HOME."""
    monkeypatch.delenv("ATTNVIZ_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "attnviz"


@pytest.fixture
def fake_gguf(tmp_path, cache, monkeypatch):
    """A package folder with a stand-in GGUF file whose "dequantisation" loads a tiny Llama (and is counted)."""
    from attnviz.models import hf

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "tiny.gguf").write_bytes(b"GGUF stand-in")
    model, tok, _ = build("llama")
    original = tmp_path / "tiny-llama"
    model.save_pretrained(original)
    tok.save_pretrained(original)
    reads = []

    def read_gguf(folder, gguf_file, source, progress=None):
        from dataclasses import replace

        reads.append(gguf_file)
        model, tokenizer, facts = hf._load(str(original), source=source, progress=progress, stages=hf.GGUF_STAGES)
        return model, tokenizer, replace(facts, name=str(folder))

    monkeypatch.setattr(hf, "read_gguf", read_gguf)
    return pkg, reads


def _logits(model, tokenizer, text="the cat sat on the mat"):
    import torch

    with torch.inference_mode():
        return model(**tokenizer(text, return_tensors="pt")).logits.numpy()


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    from pathlib import Path

    from attnviz.runtime import cache_dir

    monkeypatch.delenv("ATTNVIZ_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "attnviz"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "attnviz"
    monkeypatch.setenv("ATTNVIZ_CACHE_DIR", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own"


def test_a_gguf_model_is_converted_once_then_read_from_its_copy(fake_gguf, cache):
    import numpy as np

    from attnviz.models import converted
    from attnviz.models.hf import load_hf

    pkg, reads = fake_gguf
    seen = []
    model, tok, facts = load_hf(str(pkg), gguf_file="tiny.gguf", progress=lambda d, t, label="": seen.append((d, t)))
    copy = converted.folder_for(pkg / "tiny.gguf")
    assert reads == ["tiny.gguf"] and copy.parent == cache / "models" and converted.is_complete(copy, pkg / "tiny.gguf")
    assert (copy / "model.safetensors").is_file() and not [p for p in copy.parent.iterdir() if p.name.startswith(".")]
    assert seen[-1] == (100, 100) and [d for d, _ in seen] == sorted(d for d, _ in seen)  # stages, then saving

    seen.clear()
    model2, tok2, facts2 = load_hf(str(pkg), gguf_file="tiny.gguf", progress=lambda d, t, label="": seen.append((d, t)))
    assert reads == ["tiny.gguf"]  # not read again: the copy was
    assert model2.config._attn_implementation == "eager" and facts2 == facts and seen[-1] == (100, 100)
    np.testing.assert_array_equal(_logits(model2, tok2), _logits(model, tok))


def test_a_damaged_or_partial_copy_falls_back_to_the_gguf_file(fake_gguf, cache):
    import numpy as np

    from attnviz.models import converted
    from attnviz.models.hf import load_hf

    pkg, reads = fake_gguf
    model, tok, _ = load_hf(str(pkg), gguf_file="tiny.gguf")
    copy = converted.folder_for(pkg / "tiny.gguf")
    weights = copy / "model.safetensors"

    with open(weights, "r+b") as f:  # cut short (a disk that filled up)
        f.truncate(weights.stat().st_size // 2)
    assert not converted.is_complete(copy, pkg / "tiny.gguf")
    load_hf(str(pkg), gguf_file="tiny.gguf")
    assert len(reads) == 2 and converted.is_complete(copy, pkg / "tiny.gguf")

    size = weights.stat().st_size
    weights.write_bytes(b"\xff" * size)  # same size, garbage inside: the marker agrees but loading fails
    assert converted.is_complete(copy, pkg / "tiny.gguf")
    model3, tok3, _ = load_hf(str(pkg), gguf_file="tiny.gguf")
    assert len(reads) == 3 and converted.is_complete(copy, pkg / "tiny.gguf")
    np.testing.assert_array_equal(_logits(model3, tok3), _logits(model, tok))

    (copy / converted.MARKER).unlink()  # a copy whose writing never finished
    load_hf(str(pkg), gguf_file="tiny.gguf")
    assert len(reads) == 4 and converted.is_complete(copy, pkg / "tiny.gguf")
    load_hf(str(pkg), gguf_file="tiny.gguf")
    assert len(reads) == 4


def test_a_changed_gguf_file_gets_a_new_copy(fake_gguf, cache):
    import os

    from attnviz.models import converted
    from attnviz.models.hf import load_hf

    pkg, reads = fake_gguf
    load_hf(str(pkg), gguf_file="tiny.gguf")
    first = converted.folder_for(pkg / "tiny.gguf")
    (pkg / "tiny.gguf").write_bytes(b"GGUF stand-in, a newer version")
    os.utime(pkg / "tiny.gguf", ns=(1, 2_000_000_000))
    assert converted.folder_for(pkg / "tiny.gguf") != first and not converted.is_complete(first, pkg / "tiny.gguf")
    load_hf(str(pkg), gguf_file="tiny.gguf")
    assert len(reads) == 2 and converted.is_complete(converted.folder_for(pkg / "tiny.gguf"), pkg / "tiny.gguf")


def test_no_copy_when_the_disk_is_too_full(fake_gguf, cache, monkeypatch):
    import shutil
    from collections import namedtuple

    from attnviz.models import converted
    from attnviz.models.hf import load_hf

    pkg, reads = fake_gguf
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(1000, 1000, 0))
    model, _, _ = load_hf(str(pkg), gguf_file="tiny.gguf")  # loads all the same
    assert model is not None and not converted.folder_for(pkg / "tiny.gguf").exists()


def test_the_next_load_of_smollm2_is_named_by_how_it_will_load(cache):
    from attnviz import timings
    from attnviz.models.registry import load_task

    assert load_task("smollm2") == timings.LOAD_GGUF  # nothing converted in this cache yet
    assert load_task("minilm") == timings.LOAD and load_task("some-org/some-model") == timings.LOAD


def test_parameter_count_and_the_randomisation_default(minilm):
    from attnviz.models.registry import parameter_count
    from attnviz.ui.attribution import RANDOMISE_MAX_PARAMETERS, randomise_by_default

    d, vocab, ff, layers = 384, 30522, 1536, 6
    embeddings = vocab * d + 512 * d + 2 * d + 2 * d  # words, positions, token types, LayerNorm
    layer = 4 * (d * d + d) + 2 * d + (d * ff + ff) + (ff * d + d) + 2 * d  # q k v o, LN, MLP in and out, LN
    pooler = d * d + d
    assert parameter_count(minilm) == embeddings + layers * layer + pooler == 22_713_216
    assert randomise_by_default(parameter_count(minilm))  # MiniLM: on
    assert RANDOMISE_MAX_PARAMETERS == 50_000_000 and not randomise_by_default(134_515_008)  # SmolLM2-135M: off


def test_a_background_job_and_a_page_run_tokenising_at_once_keep_their_own_truncation(minilm):
    """A fast tokenizer sets its truncation in its backend at the start of each call. While another thread tokenises
    the same text whole and at another length (a page's run beside a background recording), every truncated encode
    here still keeps its own 64 tokens. Without the loaded tokenizer's one-call-at-a-time guard, about one encode
    in 500 came out at the other thread's length (the whole text, or 100 tokens)."""
    import sys
    import threading

    from attnviz.examples import long_text
    from attnviz.extract import encode

    assert getattr(minilm.tokenizer._encode_plus, "one_at_a_time", False)
    text = long_text(300)
    stop, lengths = threading.Event(), []

    def other():
        while not stop.is_set():
            minilm.tokenizer(text)
            minilm.tokenizer(text, truncation=True, max_length=100)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows within a few thousand calls
    t = threading.Thread(target=other)
    t.start()
    try:
        lengths = [len(encode(minilm, text, max_tokens=64).ids) for _ in range(3000)]
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    assert len(lengths) == 3000 and set(lengths) == {64}, sorted(set(lengths))
