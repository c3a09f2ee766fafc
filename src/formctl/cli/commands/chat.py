"""``run`` and ``resume``: the chat (formctl.cli.chat, imported when the command runs)."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import typer

from formctl.cli import base
from formctl.cli.base import _Command, _example, app
from formctl.cli.options import (
    AsHostOpt,
    FormsOpt,
    InstanceArg,
    LocaleOpt,
    ModelOpt,
    ModelTimeoutOpt,
    OfflineOpt,
    RecordOpt,
    StoreOpt,
    _complete_form,
)

if TYPE_CHECKING:
    from formctl.cli.chat import ChatOptions

MigrateOpt = typer.Option(
    False,
    "--migrate",
    help="An instance started on an older version of the form: move it "
    "to the registered one without asking (see formctl migrate).",
)


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl run travel-claim",
        "formctl run travel-claim --subject dana --seed mode=car --record transcripts/dana.toml",
        "printf 'Dana Reeve\\nAB1234\\n' | formctl run travel-claim --offline",
        "OPENAI_BASE_URL=http://localhost:11434/v1 formctl run travel-claim --model openai:llama3.1",
        "formctl run --program client-intake --subject firm:1/matter:2",
        "formctl run --program client-intake --subject firm:1/matter:2 --record transcripts/visit.toml",
    ),
)
def run(
    form: Optional[str] = typer.Argument(
        None, metavar="[FORM]", help="Form id (or --program KEY).", autocompletion=_complete_form
    ),
    subject: Optional[str] = typer.Option(
        None, "--subject", envvar="FORMCTL_SUBJECT", help="Who the form is for [default: your login name]."
    ),
    model: ModelOpt = None,
    model_timeout: ModelTimeoutOpt = None,
    offline: OfflineOpt = False,
    locale: LocaleOpt = None,
    record: RecordOpt = None,
    seed: List[str] = typer.Option([], "--seed", metavar="K=V", help="A value already known (repeatable)."),
    as_host: AsHostOpt = False,
    store: StoreOpt = None,
    forms: FormsOpt = None,
    migrate: bool = MigrateOpt,
    program: Optional[str] = typer.Option(
        None, "--program", metavar="KEY", help="Walk a goal program's active goal instead of one form."
    ),
) -> None:
    """Start or continue a form in a chat.

    Starts the subject's FORM, or continues their open one. With --program KEY instead, walks
    the subject's goal program (started if need be): items no form answers are asked about,
    and an item bound to a form opens that form's chat.

    In a terminal: a chat with a status bar; type /help for commands. With stdin not a
    terminal, each input line is one message and output is plain text. Exits 1 when a turn
    failed and nothing was started (the model unreachable, say), or when the open one was
    started on an older version of the form and was not moved (--migrate, or say yes).

    A checkpoint that waits for a host is resolved from a host's terminal (formctl resolve
    ID); --as-host lets a form author trying the form play the host with /resolve.

    The model: --model anthropic:NAME needs ANTHROPIC_API_KEY; --model openai:NAME talks to
    any OpenAI-compatible server: OpenAI with OPENAI_API_KEY, or a local one (Ollama, vLLM,
    LM Studio, llama.cpp) at OPENAI_BASE_URL, e.g. http://localhost:11434/v1, with no key
    (pip install 'formctl[openai]'). Without a key the guided offline model asks.
    """
    if (form is None) == (program is None):
        base._fail("Give a FORM, or --program KEY (not both).", 2)
    if program is not None and seed:
        base._fail("--seed goes with a FORM, not --program.", 2)
    given = _Given(model, model_timeout, offline, locale, record, as_host, store, forms, migrate)
    _chat(given.options(form=form, subject=subject, seed=seed), program)


@dataclass(frozen=True)
class _Given:
    """The options ``run`` and ``resume`` share, as given on the command line."""

    model: str | None
    model_timeout: float | None
    offline: bool
    locale: str | None
    record: str | None
    as_host: bool
    store: str | None
    forms: str | None
    migrate: bool

    def options(
        self,
        *,
        form: str | None = None,
        instance_id: str | None = None,
        subject: str | None = None,
        seed: list[str] | None = None,
    ) -> "ChatOptions":
        """The chat's options: these, the chat's own (which form, which instance, whose), the
        --debug in force and the status bar's interval (FORMCTL_POLL_SECONDS)."""
        from formctl.cli.chat import ChatOptions
        from formctl.cli.chat.options import poll_seconds_from_env

        return ChatOptions(
            form=form,
            instance_id=instance_id,
            subject=subject,
            model=self.model,
            model_timeout=self.model_timeout,
            offline=self.offline,
            locale=_locale(self.locale),
            record=self.record,
            seed=list(seed or []),
            store=self.store,
            forms=self.forms,
            debug=base.debugging(),
            as_host=self.as_host,
            migrate=self.migrate,
            poll_seconds=poll_seconds_from_env(),
        )


def _chat(options: "ChatOptions", program: str | None = None) -> None:
    """Run the chat (with ``program``, the walk of that goal program); exit with its status unless 0."""
    if program is not None:
        from formctl.cli.chat.program import run_program_chat

        code = run_program_chat(options, program)
    else:
        from formctl.cli.chat import run_chat

        code = run_chat(options)
    if code:
        raise typer.Exit(code)


def _locale(given: str | None) -> str | None:
    """``--locale`` as ``en-GB``; one clear line for a value that names no locale."""
    if given is None or not given.strip():
        return None
    from formctl.agent.models.guided.values.context import normalise_locale

    locale = normalise_locale(given)
    if locale is None:
        base._fail(f"--locale must name a locale, like en-GB or en-US, not {given!r}.", 2)
    return locale


@app.command(cls=_Command, epilog=_example("formctl resume form_lx2k9_ab12cd"))
def resume(
    instance_id: InstanceArg,
    model: ModelOpt = None,
    model_timeout: ModelTimeoutOpt = None,
    offline: OfflineOpt = False,
    locale: LocaleOpt = None,
    record: RecordOpt = None,
    as_host: AsHostOpt = False,
    store: StoreOpt = None,
    forms: FormsOpt = None,
    migrate: bool = MigrateOpt,
) -> None:
    """Return to an instance's conversation.

    Picks up where it left off, with the saved conversation. An instance started on an older
    version of its form is moved to the registered one first (asked, or --migrate), or the
    command exits 1 saying how.
    """
    given = _Given(model, model_timeout, offline, locale, record, as_host, store, forms, migrate)
    _chat(given.options(instance_id=instance_id))
