"""The browser bench: `--browser` runs only its figures, and its texts have the sizes its figure names say."""
import json

from attnviz.bench import browser, run


def test_browser_flag_runs_only_the_browser_figures(monkeypatch, capsys):
    asked = []

    def fake_collect(quick, modules):
        asked.append((quick, modules))
        return {"browser_ref_ms": 412.5}

    monkeypatch.setattr(run, "collect", fake_collect)
    run.main(["--browser", "--quick", "--json"])
    assert asked == [(True, ["attnviz.bench.browser"])]
    assert json.loads(capsys.readouterr().out) == {"browser_ref_ms": 412.5}
    run.main([])
    assert asked[-1] == (False, None)


def test_short_texts_are_16_tokens_and_each_is_new(minilm):
    texts = [browser.short_text(i) for i in range(len(browser.ANIMALS))]
    assert len(set(texts)) == len(texts) == 13
    assert {len(minilm.tokenizer(t)["input_ids"]) for t in texts} == {16}


def test_long_inputs_fill_minilms_512_tokens_and_differ_at_the_start(minilm):
    a, b = browser.long_input(0), browser.long_input(1)
    assert len(minilm.tokenizer(a)["input_ids"]) > 512
    ids_a, ids_b = (minilm.tokenizer(t, truncation=True, max_length=512)["input_ids"] for t in (a, b))
    assert len(ids_a) == len(ids_b) == 512 and ids_a[1] != ids_b[1] and ids_a[2:] == ids_b[2:]


def test_wire_bytes_are_what_a_connection_from_the_port_sent():
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            conn, _ = server.accept()
            with conn:
                before = browser.wire_sent(port)
                conn.sendall(b"x" * 100_000)
                got = 0
                while got < 100_000:
                    got += len(client.recv(65536))
                after = browser.wire_sent(port)
    assert before is not None and len(after) == 1 and browser.wire_delta(before, after) == 100_000
