"""hooks.py: the one mechanism capture, query·key recording and ablation use; both kinds restore the model."""
import types

import pytest
import torch

from attnviz.hooks import HOOK_POINTS, attention_function, pre_hooks


def test_attention_function_swaps_and_restores_even_on_error():
    a, b = types.SimpleNamespace(_attn_implementation="eager"), types.SimpleNamespace(_attn_implementation="sdpa")
    with pytest.raises(RuntimeError):
        with attention_function([a, b, a], "mine"):
            assert (a._attn_implementation, b._attn_implementation) == ("mine", "mine")
            raise RuntimeError
    assert (a._attn_implementation, b._attn_implementation) == ("eager", "sdpa")


def test_pre_hooks_change_the_input_then_go_away():
    lin = torch.nn.Linear(4, 1, bias=False)
    torch.nn.init.ones_(lin.weight)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    zero_first_half = lambda module, args: (args[0] * torch.tensor([0.0, 0.0, 1.0, 1.0]),)  # noqa: E731
    with pre_hooks([(lin, zero_first_half)]):
        assert float(lin(x)) == 7.0  # 3 + 4
    assert float(lin(x)) == 10.0 and not lin._forward_pre_hooks
    assert set(HOOK_POINTS) == {"attn.pattern", "attn.q", "attn.k", "attn.head_out"}
