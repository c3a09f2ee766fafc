"""``formctl store check``, ``reindex``, ``repair``, ``init`` and ``copy``."""

import sys
from typing import TYPE_CHECKING, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, store_app
from formctl.cli.options import InstanceArg, JsonOpt, StoreOpt
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.cli.workspace import CopyReport, Tally


@store_app.command("check", cls=_Command, epilog=_example("formctl store check --store ./.formctl"))
def store_check(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Check that every instance reads back whole (the files and the index, or the database's rows).

    Changes nothing. Exits 1 unless all is well.
    """
    from formctl.cli.workspace import open_maintained_store

    _require_store(store)
    _store_report(open_maintained_store(store).check().to_dict(), as_json)


@store_app.command("reindex", cls=_Command, epilog=_example("formctl store reindex"))
def store_reindex(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Rebuild the index from the instance files.

    Corrupt files are reported, never touched.
    """
    from formctl.cli.workspace import open_maintained_store

    _require_store(store)
    _store_report(open_maintained_store(store).reindex().to_dict(), as_json)


@store_app.command(
    "repair",
    cls=_Command,
    epilog=_example(
        "formctl store repair form_mx230koo_lwhzx5 --as 'Sam Jones'", "formctl store check   # then: all is well again"
    ),
)
def store_repair(
    instance_id: InstanceArg,
    by: Optional[str] = typer.Option(
        None, "--as", metavar="NAME", help="Who accepts the loss [default: your login name]."
    ),
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
    from formctl.cli.workspace import default_subject, open_maintained_store

    _require_store(store)
    done = open_maintained_store(store).repair(instance_id, by=by or default_subject())
    if done is None:
        if as_json:
            _print_json({"instance_id": instance_id, "repaired": False})
        else:
            typer.echo(f"{instance_id} is not damaged: nothing to repair.")
        return
    if as_json:
        _print_json({**done.to_dict(), "repaired": True})
        return
    from formctl.cli.workspace import versions_text

    what = f"{versions_text(done.lost, 'was')} lost"
    typer.echo(f"Repaired {instance_id}: {what} ({done.reason}).")
    typer.echo(f"Recorded as accepted by {done.by} at {done.at}; the damaged files are kept in {done.kept}.")
    typer.echo(f"Writes resume at version {done.version}.")


@store_app.command(
    "init", cls=_Command, epilog=_example("formctl store init --store postgresql://forms@db.example.com/forms")
)
def store_init(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Create the store, ready to use: the tables of a PostgreSQL store, or a store folder.

    Safe to run again: an existing store is left as it is (an older PostgreSQL schema is
    upgraded, a missing version record recorded again). For PostgreSQL nothing else creates
    a table: run it once as the role that owns the schema, and again after upgrading formctl.
    """
    from formctl.cli.workspace import init_store, store_name

    name = store_name(store)
    existed = store_path_exists(store)
    before, after = init_store(store)
    if before is not None and after is not None:  # a database store: its schema versions
        what = (
            "tables created"
            if before == 0
            else f"schema upgraded from version {before}"
            if before < after
            else "already set up"
        )
    else:
        what = "already set up" if existed else "folder created"
    if as_json:
        _print_json({"store": name, "result": what, "schema_version": after})
    else:
        typer.echo(f"{name}: {what}" + (f" (schema version {after})." if after else "."))


@store_app.command(
    "copy",
    cls=_Command,
    epilog=_example(
        "formctl store copy --from .formctl --to postgresql://forms@db.example.com/forms",
        "formctl store copy --from .formctl --to postgresql://forms@db.example.com/forms   # again: only what changed",
        "formctl store copy --from postgresql://forms@db.example.com/forms --to backup/   # a backup you can read",
    ),
)
def store_copy(
    source: str = typer.Option(..., "--from", metavar="STORE", help="The store to copy from (a folder or a DSN)."),
    target: str = typer.Option(..., "--to", metavar="STORE", help="The store to copy into (a DSN or a folder)."),
    as_json: JsonOpt = False,
) -> None:
    """Copy everything a team stores into another store, then verify.

    Every instance with its whole history, the chats' conversations and the goal programs
    (every version, and their hooks' receipts). Either way round: a folder into a PostgreSQL
    database (moving a team over), or a database into a folder (a backup a person can read).
    Ids, versions, timestamps and every revision of every answer arrive as they were.
    Run it again and it copies only what changed in the source since (later answers, turns
    and versions are added to the copy, never written over it); a record written in the
    target since is left alone, and one written on both sides is reported with what differs
    and not copied. Then everything is read back and compared with the source, and store
    check runs on both. Exits 1 unless all of it was copied and verified. Ctrl-C stops
    between batches: what landed is whole, and the same command goes on.
    """
    from formctl.cli.workspace import copy_store, is_database, open_store, store_name, store_path

    if not is_database(source) and not store_path_exists(source):
        _fail(f"No form store at {store_name(source)}: nothing to copy.")
    same = source == target if is_database(source) else store_path(source).resolve() == store_path(target).resolve()
    if same:
        _fail(f"--from and --to are the same store ({store_name(source)}): nothing to copy.", 2)
    try:
        report = copy_store(
            open_store(source), open_store(target), source_name=store_name(source), target_name=store_name(target)
        )
    except KeyboardInterrupt:
        sys.stderr.write(
            "Interrupted: what was copied so far is kept (each batch lands whole or not at all); "
            "run the same command again to go on.\n"
        )
        raise typer.Exit(130) from None
    if as_json:
        _print_json(report.to_dict())
    else:
        _print_copy(report)
    if not report.verified:
        raise typer.Exit(1)


def _print_copy(report: "CopyReport") -> None:
    """What ``store copy`` did, in words: the counts, what it left alone, what it did not copy and why, the verdict."""
    instances = report.instances
    typer.echo(
        f"{report.source} -> {report.target}: {instances.total} instance(s); {len(instances.copied)} copied, "
        f"{len(instances.updated)} brought up to date, {len(instances.same)} already there."
    )
    for tally, noun in ((report.conversations, "conversation(s)"), (report.goals, "goal program(s)")):
        if tally.total or tally.unreadable:
            typer.echo(
                f"{tally.total} {noun}; {len(tally.copied)} copied, {len(tally.updated)} brought up to date, "
                f"{len(tally.same)} already there."
            )
    if instances.newer:
        typer.echo(
            f"note: {len(instances.newer)} written in the target since the last copy, and holding everything the "
            "source has, left alone: " + ", ".join(instances.newer)
        )
    for tally, noun in ((report.conversations, "conversation(s)"), (report.goals, "goal program(s)")):
        if tally.newer:
            typer.echo(
                f"note: {len(tally.newer)} {noun} went on in the target since, left alone: " + ", ".join(tally.newer)
            )
    _print_not_copied(instances)
    _print_not_copied(report.conversations, "conversation of ", ".")
    _print_not_copied(report.goals, "goal program ", ".")
    for line in report.problems:
        typer.echo(f"problem: {line}", err=True)
    _print_copy_verdict(report)


def _print_not_copied(tally: "Tally", noun: str = "", end: str = "") -> None:
    """On stderr, what a copy left behind of one kind and why: ``noun`` says what the keys are
    (an instance id needs no word), ``end`` closes a refusal's reason (an instance's is the target's own words)."""
    for key, why in tally.diverged.items():
        typer.echo(f"not copied (diverged): {noun}{key}: {why}.", err=True)
    for key, why in tally.refused.items():
        typer.echo(f"not copied: {noun}{key}: {why}{end}", err=True)
    for line in tally.unreadable:
        typer.echo(f"not copied (damaged in the source): {line}", err=True)
    for key in tally.mismatched:
        typer.echo(f"MISMATCH: {noun}{key} reads back different from the source.", err=True)


def _print_copy_verdict(report: "CopyReport") -> None:
    """The last line: verified, or only diverged ones left to settle by hand, or not verified."""
    tallies = (report.instances, report.conversations, report.goals)
    counts = zip((len(t.diverged) for t in tallies), ("instance(s)", "conversation(s)", "goal program(s)"))
    diverged = ", ".join(f"{n} {noun}" for n, noun in counts if n)
    others = report.problems or any(t.refused or t.unreadable or t.mismatched for t in tallies)
    if report.verified:
        typer.echo("Verified: everything reads back identical, and store check is ok on both sides.")
    elif diverged and not others:
        typer.echo(
            f"{diverged} not copied: written on both sides (above); everything else "
            "was copied and reads back identical. Settle them by hand (formctl history ID, or formctl program "
            "history, on each side), then run the copy again.",
            err=True,
        )
    else:
        typer.echo("NOT verified: see above; run it again once the source is fixed.", err=True)


def store_path_exists(store: Optional[str]) -> bool:
    from formctl.cli.workspace import store_path

    return store_path(store).exists()


def _require_store(store: Optional[str]) -> None:
    """Check and repair act on a store that exists: on a mistyped path, check reported a
    missing index and 'run formctl store reindex', and reindex created an empty store there."""
    from formctl.cli.workspace import is_database, store_path

    if not is_database(store) and not store_path(store).exists():
        _fail(f"No form store at {store_path(store)}: nothing has been saved there (--store DIR or FORMCTL_STORE).")


def _store_report(report: JsonObject, as_json: bool) -> None:
    if as_json:
        _print_json(report)
    else:
        from formctl.cli import render

        render.print_store_report(report)
    if not report["ok"]:
        raise typer.Exit(1)
