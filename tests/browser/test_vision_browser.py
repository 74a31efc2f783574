"""Chromium: train the vision transformer on the Training page, open it on the Vision page, open a head from the
grid of overlays and click a patch to look from it; upload a picture (and a file that is not one) to the shipped
model; open a tiny random ViT from a folder and check its figures against the model's own attention."""
import re
import time

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from tests.browser.helpers import click_marker, exception_texts, nav_to, plot_index, wait_plot
from tests.conftest import ARTIFACTS, wait_for_app
from tests.tiny_models import saved_vision

pytestmark = pytest.mark.browser

TITLE = "(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullLayout.title.text"
SOURCE = "(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].source"


def test_train_then_open_a_head_and_click_a_patch(page, app_server):
    page.goto(app_server.url + "/training")
    wait_for_app(page)
    group = page.locator('[data-testid="stButtonGroup"]').filter(has=page.locator('[aria-label="What to watch"]'))
    group.get_by_role("radio", name="Images (ViT)").click()
    wait_for_app(page)
    steps = page.get_by_label("Steps", exact=True)
    steps.fill("40")
    steps.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="▶ Train the vision transformer").click()
    page.get_by_text("Training:").first.wait_for(timeout=60_000)  # the live progress bar
    wait_plot(page, title="mean of heads · step 40", timeout=300)
    wait_for_app(page)
    page.get_by_role("button", name="Use this step on the other pages").click()
    wait_for_app(page)

    nav_to(page, "Vision", section="Inspect")
    grid = wait_plot(page, title="Every head")
    assert page.evaluate(SOURCE, grid).startswith("data:image/png;base64,")  # a picture, not numbers
    assert page.get_by_text("the step chosen on the Training page").count() >= 1
    # open layer 0, head 2: its thumbnail's centre in the grid (96-pixel thumbnails, 6-pixel gaps)
    click_marker(page, grid, 6 + 2 * 102 + 48, 6 + 48)
    head = wait_plot(page, title="Layer 0, head 2: where [CLS] looks")
    # click patch (row 1, column 2) of the 240-pixel overlay (16 patches of 60 pixels)
    click_marker(page, head, 2.5 * 60, 1.5 * 60)
    wait_plot(page, title="Layer 0, head 2: where r1c2 looks")
    assert page.get_by_role("button", name="Look from [CLS] again").count() == 1


# ------------------------------------------------------------------ an uploaded picture, a ViT from a folder

TRACES = """(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData.map(t => ({
    x: t.x ? Array.from(t.x) : null, y: t.y ? Array.from(t.y) : null,
    text: t.hovertext ? Array.from(t.hovertext) : null,
    custom: t.customdata ? Array.from(t.customdata, c => (c && c.length !== undefined) ? Array.from(c) : c).flat() : null}))"""


def _traces(page, index: int) -> list[dict]:
    return page.evaluate(TRACES, index)


def _heads(page, grid: int) -> list[tuple[int, int]]:
    """(layer, head) of every click target in the grid of overlays, in the order of its markers."""
    return [tuple(map(int, c)) for c in np.reshape(_traces(page, grid)[1]["custom"], (-1, 2))]


def _patch_weights(page, index: int) -> np.ndarray:
    """The per-patch numbers of an overlay, read from its markers' hover texts ("weight 0.1234", "share ...")."""
    texts = _traces(page, index)[1]["text"]
    return np.array([float(re.search(r"<br>[a-z ]+ ([-0-9.e+naif]+)<br>", t).group(1)) for t in texts])


def _choose(page, key: str, option: str):
    """Pick `option` in the segmented control whose widget key is `key`."""
    page.locator(f".st-key-{key}").get_by_role("radio", name=option, exact=True).click()
    time.sleep(0.3)
    wait_for_app(page)


def _open_head(page, layer: int, head: int) -> int:
    """Click head (layer, head) in the grid of overlays; the index of the open head's figure."""
    grid = wait_plot(page, title="Every head")
    markers = _traces(page, grid)[1]
    k = _heads(page, grid).index((layer, head))
    click_marker(page, grid, markers["x"][k], markers["y"][k])
    return wait_plot(page, title=f"Layer {layer}, head {head}: where [CLS] looks")


def _screenshot(page, name: str, *below: str):
    """The page as it is, then scrolled to each figure titled `below` (Streamlit scrolls inside the page, so
    one screenshot shows one screenful)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"vision-{name}.png"))
    for k, title in enumerate(below, 1):
        page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i].scrollIntoView({block: 'start'})",
                      plot_index(page, title=title))
        time.sleep(0.3)
        page.screenshot(path=str(ARTIFACTS / f"vision-{name}-{k}.png"))


def _kept_on_cls(page) -> float:
    """The weight the open head's [CLS] keeps on itself, as the caption under the head states it."""
    text = page.get_by_text("The weight [CLS] keeps on the first token(s)").first.inner_text()
    return float(re.search(r"is ([0-9.]+)", text).group(1))


def _heads_side_by_side(distance: list[dict], n_layers: int):
    """The distance figure has one point per layer in each head's trace, labelled by its layer and drawn within
    half a step of the layer's tick, the heads of a layer apart from left to right."""
    assert all(t["custom"] == list(range(n_layers)) for t in distance)
    x = np.array([t["x"] for t in distance])  # (head, layer)
    assert np.all(np.abs(x - np.arange(n_layers)) < 0.5) and np.all(np.diff(x, axis=0) > 0)


