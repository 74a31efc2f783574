"""Which parts of a causal language model cause a behaviour: prompt pairs, activation patching, direct logit
attribution and attribution patching."""
