"""Long inputs: queries and keys recorded in one efficient pass, maps recomputed on demand,
blockwise summaries, pooled grids and the attention-sinks experiment, without holding every n x n map."""
