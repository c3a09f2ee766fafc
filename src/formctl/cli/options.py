"""The options and arguments several commands share, as ``Annotated`` aliases, and their shell
completion (which reads files directly, so completing imports no form module)."""

import os
from typing import Annotated, Optional

import typer


def _complete_form(ctx: typer.Context, incomplete: str) -> list[str]:
    """Form ids from the registry file, read with tomllib (no form module is imported)."""
    import tomllib

    from formctl.cli.workspace import registry_path

    try:
        with open(registry_path(ctx.params.get("forms") or os.environ.get("FORMCTL_FORMS")), "rb") as fh:
            forms = tomllib.load(fh).get("forms", {})
    except (OSError, ValueError):
        return []
    return [f for f in forms if f.startswith(incomplete)]


def _complete_instance(ctx: typer.Context, incomplete: str) -> list[str]:
    """Instance ids from the store's file names (the store's own id check guards any use)."""
    from formctl.cli.workspace import is_database, store_path

    store = ctx.params.get("store") or os.environ.get("FORMCTL_STORE")
    if is_database(store):
        return []  # completion never opens a connection (it may ask for a password)
    folder = store_path(store) / "instances"
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    ids = {n.partition(".")[0] for n in names if n.endswith(".json")}
    return sorted(i for i in ids if i.startswith(incomplete))


def _complete_status(incomplete: str) -> list[str]:
    from formctl.forms.instance import INSTANCE_STATUSES

    return [s for s in INSTANCE_STATUSES if s.startswith(incomplete)]


_STORE_HELP = "Store folder, or a postgresql:// DSN [default: ./.formctl]."
_FORMS_HELP = "Forms folder holding registry.toml, or the TOML file [default: ./forms]."

StoreOpt = Annotated[Optional[str], typer.Option("--store", envvar="FORMCTL_STORE", metavar="DIR", help=_STORE_HELP)]
FormsOpt = Annotated[Optional[str], typer.Option("--forms", envvar="FORMCTL_FORMS", metavar="DIR", help=_FORMS_HELP)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
InstanceArg = Annotated[
    str, typer.Argument(metavar="ID", help="Instance id (see formctl instances).", autocompletion=_complete_instance)
]
FormArg = Annotated[str, typer.Argument(metavar="FORM", help="Form id.", autocompletion=_complete_form)]
ModelOpt = Annotated[
    Optional[str],
    typer.Option(
        "--model",
        envvar="FORMCTL_MODEL",
        metavar="PROVIDER:NAME",
        help="anthropic:NAME (ANTHROPIC_API_KEY), openai:NAME (OPENAI_API_KEY, or OPENAI_BASE_URL for a "
        "local server) or guided. A bare NAME goes to the provider whose key is set.",
    ),
]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="Use the guided offline model.")]
ModelTimeoutOpt = Annotated[
    Optional[float],
    typer.Option(
        "--model-timeout",
        metavar="SECONDS",
        help="The longest one model call may take, its reply streamed and retries included "
        "[default: FORMCTL_MODEL_TIMEOUT, or 120].",
        show_default=False,
    ),
]
RecordOpt = Annotated[Optional[str], typer.Option("--record", metavar="PATH", help="Write a transcript as it goes.")]
AsHostOpt = Annotated[
    bool, typer.Option("--as-host", help="Play the host: /resolve answers checkpoints (for form authors).")
]
