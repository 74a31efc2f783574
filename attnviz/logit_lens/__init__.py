"""The logit lens: each layer's next-token guess read through the final norm and the unembedding."""
