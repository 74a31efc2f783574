"""Attention over image patches: patches and positions against straightforward loops, rollout on patches against
the text rollout and an independent product, the shipped image sets, uploaded images, HF ViT/DeiT folders."""
import io

import numpy as np
import pytest
import torch
from PIL import Image

from attnviz.errors import AttnvizError, BadInput
from attnviz.metrics.rollout import rollout
from attnviz.vision.data import image_set, shapes, upsample
from attnviz.vision.patches import PatchGrid, attention_distance, patchify, position_similarity, read_image
from attnviz.vision.views import head_row, patch_flow, patch_rollout
from tests.tiny_models import saved_vision


def _random_attention(rng, shape):
    a = rng.random(shape) ** 3
    return (a / a.sum(-1, keepdims=True)).astype(np.float32)


def test_patches_are_cut_in_row_major_order_as_a_loop_cuts_them():
    rng = np.random.default_rng(0)
    images = rng.random((3, 2, 8, 12)).astype(np.float32)
    got = patchify(images, 4)
    assert got.shape == (3, 6, 2 * 16)
    for n in range(3):
        k = 0
        for r in range(2):
            for c in range(3):
                want = [images[n, ch, r * 4 + y, c * 4 + x] for ch in range(2) for y in range(4) for x in range(4)]
                assert np.array_equal(got[n, k], want)
                k += 1
    from attnviz.vision.model import VisionTransformer, VitConfig

    model = VisionTransformer(VitConfig(image_size=16, patch=4, channels=1))
    x = rng.random((2, 1, 16, 16)).astype(np.float32)
    assert np.array_equal(model.patches(torch.from_numpy(x)).numpy(), patchify(x, 4))


def test_patch_positions_centres_and_distances_by_hand():
    g = PatchGrid(8, 12, 4)
    assert (g.rows, g.cols, g.n) == (2, 3, 6)
    assert g.row_col().tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert g.centres()[4].tolist() == [6.0, 6.0]
    d = g.distances()
    assert d[0, 1] == 4.0 and d[0, 2] == 8.0 and d[0, 3] == 4.0
    assert d[0, 5] == pytest.approx(np.hypot(4, 8))
    with pytest.raises(BadInput, match="cannot be cut into whole 5 x 5 patches"):
        PatchGrid(16, 16, 5)


def test_attention_distance_equals_a_loop():
    rng = np.random.default_rng(1)
    g = PatchGrid(12, 12, 4)
    a = _random_attention(rng, (2, 3, 1 + g.n, 1 + g.n))
    got = attention_distance(a, g)
    c = g.centres()
    for l in range(2):
        for h in range(3):
            per_query = []
            for i in range(g.n):
                w = a[l, h, 1 + i, 1:]
                dist = [np.hypot(*(c[i] - c[j])) for j in range(g.n)]
                per_query.append(float(np.dot(w, dist) / w.sum()))
            assert got[l, h] == pytest.approx(np.mean(per_query), rel=1e-6)
    # one head that looks only at itself is at distance 0; one that looks only at the opposite corner, at the diagonal
    one = np.zeros((1, 2, 1 + g.n, 1 + g.n), dtype=np.float32)
    one[0, 0, :, :] = np.eye(1 + g.n)
    one[0, 1, :, 1 + g.n - 1] = 1.0
    d = attention_distance(one, g)
    assert d[0, 0] == 0.0
    assert d[0, 1] == pytest.approx(np.mean([np.hypot(*(c[i] - c[-1])) for i in range(g.n)]))


def test_rollout_on_patches_is_the_text_rollout_and_an_independent_product():
    rng = np.random.default_rng(2)
    a = _random_attention(rng, (3, 4, 17, 17))
    for fusion in ("mean", "max", "min"):
        assert np.allclose(patch_rollout(a, head_fusion=fusion, discard_ratio=0.3),
                           rollout(a, head_fusion=fusion, discard_ratio=0.3)[-1, 0, 1:])
    # an independent product: fuse by the mean, add half the identity, renormalise rows, multiply
    r = np.eye(17)
    for layer in range(3):
        m = 0.5 * a[layer].astype(np.float64).mean(0) + 0.5 * np.eye(17)
        m /= m.sum(-1, keepdims=True)
        r = m @ r
    assert np.allclose(patch_rollout(a), r[0, 1:], atol=1e-6)
    # flow from [CLS] is a share per patch, at most the whole
    f = patch_flow(a)
    assert f.shape == (16,) and 0 < f.sum() <= 1 + 1e-6


def test_head_row_reads_one_row_and_the_mean_of_heads():
    rng = np.random.default_rng(3)
    a = _random_attention(rng, (2, 3, 5, 5))
    assert np.array_equal(head_row(a, 1, 2, 3), a[1, 2, 3, 1:])
    assert np.allclose(head_row(a, 0, None, 0), a[0, :, 0, 1:].mean(0))
    with pytest.raises(BadInput, match="2 layers of 3 heads"):
        head_row(a, 2, 0, 0)


def test_position_similarity_is_the_cosine():
    t = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    s = position_similarity(t)
    assert s[0, 1] == 0.0 and s[0, 0] == pytest.approx(1.0) and s[0, 2] == pytest.approx(1 / np.sqrt(2))


