"""Attention over image patches: data that ships, patches, a small vision transformer, HF ViT loading, figures."""
