"""Positional encodings: sinusoidal, learned (read from a model), RoPE, ALiBi, and why they matter."""
from attnviz.positional.alibi import (
    alibi_attention, alibi_bias, alibi_slopes, content_scores, paper_slopes, power_of_two_below,
)
from attnviz.positional.comparison import comparison_rows
from attnviz.positional.equivariance import EquivarianceReport, permutation_demo
from attnviz.positional.learned import LearnedPositions, NoPositionEmbeddings, position_embeddings, vector_norms
from attnviz.positional.rope import (
    apply_rope, offset_scores, position_scores, random_query_key, relative_property_error, rope_angles,
    rope_attention_demo, rope_frequencies, rope_matrix, score_decay,
)
from attnviz.positional.sinusoidal import (
    MAX_DIM, MAX_LENGTH, check_even_dim, check_length, cosine_similarity, offset_profile, sample_positions,
    shift_matrix, shift_prediction, shift_property_error, sinusoidal, sinusoidal_frequencies,
)

__all__ = [
    "MAX_DIM", "MAX_LENGTH", "EquivarianceReport", "LearnedPositions", "NoPositionEmbeddings", "alibi_attention", "alibi_bias", "alibi_slopes",
    "apply_rope", "check_even_dim", "check_length", "comparison_rows", "content_scores", "cosine_similarity",
    "offset_profile", "offset_scores", "paper_slopes", "permutation_demo", "position_embeddings",
    "position_scores", "power_of_two_below", "random_query_key", "relative_property_error",
    "rope_angles", "rope_attention_demo", "rope_frequencies", "rope_matrix", "sample_positions", "score_decay",
    "shift_matrix", "shift_prediction", "shift_property_error", "sinusoidal", "sinusoidal_frequencies", "vector_norms",
]
