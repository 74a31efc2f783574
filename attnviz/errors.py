"""Errors with plain messages meant to be shown to the user as they are."""


class AttnvizError(Exception):
    """Base class: str(error) is a complete sentence for the user."""


class ModelNotFound(AttnvizError):
    pass


class AttentionUnavailable(AttnvizError):
    pass


class BadInput(AttnvizError, ValueError):
    pass


class ModelTooLarge(ModelNotFound):
    """The model's weights would not fit in the memory available now (checked before loading)."""
