"""Fine-tuning the packaged BERT and checkpoint series of saved tiny models."""
import numpy as np
import pytest
import torch

from attnviz.errors import BadInput, ModelNotFound
from attnviz.training.checkpoints import checkpoint_series, parse_series
from attnviz.training.evolution import frame_distance
from attnviz.training.finetune import FinetuneConfig, finetune, template_sentences


def test_template_sentences_are_labelled_and_heldout_is_separate():
    train, held, probe = template_sentences()
    assert ("the movie was good .", 1) in train and ("the movie was not good .", 0) in train
    assert ("the movie was not awful .", 1) in train
    assert not {s for s, _ in train} & {s for s, _ in held}
    assert probe


def test_finetuning_a_few_steps_changes_attention_but_not_the_shared_model(minilm):
    before = {k: v.clone() for k, v in minilm.model.state_dict().items()}
    run = finetune(FinetuneConfig(steps=6, snapshot_every=3, lr=3e-4), loaded=minilm)
    assert run.frame_steps.tolist() == [0, 3, 6]
    att = run.attention["self"]
    assert att.shape[1:3] == (6, 12)
    assert frame_distance(att)[0].max() > 0.01  # some head moved
    after = minilm.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # the shared model is untouched
    assert run.tokens[0] == "[CLS]"


def _tiny_bert(folder, seed, tokenizer):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def test_checkpoint_series_of_two_saved_models_gives_two_frames(tmp_path, minilm):
    a, b = tmp_path / "checkpoint-100", tmp_path / "checkpoint-200"
    _tiny_bert(a, 0, minilm.tokenizer)
    _tiny_bert(b, 1, minilm.tokenizer)
    specs = parse_series(f"{a}\n{b}  # the later one")
    seen = []
    run = checkpoint_series(specs, "the cat sat", callback=lambda i, n, s: seen.append((i, n)))
    assert seen == [(0, 2), (1, 2)]
    assert run.n_frames == 2 and run.frame_steps.tolist() == [100, 200]
    assert run.frame_labels == ("checkpoint-100", "checkpoint-200")
    assert run.attention["self"].shape == (2, 2, 2, 5, 5)  # [CLS] the cat sat [SEP]
    assert frame_distance(run.attention["self"])[0].mean() > 0  # different weights, different attention
    assert np.isnan(run.frame_loss).all()


def test_checkpoint_series_bad_input(tmp_path):
    with pytest.raises(BadInput, match="at least one checkpoint"):
        parse_series("  \n # nothing\n")
    with pytest.raises(ModelNotFound, match="Checkpoint 1"):
        checkpoint_series([str(tmp_path / "nope")], "hi")
