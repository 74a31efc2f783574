"""Layering: the core never imports streamlit; pages never import torch or transformers."""
import re
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_core_never_imports_streamlit():
    bad = [str(p.relative_to(ROOT)) for p in (ROOT / "attnviz").rglob("*.py")
           if "ui" not in p.relative_to(ROOT / "attnviz").parts[:1] and "streamlit" in _imports(p)]
    assert bad == []


def test_pages_never_import_torch_or_transformers():
    files = list((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]
    bad = [str(p.relative_to(ROOT)) for p in files if _imports(p) & {"torch", "transformers"}]
    assert bad == []


def test_every_page_runs_inside_the_app_shell():
    files = list((ROOT / "pages").glob("*.py"))
    missing = [p.name for p in files if "ensure_app_shell()" not in p.read_text(encoding="utf-8")]
    assert missing == []


def test_every_page_file_is_in_the_navigation():
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    missing = [p.name for p in (ROOT / "pages").glob("*.py") if f'"pages/{p.name}"' not in app]
    assert missing == []


def test_settings_reach_the_url_one_way():
    """No widget is bound with Streamlit's bind="query-params": share.sync_url writes the whole URL,
    and Streamlit refuses any write to a bound parameter (the Training and Ablation tracebacks)."""
    files = list((ROOT / "pages").glob("*.py")) + list((ROOT / "attnviz").rglob("*.py")) + [ROOT / "app.py"]
    bad = [str(p.relative_to(ROOT)) for p in files
           if re.search(r"bind\s*=\s*[\"']query-params", p.read_text(encoding="utf-8"))]
    assert bad == []
