"""Errors with plain messages meant to be shown to the user as they are."""


class AttnvizError(Exception):
    """Base class: str(error) is a complete sentence for the user."""


class ModelNotFound(AttnvizError):
    pass


class ModelMissing(ModelNotFound):
    """No folder, HF cache entry or reachable hub has this name. models.registry turns it into the
    message that lists what is available (the loader does not know the registry)."""

    def __init__(self, name: str):
        super().__init__(f"No model called {name!r} is available here.")
        self.name = name


class AttentionUnavailable(AttnvizError):
    pass


class BadInput(AttnvizError, ValueError):
    pass


class ModelTooLarge(ModelNotFound):
    """The model's weights would not fit in the memory available now (checked before loading)."""
