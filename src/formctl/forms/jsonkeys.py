"""A record's optional keys in its JSON: written when set, left out while None.

Stored records (a revision's provenance, an executor's run, a host's resolution, a goal item's
progress) keep their documents small and their older readers working by leaving out every
optional key that holds nothing. :func:`set_keys` is that rule, written once.
"""

from __future__ import annotations

from formctl.json_types import JsonObject, JsonValue

__all__ = ["set_keys"]


def set_keys(**values: JsonValue) -> JsonObject:
    """The keys given a value other than None, in the order given (so a document reads the same)."""
    return {key: value for key, value in values.items() if value is not None}
