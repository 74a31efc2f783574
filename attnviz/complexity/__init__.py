"""Attention cost: FLOPs and memory from a config, measured on this machine, and their figures."""
