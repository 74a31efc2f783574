"""attnviz.units: one unit convention (binary bytes, decimal FLOPs), one dtype table, checked by hand."""
import pytest

from attnviz.errors import BadInput
from attnviz.units import (DTYPE_ALIASES, DTYPE_BYTES, canonical_dtype, dtype_bytes, dtype_label, human_bytes,
                           human_count, human_flops, human_ratio)


@pytest.mark.parametrize("n, text", [
    (0, "0 B"),
    (512, "512 B"),
    (1023, "1,023 B"),
    (1024, "1 KiB"),
    (1536, "1.5 KiB"),  # 1536 / 1024
    (512 * 512 * 2, "512 KiB"),  # one BERT head's 512 x 512 fp16 scores
    (18_874_368, "18 MiB"),  # BERT-base KV cache at 512 tokens: 36,864 x 512 = 18 x 2^20
    (47_185_920, "45 MiB"),  # SmolLM2 at 2048 tokens in fp16: 45 x 2^20
    (2 ** 30, "1 GiB"),
    (10 ** 9, "954 MiB"),  # 1e9 / 2^20 = 953.67
    (2 * 10 ** 10, "18.6 GiB"),  # 2e10 / 2^30 = 18.63
    (2 * 10 ** 12, "1.82 TiB"),  # 2e12 / 2^40 = 1.819
    (1023.7 * 1024, "1 MiB"),  # rounds to 1024 KiB: shown in the next unit
    (150 * 2 ** 20, "150 MiB"),
])
def test_bytes_are_binary(n, text):
    assert human_bytes(n) == text


@pytest.mark.parametrize("n, text", [
    (7, "7 FLOP"),
    (9.66e9, "9.66 GFLOP"),
    (9_663_676_416, "9.66 GFLOP"),  # BERT-base attention core at 512 tokens: 4 x 512^2 x 768 x 12
    (2.5e15, "2.5 PFLOP"),
    (999_600_000, "1 GFLOP"),
    (1e12, "1 TFLOP"),
])
def test_flops_are_decimal(n, text):
    assert human_flops(n) == text


def test_counts_and_ratios():
    assert human_count(1e10) == "10 billion"
    assert human_count(262_144) == "262 thousand"
    assert human_count(999) == "999"
    assert human_ratio(130.2) == "130×" and human_ratio(0.1667) == "0.17×" and human_ratio(1300) == "1,300×"


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf")])
def test_formatters_refuse_nonsense(bad):
    with pytest.raises(BadInput):
        human_bytes(bad)


def test_one_dtype_table_with_aliases():
    assert dtype_bytes("float32") == dtype_bytes("fp32") == dtype_bytes("float") == 4
    assert dtype_bytes("torch.bfloat16") == dtype_bytes("bf16") == dtype_bytes("float16") == dtype_bytes("half") == 2
    assert dtype_bytes("fp8") == dtype_bytes("int8") == 1 and dtype_bytes("float64") == 8
    assert canonical_dtype("FP16") == "float16"
    assert all(target in DTYPE_BYTES for target in DTYPE_ALIASES.values())
    assert dtype_label("fp16") == "fp16 (2 B)" and dtype_label("float32") == "float32 (4 B)"
    with pytest.raises(BadInput, match="Unknown dtype"):
        dtype_bytes("float13")
    assert dtype_bytes("float13", default=4) == 4


def test_fixed_list_prints_every_number_with_its_decimals():
    import numpy as np

    from attnviz.units import fixed_list

    assert fixed_list([0.27406, 0.2741, 0.45186]) == "0.2741, 0.2741, 0.4519"
    assert fixed_list(np.array([5.71119, -1.0, 1e-7], dtype=np.float32)) == "5.7112, -1.0000, 0.0000"
    assert fixed_list([1 / 3, 2], digits=2) == "0.33, 2.00"
    assert fixed_list([]) == ""
