"""Who a host is, and the host's resolution of a checkpoint, the same from the command line and the chat.

A **host** is whoever runs formctl's host commands (``fill``, ``undo``, ``resolve``, ...) against
a store: access to the store is the permission, as with ``git`` on a repository. A host acts
under a name, ``--as NAME`` or else their login name, and every act is recorded with it
(docs/engine.md, "Host acts"). The person in a chat is not a host; ``formctl run --as-host``
lets a form author trying a form play one.

The role checks of a resolution live here, and only here:

* only a host resolves: the chat's ``/resolve`` is refused unless the chat was opened with
  ``--as-host`` (:func:`chat_resolve`);
* nobody decides their own request: resolving an instance whose subject is the resolver, as
  an identity (:func:`identity`: not as raw text), is refused (:class:`~formctl.errors.OwnRequestError`) unless the host says so
  explicitly with ``--own-request``, which is recorded with the decision. A form author
  playing the host (``--as-host``) has said so by opening the chat that way, and that is
  what is recorded.

One parser for both: the chat's ``/resolve --fail "over budget"`` is parsed by the very
command that parses ``formctl resolve ID --fail "over budget"`` (its click definition), and
both go through :func:`resolve`, so an option, a combination or a rule cannot differ between them.
"""

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, TypedDict

import typer

from formctl.cli.base import _Command, _example, _fail, app
from formctl.cli.options import FormsOpt, InstanceArg, JsonOpt, StoreOpt
from formctl.errors import HostOnlyError, InvalidArgumentError, OwnRequestError
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.project import FillResult
    from formctl.forms.runner import FormRunner

OWN_REQUEST = "own request"
"""What a resolution of the resolver's own instance records as its override."""

OWN_REQUEST_AS_HOST = "own request, playing the host (--as-host)"

CHAT_OPTIONS = ("fail", "reason", "checkpoint", "own_request")
"""The options of ``formctl resolve`` the chat's ``/resolve`` takes (the store, the forms and
the name are the chat's own)."""


class ChatResolve(TypedDict):
    """The options of a chat's ``/resolve`` (:data:`CHAT_OPTIONS`), as parsed."""

    fail: Optional[str]
    reason: Optional[str]
    checkpoint: Optional[str]
    own_request: bool


def check_options(fail: str | None, reason: str | None, by: str | None) -> None:
    """What ``resolve`` refuses before anything is read: text that cannot be kept, then the
    combinations (:func:`check_combination`)."""
    from formctl.cli.args import check_text

    for text, what in ((fail, "--fail"), (reason, "--reason"), (by, "--as")):
        check_text(text, what)
    check_combination(fail, reason, by)


def check_combination(fail: str | None, reason: str | None, by: str | None) -> None:
    """The combinations of options ``resolve`` refuses (a usage error: exit status 2 on the command line)."""
    if fail is not None and reason is not None:
        raise InvalidArgumentError("Give --fail REASON to reject, or --reason to say why it is approved, not both.")
    if by is not None and not by.strip():
        raise InvalidArgumentError("--as needs a name.")


@dataclass(frozen=True)
class Decision:
    """A host's answer to a checkpoint: who decides (``actor``), a rejection (``fail``, the reason
    the person is told) or an approval (``reason``, why), which checkpoint (None: the one it waits
    on) and the values written with it. ``own_request``: the host's explicit word that they decide
    an instance whose subject they are. ``playing_host``: a chat opened with ``--as-host``, which
    says the same."""

    actor: str
    fail: str | None = None
    reason: str | None = None
    checkpoint: str | None = None
    values: JsonObject | None = None
    own_request: bool = False
    playing_host: bool = False


def resolve_as(runner: "FormRunner", instance_id: str, decision: Decision) -> "FillResult":
    """Resolve the checkpoint ``instance_id`` waits on, as ``decision.actor``; the role check first."""
    actor = decision.actor
    check_options(decision.fail, decision.reason, actor)
    instance = runner.open_instance(instance_id)
    override = None
    if instance is not None and same_identity(instance.subject, actor):
        if not (decision.own_request or decision.playing_host):
            raise OwnRequestError(
                f"{actor} is the subject of {instance.id}: a request is decided by someone else. "
                "To decide your own anyway, add --own-request (it is recorded with the decision)."
            )
        override = OWN_REQUEST if decision.own_request else OWN_REQUEST_AS_HOST
    return runner.resolve_checkpoint(
        instance_id,
        fail=decision.fail,
        values=decision.values,
        checkpoint=decision.checkpoint,
        actor=actor,
        reason=decision.reason,
        override=override,
    )


def identity(name: str) -> str:
    """A host's or a subject's name as an identity (README, "Who may do what"): Unicode width
    forms, case, and spaces around and within it do not count, and an email address is its
    local part (``Dana2@Example.com`` is ``dana2``)."""
    import unicodedata

    folded = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    local, at, domain = folded.rpartition("@")
    return local if at and local and domain and " " not in folded else folded


def same_identity(subject: str, actor: str) -> bool:
    """Whether ``actor`` is the subject of the request they would decide (:func:`identity`)."""
    return identity(subject) == identity(actor)


