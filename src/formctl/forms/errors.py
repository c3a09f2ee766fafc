"""The engine's errors; defined, with every other formctl error, in :mod:`formctl.errors`."""

from formctl.errors import (
    ConflictError,
    FormBlockedError,
    FormDefinitionError,
    FormError,
    FormStaleError,
    InvalidArgumentError,
    NotFoundError,
    NotReadyError,
    ProvenanceError,
    StoreDamagedError,
    StoreError,
    UnknownFormError,
)

__all__ = [
    "ConflictError",
    "FormBlockedError",
    "FormDefinitionError",
    "FormError",
    "FormStaleError",
    "InvalidArgumentError",
    "NotFoundError",
    "NotReadyError",
    "ProvenanceError",
    "StoreDamagedError",
    "StoreError",
    "UnknownFormError",
]
