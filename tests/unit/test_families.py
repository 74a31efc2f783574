"""The family table: every row's module paths exist in a model of each type it lists, and no other module of
attnviz names a model's submodules."""
import ast
from pathlib import Path

import pytest
import torch

from attnviz.models.families import FAMILIES, VIEWS, Family, family_for_type, family_of, module_at, why_not
from attnviz.models.hf import position_scheme

ROOT = Path(__file__).resolve().parents[2]
_STACK_PARTS = ("out", "attention", "q", "k", "v", "qkv", "mlp", "norm_attn", "norm_mlp", "cross_attention",
                "cross_out")


def _meta_model(model_type: str):
    """A 2-block model of `model_type` built on the meta device (module tree only, no weights in memory)."""
    import transformers
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    for name in ("num_hidden_layers", "n_layer", "num_layers", "encoder_layers", "decoder_layers",
                 "num_decoder_layers"):
        if getattr(config, name, None) is not None:
            setattr(config, name, 2)
    auto = transformers.AutoModelForSeq2SeqLM if config.is_encoder_decoder else transformers.AutoModel
    with torch.device("meta"):
        return auto.from_config(config)


def _paths(fam: Family):
    """(where, dotted path) of every module the row names, for blocks 0 and 1."""
    for s_index, s in enumerate(fam.stacks):
        yield f"stack {s_index} blocks", s.blocks
        for part in _STACK_PARTS + ("final_norm",):
            template = getattr(s, part)
            if template:
                for i in (0, 1):
                    yield f"stack {s_index} {part}", template.format(i=i)
    for part in ("embed", "pos_embed"):
        if getattr(fam, part):
            yield part, getattr(fam, part)


HF_ROWS = [(fam.name, t) for fam in FAMILIES for t in fam.model_types if t != "ScratchTransformer"]


@pytest.mark.parametrize("name, model_type", HF_ROWS)
def test_every_row_names_modules_its_models_have(name, model_type):
    model = _meta_model(model_type)
    fam = family_for_type(model_type)
    assert family_of(model) is fam
    missing = [(where, p) for where, p in _paths(fam) if module_at(model, p) is None]
    assert missing == []
    n = len(module_at(model, fam.stack.blocks))
    assert n == 2  # the blocks path is the list of blocks
    if fam.stack.attention:  # the attention module is the one transformers calls its attention function from
        attn = module_at(model, fam.stack.attention.format(i=0))
        assert any(isinstance(getattr(attn, a, None), torch.nn.Module) for a in dir(attn) if not a.startswith("_"))
    if fam.positions in ("rope", "relative", "alibi", "sinusoidal"):
        assert position_scheme(model.config) == fam.positions, model_type


def test_the_toy_transformer_row():
    from attnviz.models.scratch import ScratchConfig, ScratchTransformer

    model = ScratchTransformer(ScratchConfig(kind="encoder-decoder", n_layers=2, n_decoder_layers=2))
    fam = family_of(model)
    assert fam.name == "attnviz toy transformer"
    assert [(w, p) for w, p in _paths(fam) if module_at(model, p) is None] == []


def test_rows_are_unique_and_say_why_not_in_sentences():
    types = [t for fam in FAMILIES for t in fam.model_types]
    assert len(types) == len(set(types))
    for fam in FAMILIES:
        assert fam.kind in ("encoder", "decoder", "encoder-decoder"), fam.name
        for view, why in fam.not_supported:
            assert view in VIEWS, (fam.name, view)
            assert why[0].isupper() and why.endswith("."), (fam.name, why)
    from tests.tiny_models import tiny_loaded

    assert why_not(tiny_loaded("t5").model, "query_key").startswith("T5 adds a learned relative position bias")
    assert why_not(tiny_loaded("llama").model, "query_key") is None


def test_a_model_of_an_unknown_layout_gets_a_sentence():
    from attnviz.errors import BadInput

    class Odd(torch.nn.Module):
        config = type("C", (), {"model_type": "odd"})()

    with pytest.raises(BadInput, match="does not know where a odd model keeps its attention blocks"):
        family_of(Odd())


# ------------------------------------------------------------------ the table is the only place naming modules
# Module names that only the family table (and the toy model that defines them) may spell out.
MODULE_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "self_attn", "out_proj", "c_attn", "c_proj", "attention.self",
                "attention.output", "SelfAttention", "EncDecAttention", "out_lin", "input_layernorm",
                "post_attention_layernorm", "embed_tokens", "lm_head", "ln_f", "wte", "wpe", "encoder.layer",
                "query_key_value", "final_layer_norm", "final_layernorm", "word_embeddings")
ALLOWED = {"attnviz/models/families.py", "attnviz/models/scratch.py"}  # the table; the toy model's definition


def _names_in_code(path: Path) -> set:
    """MODULE_NAMES found in string constants (not docstrings) and attribute names of a module's code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = set()
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Attribute):
            text = node.attr
        if text:
            found |= {name for name in MODULE_NAMES if name in text.split(".") or f".{name}" in text
                      or (name == text) or (("." in name) and name in text)}
    return found


def test_only_the_family_table_names_model_modules():
    files = {p.relative_to(ROOT).as_posix(): p for p in (ROOT / "attnviz").rglob("*.py")}
    naming = {rel for rel, p in files.items() if rel not in ALLOWED and _names_in_code(p)}
    assert naming == set(), {rel: _names_in_code(files[rel]) for rel in naming}
