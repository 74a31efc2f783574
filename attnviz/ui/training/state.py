"""Training evolution, shared parts: the runs of this session by slot and the names of attention stacks."""
from __future__ import annotations

import streamlit as st


POSITIONAL_LABELS = {"learned": "learned", "sinusoidal": "sinusoidal", "rope": "RoPE", "alibi": "ALiBi", "none": "none"}
SHORT_LABELS = {"self": "encoder self-attention", "decoder": "decoder self-attention", "cross": "cross-attention"}
STACK_LABELS = {"self": "encoder self-attention", "decoder": "decoder self-attention (causal)",
                "cross": "cross-attention (decoder → encoder)"}


def stack_label(kind: str, stack: str, short: bool = False) -> str:
    """Name of an attention stack for a model kind ("self" of a causal decoder is causal)."""
    if stack == "self" and kind != "encoder-decoder":
        return "causal self-attention" if kind == "decoder" else "self-attention"
    return (SHORT_LABELS if short else STACK_LABELS).get(stack, stack)


def runs() -> dict:
    """This session's runs by slot ("toy:reverse", "finetune", "checkpoints", "file")."""
    return st.session_state.setdefault("tr_runs", {})
