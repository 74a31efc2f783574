"""Runtime: parameter estimates against real models, the memory check, torch threads, the model lock."""
from __future__ import annotations

import json
import os
import threading

import pytest
import torch

from attnviz import runtime
from attnviz.errors import ModelNotFound, ModelTooLarge
from attnviz.extract import extract
from tests.tiny_models import ARCHES, build, tiny_loaded


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("arch", ARCHES)
def test_parameter_estimate_matches_built_models(arch):
    """Counted from the config alone vs torch's count of the built model (biases and norms,
    which the estimate leaves out, weigh most in these 32-wide models: 15 % tolerance)."""
    model, _, config = build(arch)
    assert runtime.estimate_parameters(config) == pytest.approx(n_params(model), rel=0.15)


def test_parameter_estimate_of_minilm_within_two_percent(minilm):
    assert n_params(minilm.model) == pytest.approx(22.7e6, rel=0.01)
    assert runtime.estimate_parameters(minilm.model.config) == pytest.approx(n_params(minilm.model), rel=0.02)


def big_config():
    from transformers import BertConfig

    # 48 layers of width 8192: 12 * 8192^2 * 48 + 30522 * 8192 ~ 38.9 billion parameters
    return BertConfig(hidden_size=8192, num_hidden_layers=48, num_attention_heads=64, intermediate_size=4 * 8192)


def test_memory_check_refuses_a_model_that_does_not_fit():
    cfg = big_config()
    expected = 12 * 8192**2 * 48 + 30522 * 8192 + 512 * 8192
    assert runtime.estimate_parameters(cfg) == expected
    with pytest.raises(ModelTooLarge) as err:
        runtime.check_fits("huge-bert", cfg, available=16 * 10**9)
    msg = str(err.value)
    # float32: 4 bytes a parameter, plus 25 % for loading: 194.7e9 bytes = 181 GiB; 16e9 bytes = 14.9 GiB
    assert f"{expected * 4 * 1.25 / 2 ** 30:.0f} GiB of memory" in msg and "14.9 GiB is free" in msg
    assert isinstance(err.value, ModelNotFound)  # pages that catch ModelNotFound show it too


def test_memory_check_passes_when_it_fits_and_uses_dtype():
    cfg = big_config()
    params = runtime.estimate_parameters(cfg)
    runtime.check_fits("huge-bert", cfg, available=int(params * 4 * 1.25) + 1)
    cfg.dtype = "bfloat16"  # loaded in the checkpoint's dtype: 2 bytes a parameter
    assert runtime.estimate_model_bytes(cfg) == params * 2
    runtime.check_fits("huge-bert", cfg, available=int(params * 2 * 1.25) + 1)
    with pytest.raises(ModelTooLarge):
        runtime.check_fits("huge-bert", cfg, available=int(params * 2 * 1.25) - 1)


def test_weight_files_count_when_larger_than_the_config_says(tmp_path):
    from transformers import BertConfig

    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64)
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 3_000_000)
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 9_000_000)  # ignored: safetensors preferred
    assert runtime.weight_file_bytes(tmp_path) == 3_000_000
    assert runtime.estimate_model_bytes(cfg, tmp_path) == 3_000_000
    with pytest.raises(ModelTooLarge):
        runtime.check_fits("folder", cfg, tmp_path, available=3_000_000)


def test_loading_a_huge_folder_fails_before_reading_weights(tmp_path):
    """A folder with only a config.json of a 39-billion-parameter BERT: refused by the memory
    check (a plain sentence), not by a missing-weights error or the kernel's OOM killer."""
    from attnviz.models import load_model

    (tmp_path / "config.json").write_text(json.dumps({**big_config().to_dict(), "model_type": "bert"}))
    with pytest.raises(ModelTooLarge, match="GiB of memory to load"):
        load_model(str(tmp_path))


def test_available_memory_is_read():
    free = runtime.available_bytes()
    assert free is not None and 10**7 < free < 10**14


def test_threads_set_once_to_cpu_count(monkeypatch):
    n = runtime.configure_threads()
    assert n == runtime.cpu_threads() >= 1
    assert torch.get_num_threads() == n
    monkeypatch.setenv("ATTNVIZ_THREADS", "1")
    assert runtime.configure_threads() == n  # once per process: later calls change nothing


