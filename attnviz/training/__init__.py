"""Training-time attention: toy tasks, a snapshotting trainer, recorded runs, fine-tuning, checkpoints."""
