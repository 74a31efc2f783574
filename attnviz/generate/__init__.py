"""Generation: what the model looked at as it wrote each token."""
