"""AppTest of the Vision page: a ViT from a folder shows every view with the model's own numbers, a text model's
folder is refused plainly, the vision transformer trains on the Training page and opens on the Vision page."""
import numpy as np
import pytest
import torch
from PIL import Image

from tests.app.apptest import open_page
from tests.app.test_training_page import _wait_for_job
from tests.figures import app_figures, decode
from tests.tiny_models import saved_vision


def _titled(at, start: str) -> dict:
    figs = [f for f in app_figures(at) if f["layout"].get("title", {}).get("text", "").startswith(start)]
    assert len(figs) == 1, [f["layout"].get("title", {}).get("text") for f in app_figures(at)]
    return figs[0]


@pytest.fixture(scope="module")
def vit_folder(tmp_path_factory):
    return saved_vision(tmp_path_factory.mktemp("vit") / "tiny-vit")


def test_a_vit_folder_shows_every_view_with_its_own_numbers(vit_folder):
    from transformers import ViTModel

    from attnviz.vision.data import image_set

    at = open_page("app_pages/vision.py", vi_source="ViT from a folder", vi_folder=str(vit_folder), vi_index=3)
    assert not at.warning
    grid = _titled(at, "Every head")
    markers = grid["data"][1]
    assert len(decode(markers["x"])) == 2 * 4  # one click target per head
    assert grid["data"][0]["source"].startswith("data:image/png;base64,")
    assert "z" not in grid["data"][0]
    # the distance figure against the model's own output_attentions on the same held-out digit
    digit = image_set("digits").split(0)[2][3, 0]
    image = np.asarray(Image.fromarray(digit, mode="F").resize((32, 32), Image.Resampling.BILINEAR))
    image = np.repeat(np.clip(image, 0, 1)[None], 3, axis=0)
    model = ViTModel.from_pretrained(vit_folder, attn_implementation="eager").eval()
    with torch.no_grad():
        att = model(pixel_values=torch.from_numpy((image[None] - 0.5) / 0.5), output_attentions=True).attentions
    a = np.stack([x[0].numpy() for x in att])  # (layer, head, 17, 17)
    centres = np.array([[(k // 4 + 0.5) * 8, (k % 4 + 0.5) * 8] for k in range(16)])
    dist = np.sqrt(((centres[:, None] - centres[None]) ** 2).sum(-1))
    w = a[:, :, 1:, 1:]
    want = ((w * dist).sum(-1) / w.sum(-1)).mean(-1)  # (layer, head)
    distance = _titled(at, "Mean attention distance")
    for h, trace in enumerate(distance["data"]):
        assert np.allclose(decode(trace["y"]), want[:, h], atol=1e-4)
    # rollout and flow are drawn, and the page names the model
    _titled(at, "Rollout")
    _titled(at, "Attention flow")
    _titled(at, "Similarity of the position embeddings")
    assert any("ViTModel" in c.value for c in at.caption)


def test_a_text_model_folder_is_refused_plainly(tmp_path):
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                         intermediate_size=64)).save_pretrained(tmp_path / "bert")
    at = open_page("app_pages/vision.py", vi_source="ViT from a folder", vi_folder=str(tmp_path / "bert"))
    assert [w.value for w in at.warning] == [
        "bert is a bert model, which reads text, not images. The Vision page needs an image model: a ViT or DeiT "
        "(vit, deit)."]
    assert not app_figures(at)


def test_the_vision_transformer_trains_on_the_training_page_and_opens_on_the_vision_page():
    at = open_page("app_pages/training.py", tr_source="Images (ViT)")
    at.number_input(key="tr_vit_steps").set_value(40)
    at.button(key="tr_vit_train").click().run()
    assert not at.exception
    _wait_for_job(at, timeout=300)
    at.run()
    assert not at.exception
    run = at.session_state["tr_runs"]["vision"]
    assert run.source == "vision" and list(run.frame_steps) == [0, 25, 40]
    assert run.attention["self"].shape == (3, 2, 4, 17, 17)
    at.select_slider(key="tr_frame").set_value(1).run()
    at.button(key="tr_share").click().run()
    assert not at.exception
    assert at.session_state["training_vision"][1] == 1
    at.switch_page("app_pages/vision.py").run()
    assert not at.exception, at.exception
    assert any("the step chosen on the Training page" in c.value for c in at.caption)
    snap = _titled(at, "step 25")
    assert snap["data"][0]["source"].startswith("data:image/png;base64,")
    grid = _titled(at, "Every head")
    assert len(decode(grid["data"][1]["x"])) == 2 * 4
