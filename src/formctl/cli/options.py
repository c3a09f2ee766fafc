"""The options and arguments several commands share, as ``Annotated`` aliases, and their shell
completion (which reads files directly, so completing imports no form module); and
:func:`gathered`, which declares a set of options once for the commands that take them alike."""

import functools
import inspect
import os
from typing import Annotated, Callable, Optional, ParamSpec, Protocol, Sequence

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
LocaleOpt = Annotated[
    Optional[str],
    typer.Option(
        "--locale",
        envvar="FORMCTL_LOCALE",
        metavar="LOCALE",
        help="How the guided model reads dates, amounts and phone numbers, e.g. en-GB or en-US [default: from LANG].",
    ),
]
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


P = ParamSpec("P")
OptionValues = dict[str, object]  # a command's options by parameter name, as typer hands them


class Command(Protocol):
    """A command as typer calls it: every parameter by name."""

    def __call__(self, **values: object) -> None: ...


def option(name: str, annotation: object, default: object) -> inspect.Parameter:
    """A command's parameter as typer reads one: ``default`` is its ``typer.Option`` (or, for an
    ``Annotated`` alias such as :data:`StoreOpt`, its value when not given)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def gathered(
    name: str, options: Sequence[inspect.Parameter], build: Callable[[OptionValues], object]
) -> Callable[[Callable[P, None]], Command]:
    """A decorator for the commands that take ``options`` alike: typer reads them after the
    command's own parameters (``--help`` lists them there), and the command's parameter ``name``
    is given ``build(their values)`` (a parameter object) in their place."""
    names = [o.name for o in options]

    def decorate(command: Callable[P, None]) -> Command:
        signature = inspect.signature(command)
        own = [p for p in signature.parameters.values() if p.name != name]

        @functools.wraps(command)
        def run(**values: object) -> None:
            values[name] = build({n: values.pop(n) for n in names})
            bound = signature.bind(**values)
            command(*bound.args, **bound.kwargs)

        vars(run)["__signature__"] = inspect.Signature([*own, *options])  # what typer reads
        return run

    return decorate
