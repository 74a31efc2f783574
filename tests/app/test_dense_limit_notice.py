"""AppTest: a text longer than the dense pages' 512 tokens, on a model whose own context is longer, says
which limit cut it and points to the Long inputs page, on every page that keeps full maps (a tiny random
Llama with a 4,096-token context, saved to a folder and opened as "Other")."""
import pytest

from attnviz.ui.registry import page as registry_page
from tests.app.apptest import open_page
from tests.tiny_models import tiny_long_loaded

# every Inspect and Analyse page that reads the sidebar's text through the dense cap
DENSE_PAGES = ("heatmap", "query_key", "entropy", "rollout", "head_roles", "contributions", "logit_lens", "compare")


@pytest.fixture(scope="module")
def long_model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama-long")
    loaded = tiny_long_loaded("llama-long")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def test_the_dense_pages_are_in_the_registry():
    assert len(DENSE_PAGES) == 8
    for name in DENSE_PAGES:
        assert registry_page(name).section in ("Inspect", "Analyse")


@pytest.mark.parametrize("name", DENSE_PAGES)
def test_dense_limit_is_named_and_the_long_page_offered(name, long_model_folder):
    text = " ".join(["attention"] * 700)
    at = open_page(f"app_pages/{name}.py", text=text, model_choice="other", custom_model=str(long_model_folder))
    msg = " ".join(i.value for i in at.info)
    assert "The text is 702 tokens long" in msg and "reads at most 512 tokens" in msg, msg
    assert "takes 4,096" in msg and "Long inputs" in msg
    if name == "heatmap":
        assert any("**512 tokens**" in m.value for m in at.markdown)
