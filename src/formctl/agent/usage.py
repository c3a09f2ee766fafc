"""Tokens a conversation has cost: what the Messages API reports with every reply, added up.

Four figures, as the API names them: ``input_tokens`` (read afresh), ``output_tokens``,
``cache_read_input_tokens`` (read from the prompt cache, billed at a fraction) and
``cache_creation_input_tokens`` (written to it, billed at a premium). A model that reports
nothing (the guided and scripted models run offline) leaves every figure at zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(slots=True)
class Usage:
    """The running total of a conversation's token counts."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, reply_usage: Mapping[str, int]) -> None:
        """Add one reply's counts (unknown keys and values that are not whole numbers are ignored)."""
        for key in KEYS:
            value = reply_usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                setattr(self, key, getattr(self, key) + value)

    def __bool__(self) -> bool:
        return any(getattr(self, key) for key in KEYS)

    def to_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in KEYS}

    @classmethod
    def from_dict(cls, data: Mapping[str, int]) -> Usage:
        usage = cls()
        usage.add(data)
        return usage

    def line(self) -> str:
        """One line for a person: ``tokens: 12,345 in, 678 out, 10,240 cache reads, 1,024 cache writes``."""
        return (
            f"tokens: {self.input_tokens:,} in, {self.output_tokens:,} out, "
            f"{self.cache_read_input_tokens:,} cache reads, {self.cache_creation_input_tokens:,} cache writes"
        )
