"""``--debug`` holds for the one command it is given to: a host that runs several formctl commands
in one process (through ``formctl.cli.app.main`` or the typer app) gets the next command's errors
as one line again, as a shell's next command does."""

from __future__ import annotations

import pytest

from formctl.errors import FormError

MISSING = "form_nothere_abcdef"


def test_after_a_debug_command_the_next_commands_error_is_one_line_again(cli):
    debug = cli("--debug", "inspect", MISSING)
    assert isinstance(debug.exception, FormError)  # let through, for its traceback

    plain = cli("inspect", MISSING)

    assert plain.exit_code == 1 and not isinstance(plain.exception, FormError)
    assert plain.stderr.startswith("error: ") and plain.stderr.count("\n") == 1, plain.stderr


def test_main_with_debug_anywhere_then_without(cli, monkeypatch, capsys):
    from formctl.cli import app

    for name, value in cli.env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(FormError):
        app.main(["inspect", MISSING, "--debug"])
    capsys.readouterr()

    with pytest.raises(SystemExit) as exited:
        app.main(["inspect", MISSING])

    err = capsys.readouterr().err
    assert exited.value.code == 1
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
