"""Opening a chat: everything decided and opened before the person types (:func:`open_chat`).

In order: the ``--seed`` lines are checked; the registry and the store are opened; which
instance the chat continues is decided (the one resumed by id, or the runner's
``continuation``: docs/chat.md, "Which instance"); the form is loaded and each
seed's field checked against it; the store is asked whether it can be written; the chat's two
runners are made over one :class:`~formctl.forms.reading.DefaultInstance`, reporting their
commits to one :class:`~formctl.cli.chat.seen.OwnCommits`; what a process that died left
running is recovered; the saved conversation is loaded (or set aside when damaged, through
the conversation store); the model and the recorder are made; and the status poller is given
what it opens on first use. What the person should read first is collected in ``notes``.

The result, an :class:`Opening`, is what :class:`~formctl.cli.chat.session.ChatSession` wires
together; the session itself opens nothing. If any step fails, the store is closed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from formctl.agent import sharing
from formctl.cli.chat.options import CHAT_SOURCE, ChatOptions, seed_lines
from formctl.cli.chat.poller import StatusPoller
from formctl.cli.chat.seen import OwnCommits, Snapshot, as_snapshot, snapshot_of
from formctl.cli.chat.subject import chosen_subject, confirm_continuing
from formctl.cli.workspace import (
    default_subject,
    is_database,
    local_folder,
    open_conversations,
    open_registry,
    open_store,
)
from formctl.errors import (
    AlreadyExistsError,
    FormError,
    FormStaleError,
    InstanceClosedError,
    InvalidArgumentError,
    NotFoundError,
    StoreError,
)
from formctl.forms.lifecycle import is_closed
from formctl.forms.reading import DefaultInstance
from formctl.json_types import JsonObject

if TYPE_CHECKING:  # pragma: no cover
    from formctl.agent.events import Event
    from formctl.agent.models.base import ChatModel
    from formctl.forms.adapter import FormAdapter
    from formctl.forms.compile import CompiledForm
    from formctl.forms.instance import Instance
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner

__all__ = [
    "ChatRecorder",
    "ChatRunners",
    "Choice",
    "Conversations",
    "Opening",
    "Saved",
    "SavedConversation",
    "open_chat",
]


class SavedConversation(sharing.SavedConversation, Protocol):
    """A conversation as the conversation store loads it (``store/_conversation.py``), which the
    chat loop resumes (:class:`formctl.agent.sharing.SavedConversation`), with what the person's
    status line had seen when it was saved."""

    @property
    def seen(self) -> JsonObject | None: ...


class Conversations(sharing.SavesConversations, Protocol):
    """Where a chat's conversations are kept (``workspace.open_conversations``: a folder's
    ``ConversationStore`` or the database's): opened here, saved by the chat loop."""

    def open(self, instance_id: str) -> tuple[SavedConversation, str | None]: ...


class ChatRecorder(Protocol):
    """What a chat writes its transcript through: a :class:`~formctl.transcripts.record.Recorder`
    (``--record``), or one walk's :class:`~formctl.cli.chat.program_record.ProgramRecording`."""

    def person(self, text: str) -> object: ...
    def answer(self, text: str) -> None: ...
    def event(self, ev: Event) -> None: ...
    def host(self, action: str, *, result: object = None, error: str | None = None, **args: object) -> object: ...
    def finish(self, runner: FormRunner | None = None, instance_id: str | None = None) -> object: ...


@dataclass(frozen=True)
class Choice:
    """Which form the chat fills, for whom, and which instance it continues (None: a new one)."""

    form_id: str
    subject: str
    compiled: CompiledForm
    pinned: str | None


@dataclass(frozen=True)
class ChatRunners:
    """Makes the chat's runners, over one conversation's instance (``default``): over the
    chat's own adapter they report their commits to ``own``; over the poller's, they only read."""

    adapter: FormAdapter  # the chat's store, shared by its runners; closed with the session
    registry: FormRegistry
    subject: str
    default: DefaultInstance  # the conversation's instance, shared by its runners
    own: OwnCommits  # every commit the runners make, until the person is shown the form

    def over(self, adapter: FormAdapter, actor: str = "agent") -> FormRunner:
        from formctl.forms.runner import FormRunner

        return FormRunner(
            adapter,
            registry=self.registry,
            subject=self.subject,
            actor=actor,
            source=CHAT_SOURCE,
            default=self.default,
            on_commit=self.own.record if adapter is self.adapter else None,
        )


@dataclass
class Saved:
    """The saved conversation a chat continues, and what the person was last shown of it."""

    messages: list[JsonObject] = field(default_factory=list)  # empty for a new conversation
    conversation: SavedConversation | None = None  # as every chat that took part saved it
    seen: Snapshot | None = None


