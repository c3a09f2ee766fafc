"""pydantic's own words for a value it refuses, as this pydantic release writes them.

formctl passes the validator's message through (the host's record of an invalid value keeps it);
a test of that asserts the pass-through, not pydantic's wording, which a release may change."""

from __future__ import annotations

import json
from typing import Any


def pydantic_says(annotation: Any, value: Any) -> str:
    """The message pydantic gives for ``value`` against ``annotation``, validated as formctl
    validates a field: the value as JSON, in strict mode (formctl/forms/validate.py)."""
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(annotation).validate_json(json.dumps(value), strict=True)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"])
    raise AssertionError(f"pydantic accepts {value!r} as {annotation!r}")
