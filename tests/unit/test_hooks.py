"""hooks.py: the mechanisms under the model adapter restore the model and find modules by path."""
import types

import pytest
import torch

from attnviz.hooks import attention_function, module_at


def test_attention_function_swaps_and_restores_even_on_error():
    a, b = types.SimpleNamespace(_attn_implementation="eager"), types.SimpleNamespace(_attn_implementation="sdpa")
    with pytest.raises(RuntimeError):
        with attention_function([a, b, a], "mine"):
            assert (a._attn_implementation, b._attn_implementation) == ("mine", "mine")
            raise RuntimeError
    assert (a._attn_implementation, b._attn_implementation) == ("eager", "sdpa")


def test_module_at_reads_dotted_paths_from_the_base_model_then_the_model():
    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Module()
            self.body.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 3)])
            self.head = torch.nn.Linear(3, 1)

        @property
        def base_model(self):
            return self.body

    m = Wrapper()
    assert module_at(m, "layers.1") is m.body.layers[1]  # from the base model
    assert module_at(m, "head") is m.head  # from the model itself
    assert module_at(m, "layers.2") is None and module_at(m, "nothing.here") is None
