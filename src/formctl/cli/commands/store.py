"""``formctl store check``, ``formctl store reindex`` and ``formctl store repair``."""

from typing import Any, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, store_app
from formctl.cli.options import InstanceArg, JsonOpt, StoreOpt


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


@store_app.command("repair", cls=_Command, epilog=_example(
    "formctl store repair form_mx230koo_lwhzx5 --as 'Sam Jones'",
    "formctl store check   # then: all is well again"))
def store_repair(
    instance_id: InstanceArg,
    by: Optional[str] = typer.Option(None, "--as", metavar="NAME", help="Who accepts the loss [default: your login name]."),
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Accept the loss of a damaged instance's missing answers, so it can be written again.

    When an instance's files hold fewer versions than the store acknowledged (a cut or
    emptied journal, a corrupt record), reads show what is left and warn, and writes are
    refused. This records in the instance that those versions were lost, when and by whom,
    keeps a copy of the damaged files beside them (instances/ID.damaged-TIME/), and lets
    writes resume.
    """
    from formctl.cli.workspace import default_subject, open_store

    _require_store(store)
    done = open_store(store).repair(instance_id, by=by or default_subject())
    if done is None:
        if as_json:
            _print_json({"instance_id": instance_id, "repaired": False})
        else:
            typer.echo(f"{instance_id} is not damaged: nothing to repair.")
        return
    if as_json:
        _print_json({**done.to_dict(), "repaired": True})
        return
    from formctl.store.damage import versions_text

    what = f"{versions_text(done.lost, 'was')} lost"
    typer.echo(f"Repaired {instance_id}: {what} ({done.reason}).")
    typer.echo(f"Recorded as accepted by {done.by} at {done.at}; the damaged files are kept in {done.kept}.")
    typer.echo(f"Writes resume at version {done.version}.")


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

