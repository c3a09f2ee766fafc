"""``formctl store check`` and ``formctl store reindex``."""

from typing import Any, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, store_app
from formctl.cli.options import JsonOpt, StoreOpt


@store_app.command("check", cls=_Command, epilog=_example("formctl store check --store ./.formctl"))
def store_check(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Check every instance file and the index.

    Changes nothing. Exits 1 unless all is well.
    """
    from formctl.cli.workspace import open_store

    _require_store(store)
    _store_report(open_store(store).check().to_dict(), as_json)


@store_app.command("reindex", cls=_Command, epilog=_example("formctl store reindex"))
def store_reindex(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Rebuild the index from the instance files.

    Corrupt files are reported, never touched.
    """
    from formctl.cli.workspace import open_store

    _require_store(store)
    _store_report(open_store(store).reindex().to_dict(), as_json)


def _require_store(store: Optional[str]) -> None:
    """Check and repair act on a store that exists: on a mistyped path, check reported a
    missing index and 'run formctl store reindex', and reindex created an empty store there."""
    from formctl.cli.workspace import store_path

    if not store_path(store).exists():
        _fail(f"No form store at {store_path(store)}: nothing has been saved there (--store DIR or FORMCTL_STORE).")


def _store_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _print_json(report)
    else:
        from formctl.cli import render

        render.print_store_report(report)
    if not report["ok"]:
        raise typer.Exit(1)

