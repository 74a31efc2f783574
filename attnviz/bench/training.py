"""Training figures: the default reverse-task run (accuracy, seconds, snapshots, anti-diagonal)."""
from __future__ import annotations


def figures(quick: bool = False) -> dict[str, float]:
    """Train the default reverse task once (same run with or without `quick`; it takes seconds).

    reverse_accuracy: greedy token accuracy on 512 held-out sequences never trained on;
    reverse_train_seconds: wall time of training, snapshots and evaluations included;
    reverse_snapshots: attention snapshots recorded;
    reverse_antidiagonal_mass: share of the last decoder layer's cross-attention (averaged
    over heads) on the anti-diagonal, on the probe, at the end of training;
    finetune_seconds / finetune_accuracy (not with `quick`): the packaged BERT fine-tuned with
    the page's default settings, snapshots included, and its held-out accuracy.
    """
    from attnviz.training.evolution import antidiagonal_mass
    from attnviz.training.trainer import TrainConfig, train

    run = train(TrainConfig(task="reverse"), keep_weights=False)
    cross = run.attention["cross"][-1, -1].mean(axis=0)  # last frame, last decoder layer, mean of heads
    out = {
        "reverse_accuracy": float(run.meta["final_accuracy"]),
        "reverse_train_seconds": float(run.meta["seconds"]),
        "reverse_snapshots": float(run.n_frames),
        "reverse_antidiagonal_mass": antidiagonal_mass(cross),
    }
    if not quick:  # fine-tuning the packaged BERT with its default settings (goal <= 45 s)
        from attnviz.training.finetune import FinetuneConfig, finetune

        tuned = finetune(FinetuneConfig())
        out["finetune_seconds"] = float(tuned.meta["seconds"])
        out["finetune_accuracy"] = float(tuned.meta["final_accuracy"])
    return out


if __name__ == "__main__":
    print(figures())
