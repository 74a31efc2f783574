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
def test_packaged_smollm2_is_a_causal_llama_with_grouped_kv():
    loaded = load_model("smollm2")  # ~20 s: de-quantises the GGUF file
    f = loaded.facts
    assert (f.kind, f.n_layers, f.n_heads, f.n_kv_heads, f.d_model) == ("decoder", 30, 9, 3, 576)
    assert f.architecture == "LlamaForCausalLM" and f.position_scheme == "rope"
    r = extract(loaded, "The cat sat on the mat.")
    import numpy as np

    assert r.attention.shape[:2] == (30, 9)
    assert np.abs(np.triu(r.attention, k=1)).max() == 0.0  # causal: no weight on later tokens
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-4)
    import torch  # the in-place capture gives eager's weights bit for bit

    assert not r.attention.flags.owndata
    ids = torch.tensor([list(r.token_ids)])
    with torch.inference_mode():
        ref = loaded.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    np.testing.assert_array_equal(r.attention, np.stack([a[0].numpy() for a in ref.attentions]))
