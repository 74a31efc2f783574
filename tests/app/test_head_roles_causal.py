"""Head roles on a causal model (a tiny random GPT-2 opened as a model folder, with the [CLS]/[SEP] tokenizer
of MiniLM): the role map, the top-heads lists and the definitions hold only the roles a causal head can have,
and the page says which roles it leaves out and why."""
import json

import pytest

from tests.app.apptest import open_page


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    from tests.tiny_models import tiny_loaded

    loaded = tiny_loaded("gpt2")
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return str(folder)


def _legend(at) -> list[str]:
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if "Strongest role of each head" in str((spec["layout"].get("title") or {}).get("text", "")):
            return [t["name"] for t in spec["data"] if t.get("name") and t.get("showlegend", True) is not False]
    raise AssertionError("no role map on the page")


def test_head_roles_on_a_causal_model_lists_only_the_roles_it_can_have(gpt2_folder):
    at = open_page("app_pages/head_roles.py", model_choice="other", custom_model=gpt2_folder)
    legend = _legend(at)
    assert legend == ["no clear role", "self", "previous token", "broad", "punctuation", "first-token sink"]
    shown = " ".join(m.value for m in at.markdown)
    for label in ("attends to [CLS]", "attends to [SEP]", "next token"):
        assert f"**{label}**:" not in shown and f"**{label}**\n" not in shown, label
    left_out = [c.value for c in at.caption if c.value.startswith("Not shown:")]
    assert left_out and all(x in left_out[0] for x in ("**attends to [CLS]**", "**attends to [SEP]**",
                                                         "**next token** (a causal model cannot attend"))


def test_head_roles_on_an_encoder_keeps_the_cls_and_sep_roles(minilm):
    at = open_page("app_pages/head_roles.py")
    assert _legend(at) == ["no clear role", "attends to [CLS]", "attends to [SEP]", "self", "previous token",
                           "next token", "broad", "punctuation", "first-token sink"]
    assert not [c.value for c in at.caption if c.value.startswith("Not shown:")]