@dataclass
class Opening:
    """What a chat is opened with: the collaborators a :class:`ChatSession` wires together."""

    options: ChatOptions
    seed_lines: list[str]  # ``--seed`` as the ``k: v`` lines of the opening message
    store_dir: Path  # input history (and conversations, in a folder store)
    choice: Choice
    runners: ChatRunners
    agent: FormRunner  # the model's runner (actor "agent")
    person: FormRunner  # the person's /commands (actor "person")
    conversations: Conversations  # a folder's ConversationStore or the database's (workspace.open_conversations)
    saved: Saved
    model: ChatModel
    recorder: ChatRecorder | None  # a transcripts Recorder with --record, else None
    poller: StatusPoller
    notes: list[str]  # lines for the face to print before the chat starts


def open_chat(options: ChatOptions) -> Opening:
    """Open everything a chat needs for ``options``; one clear error (a :class:`FormError`) if it cannot."""
    lines = seed_lines(options.seed)  # a malformed --seed fails before anything opens
    store_dir = local_folder(options.store)
    registry = open_registry(options.forms)
    adapter = open_store(options.store)
    try:
        return _open(options, lines, store_dir, registry, adapter)
    except BaseException:
        adapter.close()
        raise


def _open(
    options: ChatOptions, lines: list[str], store_dir: Path, registry: FormRegistry, adapter: FormAdapter
) -> Opening:
    notes: list[str] = []
    choice = _choose(options, lines, registry, adapter, notes)
    adapter.ensure_writable()  # a store that cannot be written fails here, before the person types
    # Calls without an instance id act on the conversation's instance (not on whatever the
    # subject touched last), and the model's form_start moves it.
    runners = ChatRunners(adapter, registry, choice.subject, DefaultInstance(choice.pinned), OwnCommits())
    agent, person = runners.over(adapter, "agent"), runners.over(adapter, "person")
    conversations: Conversations = open_conversations(options.store, adapter, choice.subject)
    saved = Saved()
    if choice.pinned is not None:
        _bring_up_to_date(agent, person, choice.pinned, notes)
        saved = _saved(conversations, agent, choice.pinned, runners.own, notes)
    model = _model(options, agent, choice.form_id)
    recorder = _recorder(options, choice, model, agent, notes)
    # The status bar reads through an adapter of its own (see poller.py), opened on first use.
    poller = StatusPoller(lambda: open_store(options.store), runners.over)
    return Opening(
        options=options,
        seed_lines=lines,
        store_dir=store_dir,
        choice=choice,
        runners=runners,
        agent=agent,
        person=person,
        conversations=conversations,
        saved=saved,
        model=model,
        recorder=recorder,
        poller=poller,
        notes=notes,
    )


def _choose(
    options: ChatOptions, lines: list[str], registry: FormRegistry, adapter: FormAdapter, notes: list[str]
) -> Choice:
    """The form, the subject and the instance to continue: the one resumed by id, or the
    runner's ``continuation`` for the subject (whose it is said, and asked, when the subject
    was not given)."""
    from formctl.forms.runner import FormRunner

    if options.instance_id is not None:
        resumed = _resumable(adapter, registry, options)
        form_id, subject, given = resumed.def_id, resumed.subject, True
    else:
        assert options.form is not None
        form_id = options.form
        subject, given = chosen_subject(options, registry.registration(form_id))
    compiled = registry.load(form_id)  # an unknown or broken form fails here, in one line
    _check_seeds(lines, compiled, form_id)
    reads = FormRunner(adapter, registry=registry, subject=subject)
    pinned = options.instance_id or _continued(reads, form_id, options, notes)
    if pinned is not None and not given:  # the login name's open form: whose it is is said, and asked
        continuing = reads.open_instance(pinned)
        other = confirm_continuing(options, continuing) if continuing is not None else None
        if other is not None:
            subject, notes[:] = other, []
            reads = FormRunner(adapter, registry=registry, subject=subject)
            pinned = _continued(reads, form_id, options, notes)
    return Choice(form_id, subject, compiled, pinned)


def _check_seeds(lines: list[str], compiled: CompiledForm, form_id: str) -> None:
    """Each ``--seed`` names a field of the form: a mistyped one would otherwise reach the model
    as chat and vanish."""
    for line in lines:
        key = line.partition(":")[0]
        if compiled.resolve_field(key) is None:
            raise InvalidArgumentError(
                f"--seed {key}: no such field on {form_id} (formctl check {form_id} lists them)."
            )


def _saved(
    conversations: Conversations, agent: FormRunner, instance_id: str, own: OwnCommits, notes: list[str]
) -> Saved:
    """The instance's saved conversation (one set aside when damaged is said in ``notes``)."""
    conversation, set_aside = conversations.open(instance_id)
    if set_aside is not None:
        notes.append(set_aside)
    messages = conversation.messages
    # What the person was last shown of the instance (formctl.agent.notices): kept with the
    # conversation, so a resumed chat can say what changed while it was away. A chat with no
    # record of showing the answers shows them as they are now, in its opening turn, and a
    # write made elsewhere while that runs is said after it (seen.py).
    stored = conversation.seen if messages else None
    seen = as_snapshot(stored) if stored is not None else _as_shown_now(agent, instance_id, own)
    return Saved(messages, conversation, seen)