def test_numpys_blas_has_one_thread_once_threads_are_set():
    """In a new process: before configure_threads numpy's OpenBLAS has a thread per CPU (two here), after it one,
    and torch keeps its count."""
    import subprocess
    import sys

    code = ("import json, numpy, threadpoolctl, torch\n"
            "def blas():\n"
            "    return [i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']\n"
            "before = blas()\n"
            "from attnviz import runtime\n"
            "n = runtime.configure_threads()\n"
            "print(json.dumps([before, blas(), n, torch.get_num_threads()]))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["ATTNVIZ_THREADS"] = "2"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    before, after, n, torch_threads = json.loads(done.stdout.strip().splitlines()[-1])
    assert before and max(before) == 2  # numpy's own OpenBLAS: a thread per CPU
    assert after == [1] * len(before)
    assert n == torch_threads == 2


def test_the_app_holds_numpys_blas_to_one_thread_without_torch():
    """one_blas_thread (app.py's first run calls it, before any page) limits numpy's BLAS without importing torch."""
    import subprocess
    import sys

    code = ("import json, sys, numpy, threadpoolctl\n"
            "from attnviz.runtime import one_blas_thread\n"
            "one_blas_thread()\n"
            "print(json.dumps([[i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'],"
            " 'torch' in sys.modules]))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    blas, torch_imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert blas and set(blas) == {1} and not torch_imported


def test_lock_is_reentrant_so_nested_extract_does_not_deadlock():
    loaded = tiny_loaded("bert")
    done = []

    def nested():
        with loaded.lock:  # e.g. checkpoint_series holds the lock around extract()
            done.append(extract(loaded, "a short text").seq_len)

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(30)
    assert done == [5]  # [CLS] a short text [SEP]


def test_lock_serialises_forwards_across_threads():
    """8 threads extracting at once: at most one forward pass runs at any moment."""
    loaded = tiny_loaded("bert")
    inner = loaded.model.forward
    active, peak, guard = [0], [0], threading.Lock()

    def counting_forward(*a, **k):
        with guard:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            return inner(*a, **k)
        finally:
            with guard:
                active[0] -= 1

    loaded.model.forward = counting_forward
    results = [None] * 8

    def work(i):
        results[i] = extract(loaded, f"text number {i} " * 20)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(r is not None for r in results)
    assert peak[0] == 1


def test_checkpoint_series_holds_the_lock_around_extract_without_deadlock(tmp_path):
    """checkpoint_series takes loaded.lock and then calls extract(), which takes it again:
    with a plain threading.Lock this hung forever; the lock is re-entrant now."""
    from attnviz.training.checkpoints import checkpoint_series

    loaded = tiny_loaded("bert")
    loaded.model.save_pretrained(tmp_path / "step-10")
    loaded.tokenizer.save_pretrained(tmp_path / "step-10")
    runs = []
    t = threading.Thread(target=lambda: runs.append(checkpoint_series([str(tmp_path / "step-10")], "a cat")),
                         daemon=True)
    t.start()
    t.join(60)
    assert runs, "checkpoint_series did not finish within 60 s (deadlock?)"


@pytest.fixture
def two_threads(monkeypatch):
    """torch on two threads, the count the process was configured with; what a pass's hook saw, as it saw it."""
    monkeypatch.setattr(runtime, "_threads_set", 2)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    seen = []
    try:
        yield seen
    finally:
        torch.set_num_threads(before)


def _note_threads(seen):
    """A replacement at a hook point that notes torch's thread count during the pass and changes nothing."""
    return {"blocks.0.hook_resid_pre": lambda x, point: seen.append(torch.get_num_threads())}


def test_a_generation_step_runs_on_all_threads_and_the_prompt_on_one(two_threads):
    """A pass that continues from a cache holding positions (one token of a generation, which reads every weight
    for that token) runs on the process's count, however short; the prompt's pass into an empty cache is a short
    pass like any other and runs on one thread."""
    from transformers import DynamicCache

    from attnviz.models.adapter import run

    seen = two_threads
    loaded = tiny_loaded("llama")
    cache = DynamicCache(config=loaded.model.config)
    out, _ = run(loaded, {"input_ids": torch.full((1, 12), 1996), "past_key_values": cache, "use_cache": True},
                 replace=_note_threads(seen))
    assert out.past_key_values.get_seq_length() == 12
    for step in range(3):
        run(loaded, {"input_ids": torch.full((1, 1), 1997), "past_key_values": out.past_key_values,
                     "use_cache": True}, replace=_note_threads(seen))
    assert seen == [1, 2, 2, 2]
    assert out.past_key_values.get_seq_length() == 15
    assert torch.get_num_threads() == 2


def test_short_passes_run_on_one_thread_and_long_ones_on_all(two_threads):
    """A forward over at most SMALL_TOKENS tokens sees one torch thread inside, a longer one the process's
    count, and the count is the process's again after either (a hook reads it during the pass)."""
    from attnviz.models.adapter import run

    seen = two_threads
    loaded = tiny_loaded("bert")
    limit = runtime.SMALL_TOKENS
    # the tiny model takes up to 64 positions: the batch makes up the rest
    assert limit == 128
    for batch, length, expected in ((1, 12, 1), (2, 64, 1), (3, 43, 2), (4, 64, 2)):
        ids = torch.full((batch, length), 1996)
        seen.clear()
        run(loaded, {"input_ids": ids}, replace=_note_threads(seen))
        assert seen == [expected], (batch, length)
        assert torch.get_num_threads() == 2
    seen.clear()
    run(loaded, {"inputs_embeds": torch.zeros(1, 12, loaded.model.config.hidden_size)}, replace=_note_threads(seen))
    assert seen == [1]


def test_a_short_pass_of_a_large_model_runs_on_all_threads(two_threads, monkeypatch):
    """A short pass runs on one thread only while the model's weights take at most SMALL_WEIGHTS bytes: a larger
    model's short pass is bound by reading its weights, which two threads do faster. The limit is lowered to the
    tiny model's size here, and to one byte below it."""
    from attnviz.models.adapter import run

    seen = two_threads
    loaded = tiny_loaded("bert")
    size = runtime.weights_bytes(loaded.model)
    assert runtime.SMALL_WEIGHTS == 256 * 2**20 and size < runtime.SMALL_WEIGHTS
    for limit, expected in ((runtime.SMALL_WEIGHTS, 1), (size, 1), (size - 1, 2)):
        monkeypatch.setattr(runtime, "SMALL_WEIGHTS", limit)
        seen.clear()
        run(loaded, {"input_ids": torch.full((1, 12), 1996)}, replace=_note_threads(seen))
        assert seen == [expected], limit
        assert torch.get_num_threads() == 2


def test_weights_bytes_counts_a_shared_weight_once():
    """A causal model whose output layer shares the input embedding's matrix: the sum over its distinct tensors,
    each counted once whatever its dtype."""
    model = tiny_loaded("llama").model
    model.config.tie_word_embeddings = True
    model.tie_weights()
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    distinct = {t.data_ptr(): t.nelement() * 4 for t in model.state_dict().values()}
    assert runtime.weights_bytes(model) == sum(distinct.values())
    model.half()
    assert runtime.weights_bytes(model) == sum(distinct.values()) // 2