def test_an_uploaded_picture_is_converted_and_every_view_drawn(page, app_server, tmp_path):
    picture = Image.new("RGB", (200, 150), "white")  # a dark "7" on white paper, wider than tall
    pen = ImageDraw.Draw(picture)
    pen.line([(60, 30), (140, 30), (95, 130)], fill=(25, 25, 40), width=16)
    picture.save(tmp_path / "seven.png")
    page.goto(app_server.url + "/vision")
    wait_for_app(page)
    _choose(page, "vi_image", "Upload")
    page.locator(".st-key-vi_upload input[type=file]").set_input_files(str(tmp_path / "seven.png"))
    wait_plot(page, title="Every head")
    wait_for_app(page)
    grid = wait_plot(page, title="Every head")  # its index once the page has settled
    for note in ("It was turned into gray levels: this model reads one channel.",
                 "It was resized from 200 x 150 to 16 x 16 pixels, the size the model reads.",
                 "Its light background was inverted to dark, like the training images."):
        assert page.get_by_text(note, exact=True).count() == 1, note
    assert page.get_by_text("the run shipped with attnviz").count() >= 1
    heads = _heads(page, grid)  # one click target per head of the shipped run
    n_layers, n_heads = 1 + max(l for l, _ in heads), 1 + max(h for _, h in heads)
    assert sorted(heads) == [(l, h) for l in range(n_layers) for h in range(n_heads)]

    head = _open_head(page, 0, 1)
    w = _patch_weights(page, head)
    assert w.shape == (16,) and np.all(np.isfinite(w)) and w.min() >= 0
    assert abs(w.sum() + _kept_on_cls(page) - 1) < 16 * 5e-5 + 5e-4  # one softmax row: the patches and [CLS]
    rolled = _patch_weights(page, wait_plot(page, title="Rollout"))
    assert rolled.shape == (16,) and np.all(np.isfinite(rolled)) and rolled.min() >= 0 and 0 < rolled.sum() <= 1
    distance = _traces(page, wait_plot(page, title="Mean attention distance"))
    _heads_side_by_side(distance, n_layers)
    d = np.array([t["y"] for t in distance])
    # between two patch centres of a 16 x 16 image in 4 x 4 patches: from 0 to the diagonal, 12 * sqrt(2)
    assert np.all(np.isfinite(d)) and d.min() > 0 and d.max() < 12 * np.sqrt(2)
    assert exception_texts(page) == []
    _screenshot(page, "upload", "Rollout", "Mean attention distance")

    (tmp_path / "notes.png").write_bytes(b"these are notes, not a picture\n")
    page.locator(".st-key-vi_upload input[type=file]").set_input_files(str(tmp_path / "notes.png"))
    warning = page.locator('[data-testid="stAlert"]').filter(has_text="notes.png")
    warning.first.wait_for()
    wait_for_app(page)
    assert warning.first.inner_text().strip() == \
        "'notes.png' is not an image that can be read here. Upload a PNG or JPEG file."
    assert exception_texts(page) == [] and page.get_by_text("Traceback").count() == 0
    assert plot_index(page, title="Every head") == -1  # no views over a file that is not an image
    _screenshot(page, "upload-not-an-image")


def test_a_tiny_vit_from_a_folder_draws_its_own_attention(page, app_server, tmp_path):
    from transformers import ViTModel

    from attnviz.vision.data import image_set

    folder = saved_vision(tmp_path / "tiny-vit")
    model = ViTModel.from_pretrained(folder, attn_implementation="eager").eval()
    digit = image_set("digits").split(0)[2][0, 0]  # held-out image 0, what the page opens on
    image = np.asarray(Image.fromarray(digit, mode="F").resize((32, 32), Image.Resampling.BILINEAR))
    image = np.repeat(np.clip(image, 0, 1)[None], 3, axis=0)
    with torch.no_grad():
        out = model(pixel_values=torch.from_numpy((image[None] - 0.5) / 0.5), output_attentions=True)
    a = np.stack([x[0].numpy() for x in out.attentions]).astype(np.float64)  # (layer 2, head 4, 17, 17)

    page.goto(app_server.url + "/vision")
    wait_for_app(page)
    _choose(page, "vi_source", "ViT from a folder")
    box = page.locator(".st-key-vi_folder input")
    box.fill(str(folder))
    box.press("Enter")
    wait_plot(page, title="Every head")
    wait_for_app(page)
    grid = wait_plot(page, title="Every head")  # its index once the page has settled
    assert "tiny-vit" in page.get_by_text("ViTModel from").first.inner_text()
    assert sorted(_heads(page, grid)) == [(l, h) for l in range(2) for h in range(4)]

    head = _open_head(page, 0, 2)
    assert np.allclose(_patch_weights(page, head), a[0, 2, 0, 1:], atol=5.1e-5)  # hover texts have 4 decimals
    assert abs(_kept_on_cls(page) - a[0, 2, 0, 0]) < 5.1e-4
    # rollout by hand: each layer's mean of heads, half identity, rows renormalised, multiplied up the layers
    product = np.eye(17)
    for layer in a:
        m = 0.5 * layer.mean(0) + 0.5 * np.eye(17)
        product = (m / m.sum(-1, keepdims=True)) @ product
    assert np.allclose(_patch_weights(page, wait_plot(page, title="Rollout")), product[0, 1:], atol=5.1e-5)
    distance = _traces(page, wait_plot(page, title="Mean attention distance"))
    assert len(distance) == 4
    _heads_side_by_side(distance, 2)
    assert np.all(np.isfinite([t["y"] for t in distance]))
    assert plot_index(page, title="Attention flow") >= 0 and plot_index(page, title="Similarity of the position") >= 0
    assert exception_texts(page) == []
    _screenshot(page, "vit-folder", "Rollout", "Mean attention distance")
