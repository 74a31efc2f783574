"""Bad inputs of the core (rows of docs/bad-inputs.md): each gives a plain sentence."""
from __future__ import annotations

import pytest

from attnviz.errors import BadInput, ModelNotFound
from attnviz.extract import extract
from attnviz.metrics import head_entropy
from tests.tiny_models import tiny_loaded


@pytest.fixture(scope="module")
def tiny_bert():
    return tiny_loaded("bert")


@pytest.mark.parametrize("text", ["\x00\x07\x1b", "\u200b\ufeff\u202e", "\x85\u2028 \u3000"])
def test_control_and_invisible_characters_only_count_as_empty(tiny_bert, text):
    with pytest.raises(BadInput, match="The text is empty"):
        extract(tiny_bert, text)


def test_blank_second_sentence_is_ignored_not_an_error(tiny_bert):
    r = extract(tiny_bert, "the cat sat", "   \t")
    assert r.text_pair is None and not r.is_pair
    assert r.tokens == ("[CLS]", "the", "cat", "sat", "[SEP]")  # one [SEP]: no empty segment B
    assert set(r.segment_ids.tolist()) == {0}


def test_model_path_that_is_a_file(tmp_path):
    from attnviz.models import load_model

    f = tmp_path / "model.safetensors"
    f.write_bytes(b"\0")
    with pytest.raises(ModelNotFound, match="is a file, not a model folder"):
        load_model(str(f))


def test_entropy_without_special_rows_of_a_special_only_text(tiny_bert):
    r = extract(tiny_bert, "\u0301")  # the uncased tokenizer strips the accent: [CLS] [SEP]
    assert r.tokens == ("[CLS]", "[SEP]")
    assert head_entropy(r)["head_nats"].shape == (2, 4)  # with the special rows: fine
    with pytest.raises(BadInput, match="only special tokens"):
        head_entropy(r, include_special=False)


def test_too_many_checkpoints_and_none():
    from attnviz.training.checkpoints import MAX_CHECKPOINTS, parse_series

    with pytest.raises(BadInput, match=f"25 checkpoints is too many to load in turn; give at most {MAX_CHECKPOINTS}"):
        parse_series("\n".join(f"m{i}" for i in range(25)))
    with pytest.raises(BadInput, match="List at least one checkpoint"):
        parse_series("# only a comment\n , ,")
