"""The chat's input history never keeps a value given to a sensitive field."""

from __future__ import annotations

import textwrap

from fixture_project import FORMS
from formctl.cli.chat import ChatOptions, ChatSession, _masked_history

SENSITIVE_FORM = textwrap.dedent(
    """
    from typing import Annotated
    from pydantic import Field
    from formctl import define_form

    benefit = (
        define_form("benefit", version=1, name="Benefit claim")
        .step("who", title="Who")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
        .field("ni_number", Annotated[str, Field(pattern=r"^[A-Z]{2}\\d{6}[A-D]$")],
               label="National Insurance number", sensitive=True)
        .build()
    )
    """
)


def _forms(tmp_path):
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "benefit.py").write_text(SENSITIVE_FORM)
    (forms / "registry.toml").write_text('[forms.benefit]\nname = "Benefit claim"\nmodule = "benefit:benefit"\n')
    return forms


def test_a_history_line_waits_for_its_turn_and_is_written_masked(tmp_path):
    path = tmp_path / "input_history"
    history = _masked_history(path, lambda line: line.replace("secret", "******"))
    history.append_string("my secret is here")
    assert not path.exists() or "secret" not in path.read_text()
    history.flush()
    written = path.read_text()
    assert "my ****** is here" in written
    assert "secret" not in written
    assert history.get_strings()[-1] == "my secret is here"  # recalled as typed, from memory, this run


def test_a_value_given_to_a_sensitive_field_is_masked_for_the_history(tmp_path):
    forms = _forms(tmp_path)
    session = ChatSession.open(
        ChatOptions(form="benefit", subject="s1", offline=True, store=str(tmp_path / "store"), forms=str(forms))
    )
    try:
        session.send(session.opening() or "Hello.")
        session.send("Full name: Dana Reeve; National Insurance number: QQ123456C")
        masked = session.mask_text("National Insurance number: QQ123456C, name Dana Reeve")
        assert "QQ123456C" not in masked
        assert "Dana Reeve" in masked  # only sensitive fields are masked
    finally:
        session.close()


def test_a_form_without_sensitive_fields_leaves_history_lines_alone(tmp_path):
    session = ChatSession.open(
        ChatOptions(form="travel-claim", subject="s2", offline=True, store=str(tmp_path / "store"), forms=str(FORMS))
    )
    try:
        session.send(session.opening() or "Hello.")
        session.send("Dana Reeve")
        assert session.mask_text("Dana Reeve AB1234") == "Dana Reeve AB1234"
    finally:
        session.close()
