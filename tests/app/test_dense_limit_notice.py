"""AppTest: a text longer than the dense pages' 512 tokens, on a model whose own context is longer, says
which limit cut it and points to the Long inputs page (a tiny random Llama with a 4,096-token context,
saved to a folder and opened as "Other")."""
from tests.app.apptest import open_page
from tests.tiny_models import tiny_long_loaded


def test_dense_limit_is_named_and_the_long_page_offered(tmp_path):
    loaded = tiny_long_loaded("llama-long")
    loaded.model.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    text = " ".join(["attention"] * 700)
    at = open_page("app_pages/heatmap.py", text=text, model_choice="other", custom_model=str(tmp_path))
    msg = " ".join(i.value for i in at.info)
    assert "This page keeps every head's full map, so it reads at most 512 tokens" in msg, msg
    assert "takes 4,096" in msg and "Long inputs" in msg
    assert any("**512 tokens**" in m.value for m in at.markdown)