def _model(options: ChatOptions, agent: FormRunner, form_id: str) -> ChatModel:
    from formctl.agent.models import pick_model
    from formctl.agent.models.guided import GuidedModel

    model = pick_model(
        agent,
        model_name=options.model,
        offline=options.offline,
        form_id=form_id,
        timeout=options.model_timeout,
        locale=options.locale,
    )
    if options.as_host and isinstance(model, GuidedModel):  # its waiting message then names /resolve
        model.state.host_here = True
    return model


def _resumable(adapter: FormAdapter, registry: FormRegistry, options: ChatOptions) -> Instance:
    """The instance ``formctl resume ID`` names: it must exist and not be closed."""
    from formctl.forms.runner import FormRunner

    assert options.instance_id is not None
    reads = FormRunner(adapter, registry=registry, subject=options.subject or default_subject())
    instance = reads.open_instance(options.instance_id)
    if instance is None:
        raise NotFoundError(f'No form instance "{options.instance_id}".')
    if is_closed(instance):
        reason = f" ({instance.closed_reason})" if instance.closed_reason else ""
        raise InstanceClosedError(
            f'Form instance "{instance.id}" was abandoned{reason}; its answers are kept (formctl export {instance.id}).'
        )
    return instance


def _continued(reads: FormRunner, form_id: str, options: ChatOptions, notes: list[str]) -> str | None:
    """The subject's instance of ``form_id`` to carry on with, or None to start a new one
    (the runner decides: docs/engine.md, "Completion and closing")."""
    try:
        decision = reads.continuation(form_id)
    except StoreError as exc:
        if exc.reason is None:  # set by the stores' decoders on a damaged record
            raise  # the store failed (a server away, a folder unreadable): no instance is damaged
        fix = (
            "restore it from a backup (formctl store check lists damaged instances)"
            if is_database(options.store)
            else "restore the file, or move it aside to start afresh (formctl store check lists damaged files)"
        )
        exc.message = f"{exc.message} Not starting a new {form_id} in its place: {fix}."
        exc.args = (exc.message,)
        raise
    if decision.note is not None:
        notes.append(decision.note)
    return decision.instance_id


def _bring_up_to_date(agent: FormRunner, person: FormRunner, instance_id: str, notes: list[str]) -> None:
    """Opening a conversation is when recovery happens: re-run what a process that died left
    running, after migrating the instance if its form changed and can migrate. Reads never do.

    A damaged instance (its files lost what the store acknowledged) is said first: every
    answer typed into it would be refused until a host accepts the loss."""
    found = person.damage(instance_id)
    if found is not None:
        notes.append(
            f"This form can't take answers now: {found.describe()}. Nothing you answer here can be "
            f"saved until a host accepts the loss with formctl store repair {instance_id} --as NAME."
        )
        return
    try:
        agent.recover(instance_id)
    except FormStaleError:
        pass  # said in the notes; it can still be abandoned
    except FormError as exc:  # a migrate() that fails: the chat opens, and says why writes will fail
        notes.append(exc.message)


def _as_shown_now(agent: FormRunner, instance_id: str, own: OwnCommits) -> Snapshot | None:
    """The instance as it is now, as the person will be shown it (None when it cannot be read)."""
    try:
        view = agent.view(instance_id)
    except FormError:
        return None
    own.take()  # the recovery just made is part of what is shown
    return snapshot_of(view.compiled, view.evaluation, view.instance)


def _recorder(
    options: ChatOptions, choice: Choice, model: ChatModel, agent: FormRunner, notes: list[str]
) -> ChatRecorder | None:
    if not options.record:
        return None
    from formctl.agent.models import model_label
    from formctl.transcripts.record import Recorder

    path = Path(options.record)
    if path.exists():  # a transcript is a regression test: recording over one would lose it
        raise AlreadyExistsError(
            f"{path} already exists: record to a new path, or remove it first "
            f"(formctl replay {path} --update refreshes it instead)."
        )
    recorder = Recorder(
        path,
        form_id=choice.form_id,
        form_version=choice.compiled.version,
        model=model_label(model),  # PROVIDER:NAME, as --model takes it
        subject=choice.subject,
        runner=agent,
    )
    if recorder.transcript.resumed:
        notes.append(
            f"Recording {path} over a form that already has answers: formctl replay "
            f"starts from an empty store and can't reproduce it. For a replayable "
            f"transcript, record a new form from its start."
        )
    return recorder
