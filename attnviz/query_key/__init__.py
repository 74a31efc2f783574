"""The query · key view: one attention row rebuilt from the model's own q and k, and its figures."""