def parse_chat_resolve(rest: str, instance_id: str) -> "ChatResolve":
    """The options of a chat's ``/resolve REST``, parsed by ``formctl resolve``'s own definition."""
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise InvalidArgumentError(f"/resolve: {exc}.") from None
    import typer.main

    one = typer.Typer()
    one.command(cls=_Command)(resolve_command)  # the very definition formctl resolve parses with
    resolve_parser = typer.main.get_command(one)
    try:
        ctx = resolve_parser.make_context("/resolve", [instance_id, *words])
    except Exception as exc:  # click's (or typer's vendored click's) usage errors, and --help's exit
        message = getattr(exc, "format_message", None)
        if message is None and not hasattr(exc, "exit_code"):
            raise
        said = f"{message()} " if message is not None else ""
        raise InvalidArgumentError(f"/resolve: {said}{USAGE}") from None
    params = dict(ctx.params)
    loose = [w for w in params.get("assignments") or () if "=" not in w]
    if loose:  # `/resolve --reason trial run`: the command line would refuse it the same way
        raise InvalidArgumentError(
            f'/resolve: "{loose[0]}" is not an option; quote a reason of several words '
            '(/resolve --reason "within budget").'
        )
    # Only what was typed after /resolve counts: --store or --forms the chat's environment sets
    # (FORMCTL_STORE, FORMCTL_FORMS) are the chat's own, already in use, never the person's extra.
    extra = [
        name
        for name, value in params.items()
        if name not in (*CHAT_OPTIONS, "instance_id")
        and value not in (None, False, [], ())
        and _typed(ctx.get_parameter_source(name))
    ]
    if extra:
        raise InvalidArgumentError(f"/resolve takes no {', '.join(extra)} in a chat. {USAGE}")
    return ChatResolve(
        fail=params.get("fail"),
        reason=params.get("reason"),
        checkpoint=params.get("checkpoint"),
        own_request=bool(params.get("own_request")),
    )


def _typed(source: object) -> bool:
    """Whether an option's value came from the words typed (click's ``ParameterSource``, asked by
    name: typer may carry its own copy of click)."""
    return getattr(source, "name", None) == "COMMANDLINE"


USAGE = "Use /resolve, /resolve --reason WHY, or /resolve --fail REASON (and --checkpoint ID, --own-request)."


def chat_resolve(
    runner: "FormRunner", instance_id: str, rest: str, *, as_host: bool, actor: str
) -> "tuple[FillResult, ChatResolve]":
    """A chat's ``/resolve REST``: refused unless the chat plays the host; then as :func:`resolve`.
    Returns the result and the options it was given."""
    if not as_host:
        # Resolving is the host's decision, never the person's own.
        instance = runner.open_instance(instance_id)
        what = f'"{instance.blocked_on}"' if instance is not None and instance.blocked_on else "a checkpoint"
        raise HostOnlyError(
            f"Only a host can resolve {what}: from a host's terminal, run formctl resolve "
            f"{instance_id} (or --fail REASON). A form author trying the form can play the host "
            "with formctl run FORM --as-host."
        )
    options = parse_chat_resolve(rest, instance_id)
    decision = Decision(
        actor,
        fail=options["fail"],
        reason=options["reason"],
        checkpoint=options["checkpoint"],
        own_request=options["own_request"],
        playing_host=True,
    )
    return resolve_as(runner, instance_id, decision), options


@app.command(
    "resolve",
    cls=_Command,
    epilog=_example(
        "formctl resolve form_lx2k9_ab12cd --reason 'within the travel budget'",
        "formctl resolve form_lx2k9_ab12cd --fail 'needs pre-approval' --as 'Sam Jones'",
    ),
)
def resolve_command(
    instance_id: InstanceArg,
    assignments: Optional[List[str]] = typer.Argument(
        None, metavar="[FIELD=VALUE...]", help="Values to write with the answer."
    ),
    fail: Optional[str] = typer.Option(
        None, "--fail", metavar="REASON", help="Reject, with the reason the person is told."
    ),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why it is approved (kept with the decision)."),
    by: Optional[str] = typer.Option(None, "--as", metavar="NAME", help="Who decides [default: your login name]."),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint", help="Checkpoint id [default: the one it waits on]."
    ),
    own_request: bool = typer.Option(
        False,
        "--own-request",
        help="Decide an instance whose subject is you (refused without it; recorded with the decision).",
    ),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer the checkpoint an instance waits on.

    Approves it, or rejects it with --fail REASON (the person is told why). The decision is
    recorded with who made it (--as, else your login name), when and why: inspect, history
    and export show it. Nobody decides their own request: if the instance's subject is you,
    it is refused unless you add --own-request, which is recorded too.
    """
    from formctl.cli.args import check_text, parse_assignments
    from formctl.cli.commands.writes import write_outcome
    from formctl.cli.workspace import default_subject, open_runner
    from formctl.errors import InvalidArgumentError

    for text, what in ((fail, "--fail"), (reason, "--reason"), (by, "--as")):
        check_text(text, what)
    try:
        check_combination(fail, reason, by)
    except InvalidArgumentError as exc:
        _fail(exc.message, 2)
    parse_assignments(assignments or [])  # a malformed pair fails before the store is opened
    runner = open_runner(store, forms)
    values = parse_assignments(assignments or [], runner.evaluation(instance_id)[0]) if assignments else {}
    decision = Decision(
        by.strip() if by is not None else default_subject(),
        fail=fail,
        reason=reason,
        checkpoint=checkpoint,
        values=values or None,
        own_request=own_request,
    )
    write_outcome(runner, resolve_as(runner, instance_id, decision), as_json)


__all__ = [
    "OWN_REQUEST",
    "Decision",
    "chat_resolve",
    "check_combination",
    "check_options",
    "parse_chat_resolve",
    "resolve_as",
    "resolve_command",
]
