"""Head analytics: entropy, rollout, head-role scores, ablation and comparison (pure numpy + hooks)."""
from attnviz.metrics.entropy import head_entropy, row_entropy
from attnviz.metrics.roles import ROLES, result_role_scores, role_scores
from attnviz.metrics.rollout import contributions, rollout

__all__ = ["ROLES", "contributions", "head_entropy", "result_role_scores", "role_scores", "rollout", "row_entropy"]
