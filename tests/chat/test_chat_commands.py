"""The chat's ``/commands`` come from one table (cli/chat/commands.py): ``/help`` prints every
row, each row's names reach its command, and anything else is one line saying so."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fixture_project import FORMS
from formctl.cli.chat.commands import COMMANDS
from formctl.cli.chat.session import ChatOptions, ChatSession


@pytest.fixture
def chat(tmp_path):
    session = ChatSession.open(
        ChatOptions(form="travel-claim", subject="dana", offline=True, store=str(tmp_path / "s"), forms=str(FORMS))
    )
    yield session
    session.close()


def console() -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, width=200, color_system=None), text


def test_help_lists_every_command_of_the_table(chat):
    out, text = console()
    assert chat.command("/help", out) is True
    printed = text.getvalue()
    for command in COMMANDS:
        assert command.usage in printed and command.what in printed


@pytest.mark.parametrize("line", ["/quit", "/exit", "/q", "/QUIT"])
def test_every_name_of_quit_leaves(chat, line):
    out, _ = console()
    assert chat.command(line, out) is False


def test_an_unknown_command_is_one_line_on_the_error_console_and_the_chat_goes_on(chat):
    out, said = console()
    err, errors = console()
    assert chat.command("/frobnicate now", out, err) is True
    assert said.getvalue() == ""
    assert errors.getvalue() == "Unknown command /frobnicate; /help lists them.\n"


def test_a_command_before_the_form_starts_says_so_and_the_chat_goes_on(chat):
    out, _ = console()
    err, errors = console()
    assert chat.command("/undo", out, err) is True
    assert errors.getvalue() == "error: The form has not been started yet.\n"


def test_commands_act_on_the_chats_instance(chat):
    out, said = console()
    chat.send("Hello.")
    chat.send("Dana Reeve")
    assert chat.command("/undo", out) is True
    assert "undid Full name → empty" in said.getvalue()
    assert chat.command("/redo", out) is True
    assert "redid Full name → Dana Reeve" in said.getvalue()
    assert chat.command("/history full_name", out) is True
    assert "Dana Reeve" in said.getvalue().split("redid")[-1]
