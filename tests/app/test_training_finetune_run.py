"""The Training page's fine-tuning source: the shipped run opens at once with the default settings, its accuracy
curve rising over the run, and its time shown with the machine's load when it was measured."""
import json

from tests.app.apptest import open_page
from tests.figures import decode


def test_the_recorded_fine_tuning_run_shows_its_curve_and_how_its_time_was_measured():
    at = open_page("app_pages/training.py")
    at.segmented_control(key="tr_source").set_value("Fine-tune BERT").run()
    assert not at.exception, at.exception
    run = at.session_state["tr_runs"]["finetune"]
    assert at.select_slider(key="tr_ft_lr").value == run.meta["finetune"]["lr"] == 1e-5
    notes = [c.value for c in at.caption if c.value.startswith("Took ")]
    assert notes and f"load average {run.meta['load_average']:.1f} on {run.meta['cpu_count']} cores" in notes[0]
    seconds = next(m for m in at.metric if m.label == "Seconds")
    assert seconds.value == f"{run.meta['seconds']:,.1f}"
    # the accuracy curve on the page: below 60% at first, 99% only after a third of the steps
    curves = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "tr_curves" in c.proto.id)
    acc = next(t for t in curves["data"] if "accuracy" in str(t.get("name", "")).lower())
    x, y = decode(acc["x"]).astype(float), decode(acc["y"]).astype(float)
    assert y[0] < 0.6 and x[y >= 0.99].min() >= 40
