"""Model loading: a registry of packaged offline models plus any HF hub id or local folder."""
from attnviz.models.registry import DEFAULT_MODEL, LoadedModel, available_models, load_model

__all__ = ["DEFAULT_MODEL", "LoadedModel", "available_models", "load_model"]
