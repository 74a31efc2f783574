"""Reading plotly figures back in tests (AppTest protos and plotly 7's typed arrays)."""
from __future__ import annotations

import base64
import json

import numpy as np


def decode(values):
    """A plotly array as numpy: plain lists, or plotly 7's {"dtype", "bdata", "shape"} encoding."""
    if isinstance(values, dict) and "bdata" in values:
        arr = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
        shape = values.get("shape")
        if shape:
            shape = [int(s) for s in str(shape).split(",")] if isinstance(shape, str) else list(shape)
            arr = arr.reshape(shape)
        return arr
    return np.asarray(values)


def app_figures(at) -> list[dict]:
    """Every plotly figure on an AppTest page, as plotly JSON dicts."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
