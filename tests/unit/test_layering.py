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


def _full_imports(path: Path) -> set[str]:
    """Every imported module name in full (a.b.c), at module level and inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_core_never_imports_streamlit():
    """Only attnviz/ui/ imports streamlit."""
    bad = [str(p.relative_to(ROOT)) for p in (ROOT / "attnviz").rglob("*.py")
           if "ui" not in p.relative_to(ROOT / "attnviz").parts[:1] and "streamlit" in _imports(p)]
    assert bad == []


def test_pages_never_import_torch_or_transformers():
    files = list((ROOT / "app_pages").glob("*.py")) + [ROOT / "app.py"]
    bad = [str(p.relative_to(ROOT)) for p in files if _imports(p) & {"torch", "transformers"}]
    assert bad == []


def test_every_page_file_is_in_the_registry():
    from attnviz.ui.registry import PAGES

    files = sorted(f"app_pages/{p.name}" for p in (ROOT / "app_pages").glob("*.py"))
    assert files == sorted(spec.file for spec in PAGES)
    assert not (ROOT / "pages").exists()  # Streamlit's legacy multipage mode stays off


def test_settings_reach_the_url_one_way():
    """No widget is bound with Streamlit's bind="query-params": share.sync_url writes the whole URL,
    and Streamlit refuses any write to a bound parameter (the Training and Ablation tracebacks)."""
    files = list((ROOT / "app_pages").glob("*.py")) + list((ROOT / "attnviz").rglob("*.py")) + [ROOT / "app.py"]
    bad = [str(p.relative_to(ROOT)) for p in files
           if re.search(r"bind\s*=\s*[\"']query-params", p.read_text(encoding="utf-8"))]
    assert bad == []


def test_tools_stay_beside_the_app():
    """The class simulator and the replica launcher (tools/) are not part of the app: nothing in the app
    imports them; only the bench's load figures drive them."""
    users = sorted(str(p.relative_to(ROOT)) for p in [*(ROOT / "attnviz").rglob("*.py"), *(ROOT / "app_pages").glob("*.py"),
                                                      ROOT / "app.py"]
                   if any(m == "tools" or m.startswith("tools.") for m in _full_imports(p)))
    assert users and all(u.startswith("attnviz/bench/") for u in users), users


# ------------------------------------------------------------------ the layout
FOUNDATION = {"__init__", "cli", "types", "errors", "examples", "runtime", "units", "attention", "hooks", "extract", "compiled",
              "vecmath",
              "capture", "export", "plotting", "progress", "timings"}
FEATURES = {"models", "heatmap", "query_key", "metrics", "lab", "positional", "complexity", "training", "bench", "ui",
            "contrib", "attribution", "logit_lens", "decks", "words", "long", "atlas", "vision", "generate", "causal"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in (ROOT / "attnviz").rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _attnviz_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The attnviz modules `path` imports (module level and inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            while n and n not in modules:
                n = n.rpartition(".")[0]
            if n.startswith("attnviz"):
                out.add(n)
    return out


def test_no_import_cycles():
    modules = _modules()
    graph = {m: _attnviz_imports(p, modules) - {m} for m, p in modules.items()}
    for m in list(graph):  # a package's __init__ is not an edge back from its own modules
        graph[m] = {d for d in graph[m] if not m.startswith(d + ".")}
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_root_of_the_package_holds_only_the_foundation():
    root = {p.stem for p in (ROOT / "attnviz").glob("*.py")}
    folders = {p.name for p in (ROOT / "attnviz").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert root <= FOUNDATION, root - FOUNDATION
    assert folders <= FEATURES, folders - FEATURES


def test_each_feature_has_one_figures_module_and_only_figures_import_plotly():
    for folder in FEATURES - {"ui", "bench", "models", "decks", "words"}:  # these draw no figures
        assert (ROOT / "attnviz" / folder / "figures.py").exists(), folder
    bad = [str(p.relative_to(ROOT)) for p in (ROOT / "attnviz").rglob("*.py")
           if "plotly" in _imports(p) and p.name != "figures.py" and p.relative_to(ROOT).as_posix() not in
           ("attnviz/plotting.py", "attnviz/export.py")]
    assert bad == []
    pages = [p.name for p in (ROOT / "app_pages").glob("*.py") if "plotly" in _imports(p)]
    assert pages == []  # pages draw figures that a feature's figures.py built


def test_streamlit_caches_live_in_ui_cache():
    files = list((ROOT / "app_pages").glob("*.py")) + list((ROOT / "attnviz").rglob("*.py")) + [ROOT / "app.py"]
    bad = [str(p.relative_to(ROOT)) for p in files if p.name != "cache.py"
           and re.search(r"st\.cache_(data|resource)", p.read_text(encoding="utf-8"))]
    assert bad == []


def test_each_page_uses_at_most_one_feature_folder():
    modules = _modules()
    for p in (ROOT / "app_pages").glob("*.py"):
        used = {m.split(".")[1] for m in _attnviz_imports(p, modules) if m.count(".") >= 1}
        assert len(used & (FEATURES - {"ui"})) <= 1, (p.name, sorted(used))


def test_pages_stay_short():
    long = {p.name: n for p in (ROOT / "app_pages").glob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 200}
    assert long == {}