def test_digits_ship_upsampled_and_split_apart():
    data = image_set("digits")
    x_train, y_train, x_held, y_held = data.split(0)
    assert x_train.shape[1:] == (1, 16, 16) and len(y_train) + len(y_held) == 1797
    assert len(y_held) == 359
    from sklearn.datasets import load_digits

    raw = load_digits()
    assert np.array_equal(data.make()[0][5, 0, ::2, ::2], raw.images[5] / 16.0)
    assert np.array_equal(upsample(np.array([[1, 2]]), 2), [[1, 1, 2, 2], [1, 1, 2, 2]])
    # no held-out image is a training image
    train_set = {x.tobytes() for x in x_train}
    assert sum(x.tobytes() in train_set for x in x_held) <= 3  # the set itself holds a few exact duplicates


def test_the_shapes_label_is_where_the_square_is():
    images, labels = shapes(200, seed=3)
    for img, label in zip(images[:, 0], labels):
        cells = img.reshape(4, 4, 4, 4).transpose(0, 2, 1, 3)  # (row, col, y, x) of the 4 x 4 cells
        used = np.argwhere(cells.sum((2, 3)) > 0)
        assert len(used) == 2
        corner = [cells[r, c, 0, 0] for r, c in used]  # a square outline fills its corner; a plus does not
        square, plus = (used[0], used[1]) if corner[0] else (used[1], used[0])
        assert cells[square[0], square[1], 1:3, 1:3].sum() == 0 and cells[plus[0], plus[1], 1:3, 1:3].all()
        assert label == int(square[1] < plus[1])
    assert 0.3 < labels.mean() < 0.7


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def test_uploaded_images_are_converted_and_the_page_says_how():
    rgba = Image.new("RGBA", (32, 32), (255, 0, 0, 128))
    read = read_image(_png(rgba), "red.png", (16, 16), 3)
    assert read.pixels.shape == (3, 16, 16)
    # half-transparent red over white: 255, and 255 - 128 * 255 / 255 = 127 for green and blue
    assert read.pixels[:, 0, 0] * 255 == pytest.approx([255, 127, 127], abs=1)
    assert any("transparency" in n for n in read.notes) and any("resized from 32 x 32 to 16 x 16" in n
                                                                  for n in read.notes)
    gray = Image.new("L", (16, 16), 200)
    read = read_image(_png(gray), "gray.png", (16, 16), 3)
    assert np.allclose(read.pixels, 200 / 255) and any("grayscale" in n for n in read.notes)
    light = read_image(_png(gray), "gray.png", (16, 16), 1, invert_light=True)
    assert np.allclose(light.pixels, 1 - 200 / 255) and any("inverted" in n for n in light.notes)


def test_bad_image_files_are_plain_messages():
    with pytest.raises(BadInput, match="'notes.txt' is not an image that can be read here. Upload a PNG or JPEG"):
        read_image(b"just some text", "notes.txt", (16, 16), 1)
    with pytest.raises(BadInput, match="'empty.png' is empty"):
        read_image(b"", "empty.png", (16, 16), 1)
    huge = _png(Image.new("1", (8000, 6000)))
    with pytest.raises(BadInput, match="'huge.png' is 8,000 x 6,000 pixels, more than 40 million"):
        read_image(huge, "huge.png", (16, 16), 1)
    with pytest.raises(BadInput, match="damaged or truncated"):
        read_image(_png(Image.new("L", (64, 64), 3))[:60], "cut.png", (16, 16), 1)


def _saved(tmp_path, kind: str):
    return saved_vision(tmp_path / kind, kind)


@pytest.mark.parametrize("kind, n_prefix", [("vit", 1), ("deit", 2)])
def test_a_vit_from_a_folder_records_what_output_attentions_returns(tmp_path, kind, n_prefix):
    from attnviz.vision.hf import hf_attention, load_vision_model, position_table

    vm = load_vision_model(str(_saved(tmp_path, kind)))
    assert vm.n_prefix == n_prefix and vm.grid.n == 16 and vm.tokens[n_prefix] == "r0c0"
    assert vm.loaded.model.config._attn_implementation == "eager"
    image = np.random.default_rng(4).random((3, 32, 32)).astype(np.float32)
    got = hf_attention(vm, image)
    assert got.shape == (2, 4, n_prefix + 16, n_prefix + 16)
    with torch.no_grad():
        out = vm.loaded.model(pixel_values=torch.from_numpy((image[None] - 0.5) / 0.5), output_attentions=True)
    want = np.stack([a[0].numpy() for a in out.attentions])
    assert np.allclose(got, want, atol=1e-6)
    table = position_table(vm)
    pos = [p for n, p in vm.loaded.model.named_parameters() if n.endswith("position_embeddings")][0]
    assert np.array_equal(table, pos[0, n_prefix:].detach().numpy())


def test_a_text_model_or_a_missing_folder_is_refused_plainly(tmp_path):
    from attnviz.vision.hf import load_vision_model

    with pytest.raises(BadInput, match="is a bert model, which reads text, not images"):
        load_vision_model(str(_saved(tmp_path, "bert")))
    with pytest.raises(AttnvizError, match="There is no folder"):
        load_vision_model(str(tmp_path / "nowhere"))


@pytest.mark.slow
def test_training_reaches_the_accuracy_goal_at_the_default_seed():
    from attnviz.vision.train import VitTrainConfig, train_vit, vit_from_run, predict

    run = train_vit(VitTrainConfig())
    assert run.meta["final_accuracy"] >= 0.97
    # the saved weights rebuild the model that scored it
    _, _, x_held, y_held = image_set("digits").split(0)
    assert float((predict(vit_from_run(run), x_held) == y_held).mean()) == run.meta["final_accuracy"]
    assert run.attention["self"].shape == (run.n_frames, 2, 4, 17, 17)
