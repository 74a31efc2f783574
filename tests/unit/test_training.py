"""Toy tasks, trainer, evolution metrics and the run file format."""
import io
import threading
import zipfile

import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.training import runs
from attnviz.training.evolution import antidiagonal_mass, frame_distance, head_entropy, settle_frames
from attnviz.training.tasks import BOS, Sampler, _codes, get_task
from attnviz.training.trainer import TrainConfig, model_from_run, snapshot_steps, train
from attnviz.models.scratch import attention_result


def test_tasks_build_the_right_targets():
    rev = get_task("reverse").make_batch(np.array([[1, 2, 3, 4, 5, 6, 7, 8]]))
    assert rev.target.tolist() == [[8, 7, 6, 5, 4, 3, 2, 1]]
    assert rev.tgt_in.tolist() == [[BOS, 8, 7, 6, 5, 4, 3, 2]]
    srt = get_task("sort").make_batch(np.array([[3, 1, 2, 9, 9, 4, 1, 5]]))
    assert srt.target.tolist() == [[1, 1, 2, 3, 4, 5, 9, 9]]
    ind = get_task("induction").make_batch(np.array([[5, 6, 7, 0, 0, 0, 0, 0]]))
    assert ind.src[0, :7].tolist() == [BOS, 5, 6, 7, 5, 6, 7]
    # counted targets: the 2nd and 3rd symbols of the second copy, predicted at positions 4 and 5
    assert np.flatnonzero(ind.loss_mask[0]).tolist() == [4, 5]
    assert ind.target[0, [4, 5]].tolist() == [6, 7]


def test_training_batches_never_contain_heldout_sequences():
    task = get_task("reverse")
    s = Sampler(task, seed=3, n_heldout=64)
    held = set(_codes(s.heldout.src, task.n_symbols + 1).tolist())
    for _ in range(20):
        assert not held & set(_codes(s.batch(256).src, task.n_symbols + 1).tolist())


def test_evolution_metrics_against_hand_values():
    n = 4
    uniform = np.full((1, 1, 1, n, n), 1 / n)
    onehot = np.broadcast_to(np.eye(n), (1, 1, 1, n, n))
    np.testing.assert_allclose(head_entropy(uniform), np.log(4), rtol=1e-9)
    np.testing.assert_allclose(head_entropy(onehot), 0.0, atol=1e-9)
    assert antidiagonal_mass(np.eye(n)[::-1]) == pytest.approx(1.0)
    assert antidiagonal_mass(np.full((n, n), 1 / n)) == pytest.approx(0.25)
    # frames: uniform, uniform, identity, identity -> settles at frame 2
    frames = np.concatenate([uniform, uniform, onehot, onehot])
    # TV distance between uniform(4) and one-hot = 1 - 1/4
    np.testing.assert_allclose(frame_distance(frames)[:, 0, 0], [0.75, 0.75, 0, 0])
    assert settle_frames(frames, 0.1).tolist() == [[2]]
    assert settle_frames(frames, 0.8).tolist() == [[0]]
    with pytest.raises(BadInput):
        head_entropy(np.ones((2, 2)))


def test_snapshot_steps():
    assert snapshot_steps(10, 4) == [0, 4, 8, 10]
    assert snapshot_steps(8, 4) == [0, 4, 8]


def test_short_run_lowers_loss_and_changes_attention():
    run = train(TrainConfig(task="reverse", steps=40, snapshot_every=10))
    assert run.frame_steps.tolist() == [0, 10, 20, 30, 40]
    assert run.loss_values[-5:].mean() < run.loss_values[:5].mean() * 0.8
    cross = run.attention["cross"]
    assert cross.shape[:3] == (5, 1, 4) and cross.shape[3:] == (8, 8)
    assert frame_distance(cross)[0].mean() > 0.05  # the first frame differs from the last
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-5)
    assert run.entropy("cross").shape == (5, 1, 4)


def test_cancel_half_way_keeps_the_run_so_far():
    stop = threading.Event()

    def cb(p):
        if p.step == 13:
            stop.set()

    run = train(TrainConfig(task="copy", steps=100, snapshot_every=5), callback=cb, cancel=stop)
    assert run.meta["completed"] is False and run.meta["steps_done"] == 13
    assert run.frame_steps.tolist() == [0, 5, 10, 13]
    assert "cancelled at step 13" in run.title


def test_save_load_round_trip(tmp_path):
    run = train(TrainConfig(task="induction", steps=10, snapshot_every=5))
    back = runs.load(runs.save(run, tmp_path / "r.npz"))
    assert back.stacks == run.stacks == ("self",)
    np.testing.assert_allclose(back.attention["self"], run.attention["self"], atol=2e-3)  # stored as float16
    np.testing.assert_array_equal(back.frame_steps, run.frame_steps)
    np.testing.assert_allclose(back.loss_values, run.loss_values)
    assert back.tokens == run.tokens and back.facts == run.facts and back.meta == run.meta
    # the weights come back: the rebuilt model reproduces the last frame's attention
    model = model_from_run(back)
    probe = get_task("induction").probe()
    res = attention_result(model, probe.src[0])
    np.testing.assert_allclose(res.attention, run.attention["self"][-1], atol=1e-5)
    # an AttentionResult per frame, for the other pages
    r0 = back.result(0)
    assert r0.attention.shape == back.attention["self"][0].shape and r0.facts.kind == "decoder"


def test_corrupt_and_foreign_files_give_plain_messages(tmp_path):
    good = runs.to_bytes(train(TrainConfig(task="reverse", steps=2, snapshot_every=1)))
    with pytest.raises(BadInput, match="not a readable .npz"):
        runs.from_bytes(b"hello, I am a text file")
    with pytest.raises(BadInput, match="not a readable .npz|damaged"):
        runs.from_bytes(good[: len(good) // 2])
    buf = io.BytesIO()
    np.savez(buf, weights=np.zeros(3))
    with pytest.raises(BadInput, match="no header"):
        runs.from_bytes(buf.getvalue())
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(b'{"format": "something-else"}', dtype=np.uint8))
    with pytest.raises(BadInput, match="another program"):
        runs.from_bytes(buf.getvalue())
    # a run with an array missing
    src = zipfile.ZipFile(io.BytesIO(good))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for item in src.namelist():
            if item != "att_cross.npy":
                dst.writestr(item, src.read(item))
    with pytest.raises(BadInput, match="damaged or incomplete"):
        runs.from_bytes(out.getvalue())
    with pytest.raises(BadInput, match="no run file"):
        runs.load(tmp_path / "missing.npz")


def test_recorded_runs_ship_for_every_task():
    shipped = runs.recorded_runs()
    for task in ("reverse", "copy", "sort", "induction"):
        assert task in shipped and shipped[task].stat().st_size < 2_000_000
        run = runs.load(shipped[task])
        assert run.n_frames >= 40 and run.meta["final_accuracy"] >= 0.99
    rev = runs.load(shipped["reverse"])
    assert antidiagonal_mass(rev.attention["cross"][-1, -1].mean(0)) >= 0.9
    assert antidiagonal_mass(rev.attention["cross"][0, -1].mean(0)) < 0.4  # untrained: no anti-diagonal


def test_bad_train_configs():
    with pytest.raises(BadInput, match="Unknown task"):
        TrainConfig(task="juggle")
    with pytest.raises(BadInput, match="at least one step"):
        TrainConfig(steps=0)
    from attnviz.models.scratch import ScratchConfig
    cfg = TrainConfig(task="induction", model=ScratchConfig(max_len=4))
    assert cfg.model_config().max_len >= get_task("induction").input_len  # positions grow to fit the task
