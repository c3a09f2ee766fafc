"""Sensitive values in a transcript: short and structured ones are masked everywhere, and the
transcript still replays.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, Field

from formctl import FormRegistry, define_form
from formctl.transcripts.replay import replay_file
from helpers.recording import record


class _Bank(BaseModel):
    sort_code: str
    account: str


def _card_form():
    return (
        define_form("card", name="Card")
        .step("who", title="Who")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
        .field("cvv", Annotated[str, Field(pattern=r"^\d{3}$")], label="CVV", sensitive=True)
        .field("bank", _Bank, label="Bank", sensitive=True)
        .build()
    )


def test_short_and_structured_sensitive_values_are_masked_everywhere_and_the_transcript_replays(tmp_path):
    registry = FormRegistry().register("card", name="Card", description="", load=_card_form)
    path = tmp_path / "card.toml"
    record(
        path,
        registry,
        "card",
        ["hi", "Dana Reeve", "123", "undo", "CVV: 456", '{"sort_code": "12-34-56", "account": "87654321"}'],
    )
    text = path.read_text()
    for secret in ("123", "456", "12-34-56", "87654321"):
        assert not re.search(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])", text), secret
    assert 'masked = ["bank", "cvv"]' in text
    result = replay_file(path, registry=registry)
    assert result.passed, result.diff
