"""Whom a new chat's form is for: never a guess (docs/chat.md, "Whose form it is").

A support desk fills in forms for many people from one login. Two defaults would work against
it: filing every client under the member of staff's login name, and carrying on with whatever
open instance that login name has. So:

* a form registered with ``subject = "required"`` is never filed under a default: ``run``
  without ``--subject`` asks "Who is this for?" in a terminal, and refuses in one line when
  nobody can be asked (stdin piped);
* whatever the form says, when the subject was not given (the login name stands in), an open
  instance is never continued silently: the person is told whose form it is and asked; in a
  terminal they may say it is someone else's, and when nobody can be asked it is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.cli.workspace import default_subject
from formctl.errors import InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from formctl.cli.chat.options import ChatOptions
    from formctl.forms.instance import Instance
    from formctl.forms.registry import Registration

__all__ = ["QUESTION", "ask_for_subject", "chosen_subject", "confirm_continuing"]

QUESTION = "Who is this for? "


def chosen_subject(options: ChatOptions, registration: Registration) -> tuple[str, bool]:
    """The subject of a new chat about ``registration``'s form, and whether the person said it
    (``--subject``, ``FORMCTL_SUBJECT`` or the question) rather than the login name standing in."""
    if options.subject is not None:
        return options.subject, True
    if not registration.subject_required:
        return default_subject(), False
    if options.ask is None:
        raise InvalidArgumentError(
            f"{registration.id} is filled in for someone each time: say whom with --subject NAME "
            f"(formctl run {registration.id} --subject 'María López')."
        )
    return ask_for_subject(options), True


def ask_for_subject(options: ChatOptions) -> str:
    """Ask "Who is this for?" until a name is typed; leaving (Ctrl-D) starts nothing."""
    assert options.ask is not None
    while True:
        answer = options.ask(QUESTION)
        if answer is None:
            raise InvalidArgumentError("Nothing started: no one was named.")
        if answer.strip():
            return answer.strip()


def confirm_continuing(options: ChatOptions, instance: Instance) -> str | None:
    """``instance`` is the open form the login name would continue: say whose it is and ask.

    None: carry on with it. Otherwise the subject the person named instead. Refused in one line
    when nobody can be asked, naming both ways on."""
    changed = instance.updated_at[:16].replace("T", " ")
    whose = f"{instance.subject} has an open {instance.def_id} ({instance.id}, last changed {changed} UTC)"
    if options.ask is None:
        raise InvalidArgumentError(
            f"{whose}: continue it with formctl resume {instance.id}, or say whom this one is for with --subject NAME."
        )
    answer = options.ask(f"{whose}.\nContinue {instance.subject}'s {instance.def_id}? [y/N] ")
    if answer is None:
        raise InvalidArgumentError("Nothing started: no one was named.")
    if answer.strip().lower() in ("y", "yes"):
        return None
    return ask_for_subject(options)
