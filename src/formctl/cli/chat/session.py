"""The chat session: the store, the runners, the model, the loop and the recorder of one chat.

No I/O of its own: a front end (:mod:`.plain`, :mod:`.terminal`) prints what it is told.
Which instance a chat continues, and why the opening message is ``Hello.``, are in
docs/chat.md.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, Callable

from formctl.cli import render
from formctl.cli.chat.commands import ChatCommands
from formctl.cli.chat.seen import OwnCommits, shown_after
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
from formctl.forms.lifecycle import is_continuable, is_stale
from formctl.forms.person_status import status_for
from formctl.forms.reading import DefaultInstance

OPENER = "Hello."
CHAT_SOURCE = "chat"
POLL_SECONDS = 1.0


@dataclass
class ChatOptions:
    form: str | None = None
    instance_id: str | None = None
    subject: str | None = None
    model: str | None = None
    offline: bool = False
    record: str | None = None
    seed: list[str] = dc_field(default_factory=list)
    store: str | None = None
    forms: str | None = None
    debug: bool = False
    as_host: bool = False  # the person may /resolve: a form author playing the host
    migrate: bool = False  # move a stale instance to the registered version without asking


def _seed_lines(pairs: list[str]) -> list[str]:
    """``--seed k=v`` as the ``k: v`` lines of the opening message (docs/chat.md: who starts the form)."""
    lines = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f'--seed expects field=value, got "{pair}".')
        lines.append(f"{key.strip()}: {value.strip()}")
    return lines


# --------------------------------------------------------------------------- the session


class ChatSession:
    """The store, the runners, the model, the loop and the recorder of one chat; no I/O of its own.

    ``on_event`` (set by the face) receives every loop event; ``send`` runs one turn;
    ``command`` runs a ``/command``, printing to the console the face gives it.
    """

    def __init__(self, options: ChatOptions) -> None:
        from formctl.forms.runner import FormRunner

        self.options = options
        self.seed_lines = _seed_lines(options.seed)  # a malformed --seed fails before anything opens
        self.store_dir = local_folder(options.store)  # input history (and conversations, in a folder store)
        self.registry = open_registry(options.forms)
        self.adapter = open_store(options.store)
        self.notes: list[str] = []  # lines for the face to print before the chat starts
        self.failed = False  # a turn failed (the model, or starting the form): see run_chat's status
        self.unwritten: str | None = None  # why some of the person's answers could not be written (the store)
        self.stopped: str | None = None  # why the chat cannot go on (the API refused the key)
        # The last turn was stopped (Ctrl-C) before it ended: what it saved was not yet said to the
        # person, so the form is not marked as seen, and the face says it and asks again.
        self.interrupted = False
        self.cancelled = False  # the last turn was stopped (``interrupted`` is reset once it is said)

        if options.instance_id is not None:
            instance = self._resumable(options.instance_id)
            self.form_id, self.subject = instance.def_id, instance.subject
        else:
            assert options.form is not None
            self.form_id, self.subject = options.form, options.subject or default_subject()
        self.compiled = self.registry.load(self.form_id)  # an unknown or broken form fails here, in one line
        for line in self.seed_lines:  # a mistyped --seed would otherwise reach the model as chat and vanish
            key = line.partition(":")[0]
            if self.compiled.resolve_field(key) is None:
                raise InvalidArgumentError(
                    f"--seed {key}: no such field on {self.form_id} (formctl check {self.form_id} lists them)."
                )
        pinned = options.instance_id or self._continuable(self.form_id)
        self.adapter.ensure_writable()  # a store that cannot be written fails here, before the person types
        # The conversation's instance, shared by its runners: calls without an instance id act on
        # it (not on whatever the subject touched last), and the model's form_start moves it.
        self.default = DefaultInstance(pinned)
        # Every commit this chat's runners make, until the person is shown the form (seen.py):
        # what differs in the store beyond them was written elsewhere, and is said.
        self.own = OwnCommits()

        def runner(actor: str, adapter: Any) -> Any:
            return FormRunner(
                adapter,
                registry=self.registry,
                subject=self.subject,
                actor=actor,
                source=CHAT_SOURCE,
                default=self.default,
                on_commit=self.own.record,
            )

        self.agent = runner("agent", self.adapter)
        self.person = runner("person", self.adapter)
        if pinned is not None:
            self._bring_up_to_date(pinned)
        self._poll_adapter: Any = None
        self._poll_runner: Any = None
        self._watcher: Any = None  # LISTEN on a PostgreSQL store (see wait_for_change)
        self._watched = False

        from formctl.agent.loop import ChatLoop
        from formctl.agent.models import pick_model

        self.conversations = open_conversations(options.store, self.adapter, self.subject)
        messages = self._saved_conversation(pinned) if pinned else []
        self.resumed = bool(messages)
        self.model = pick_model(self.agent, model_name=options.model, offline=options.offline, form_id=self.form_id)
        if options.as_host and self.model.name == "guided":  # its waiting message then names /resolve
            self.model.state.host_here = True  # type: ignore[attr-defined]
        self.recorder = self._recorder()
        self.on_event: Callable[[Any], None] | None = None
        # The model reaches this conversation's subject and nobody else's (README, "Who may do what").
        # formctl's own questions to the person (a model's value their words don't hold): the face
        # sets ``asker`` (print the question, read their answer line); without one nothing is asked.
        self.asker: Callable[[str], str | None] | None = None
        from formctl.agent.person import Person

        self.loop = ChatLoop(
            self.agent,
            self.model,
            form_id=self.form_id,
            on_event=self._event,
            messages=messages,
            conversation_store=self.conversations,
            scope=self.subject,
            person=Person(ask=self._ask_person, not_theirs=frozenset({OPENER})),
        )
        self._labels: dict[str, dict[str, str]] = {}
        self.calls: dict[str, Any] = {}
        # What the person was last shown of the instance (formctl.agent.notices): kept with the
        # conversation, so a resumed chat can say what changed while it was away.
        self.seen: dict[str, Any] | None = self.conversations.seen(pinned) if self.resumed and pinned else None
        self.loop.seen = self.seen
        if self.seen is None and pinned is not None:
            # A chat opening on answers it has no record of showing: the opening turn shows them as
            # they are now, and a write elsewhere while it runs is said after it (seen.py).
            view = self._view()
            if view is not None:
                self._shown(view)
        self.commands = ChatCommands(self)  # the /commands (commands.py): a table, run against this session

    def command(self, line: str, out: Any, err: Any = None) -> bool:
        """Run a ``/command`` (see :class:`ChatCommands`); False means leave the chat."""
        return self.commands.run(line, out, err)

    def _ask_person(self, question: str) -> str | None:
        answer = self.asker(question) if self.asker is not None else None
        if answer is not None and self.recorder is not None:
            self.recorder.answer(answer)  # a replay gives it again when formctl asks again
        return answer

    # -- choosing the instance ---------------------------------------------------------

    def _resumable(self, instance_id: str) -> Any:
        from formctl.forms.runner import FormRunner

        reads = FormRunner(self.adapter, registry=self.registry, subject=self.options.subject or default_subject())
        instance = reads.open_instance(instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{instance_id}".')
        if instance.status == "abandoned":
            reason = f" ({instance.closed_reason})" if instance.closed_reason else ""
            raise InstanceClosedError(
                f'Form instance "{instance.id}" was abandoned{reason}; its answers are kept '
                f"(formctl export {instance.id})."
            )
        return instance

    def _continuable(self, form_id: str) -> str | None:
        """The subject's instance of ``form_id`` to carry on with, or None to start a new one
        (the runner decides: docs/engine.md, "Completion and closing")."""
        from formctl.forms.runner import FormRunner

        try:
            decision = FormRunner(self.adapter, registry=self.registry, subject=self.subject).continuation(form_id)
        except StoreError as exc:
            if getattr(exc, "reason", None) is None:
                raise  # the store failed (a server away, a folder unreadable): no instance is damaged
            fix = (
                "restore it from a backup (formctl store check lists damaged instances)"
                if is_database(self.options.store)
                else "restore the file, or move it aside to start afresh (formctl store check lists damaged files)"
            )
            exc.message = f"{exc.message} Not starting a new {form_id} in its place: {fix}."
            exc.args = (exc.message,)
            raise
        if decision.note is not None:
            self.notes.append(decision.note)
        return decision.instance_id

    def stale_instance(self) -> Any:
        """The instance this chat continues, if it is stale (formctl.cli.drift offers to move it)."""
        instance_id = self.instance_id
        instance = self.agent.open_instance(instance_id) if instance_id is not None else None
        return instance if instance is not None and self._stale(instance) else None

    def migrate(self) -> Any:
        """Move this chat's instance to the registered version of its form (the person's choice)."""
        result = self.person.migrate(self.instance_id)
        self.notes = [n for n in self.notes if "can't be continued" not in n]  # it can now
        return result

    def _stale(self, instance: Any) -> bool:
        """A continuable instance started on another version of the form, which has no migrate."""
        return is_continuable(instance) and is_stale(self.compiled, instance)

    def _bring_up_to_date(self, instance_id: str) -> None:
        """Opening a conversation is when recovery happens: re-run what a process that died left
        running, after migrating the instance if its form changed and can migrate. Reads never do.

        A damaged instance (its files lost what the store acknowledged) is said first: every
        answer typed into it would be refused until a host accepts the loss."""
        found = self.person.damage(instance_id)
        if found is not None:
            self.notes.append(
                f"This form can't take answers now: {found.describe()}. Nothing you answer here can be "
                f"saved until a host accepts the loss with formctl store repair {instance_id} --as NAME."
            )
            return
        try:
            self.agent.recover(instance_id)
        except FormStaleError:
            pass  # said in the notes; it can still be abandoned
        except FormError as exc:  # a migrate() that fails: the chat opens, and says why writes will fail
            self.notes.append(exc.message)

    def _saved_conversation(self, instance_id: str) -> list[Any]:
        """The instance's saved messages; a damaged file is set aside and the chat says so."""
        messages, set_aside = self.conversations.load_or_set_aside(instance_id)
        if set_aside is not None:
            self.notes.append(set_aside)
        return list(messages)  # a folder's ConversationStore or the database's (workspace.open_conversations)

    def _recorder(self) -> Any:
        if not self.options.record:
            return None
        from formctl.agent.models import model_label
        from formctl.transcripts.record import Recorder

        path = Path(self.options.record)
        if path.exists():  # a transcript is a regression test: recording over one would lose it
            raise AlreadyExistsError(
                f"{path} already exists: record to a new path, or remove it first "
                f"(formctl replay {path} --update refreshes it instead)."
            )
        recorder = Recorder(
            path,
            form_id=self.form_id,
            form_version=self.compiled.version,
            model=model_label(self.model),  # PROVIDER:NAME, as --model takes it
            subject=self.subject,
            runner=self.agent,
        )
        if recorder.transcript.resumed:
            self.notes.append(
                f"Recording {path} over a form that already has answers: formctl replay "
                f"starts from an empty store and can't reproduce it. For a replayable "
                f"transcript, record a new form from its start."
            )
        return recorder

    # -- what the face shows -----------------------------------------------------------

    @property
    def instance_id(self) -> str | None:
        return self.default.instance_id

    def model_line(self) -> str:
        """The one line at the top: which form, which model, and how to get help."""
        if self.model.name == "guided":
            from formctl.agent.models import choose_model

            why = choose_model(self.options.model, offline=self.options.offline).why or "guided"
            who = f"the guided offline model ({why})"
        else:
            from formctl.agent.models import model_label

            who = f"model {model_label(self.model)}"
        where = f" · {self.instance_id}" if self.instance_id else ""
        host = " · playing the host (/resolve works)" if self.options.as_host else ""
        return f"{self.compiled.name}{where} · {who}{host} · /help for commands"

    def labels(self, def_id: str | None = None) -> dict[str, str]:
        def_id = def_id or self.form_id
        if def_id not in self._labels:
            try:
                self._labels[def_id] = {f.id: f.label for f in self.registry.load(def_id).fields}
            except Exception:
                self._labels[def_id] = {}
        return self._labels[def_id]

    def status_lines(self, runner: Any = None) -> list[str]:
        """Tier 0 as lines, or, when it is empty (complete, abandoned, not started), what the form is."""
        lines = self._status_lines(runner or self.agent)
        if self.options.as_host:
            lines[0] = f"[as host] {lines[0]}"
        return lines

    def _status_lines(self, runner: Any) -> list[str]:
        # The person's status line, not the model's tier 0 (forms/person_status.py).
        text: str = status_for(runner, self.instance_id) if self.instance_id is not None else ""
        if text:
            lines = text.splitlines()
            lines[0] = self._as_asked(lines[0], runner)
            return lines
        tag = f"[form: {self.form_id}]"
        if self.instance_id is None:
            return [f"{tag} not started"]
        instance = runner.open_instance(self.instance_id)
        if instance is None:
            return [f"{tag} not found"]
        if instance.status == "abandoned":
            return [f"{tag} abandoned — {instance.closed_reason or 'closed'}"]
        return [f"{tag} {instance.status}"]

    def _as_asked(self, line: str, runner: Any) -> str:
        """Tier 0's step line as the person sees the chat: the step of the question the model
        asked last (the guided model asks optional questions left behind after the engine has
        moved on), and without the optional fields the person chose to leave out."""
        asking = getattr(self.model, "asking", None)
        if asking is None or self.instance_id is None or " · pending: " not in line and "step " not in line:
            return line
        asked, skipped = asking()
        try:
            view = runner.view(self.instance_id)
        except FormError:
            return line
        compiled, ev = view.compiled, view.evaluation
        if ev.open_step is None:
            return line
        head = line.split(" · pending: ")[0]
        k = ev.open_step
        field = compiled.field_by_id.get(asked) if asked else None
        if field is not None and field.step_index != k and not ev.revisiting:
            k = field.step_index
            step = compiled.steps[k]
            head = re.sub(
                r'step \d+/\d+ "[^"]*"',
                lambda _: f'step {step.number}/{len(compiled.steps)} "{step.title}"',
                head,
                count=1,
            )
        pending = [
            f.label
            for f in compiled.steps[k].fields
            if ev.applicable[f.order] and ev.status[f.order] != "filled" and f.id not in skipped
        ]
        return head + (" · pending: " + ", ".join(pending) if pending else "")

    def poll(self) -> tuple[Any, list[str]] | None:
        """For the status poller (another thread): (a change stamp, the status lines), read through
        an adapter of its own so it never shares file state with a turn in progress."""
        if self._poll_runner is None:
            from formctl.forms.runner import FormRunner

            self._poll_adapter = open_store(self.options.store)
            self._poll_runner = FormRunner(
                self._poll_adapter,
                registry=self.registry,
                subject=self.subject,
                actor="agent",
                source=CHAT_SOURCE,
                default=self.default,
            )
        instance_id = self.instance_id
        if instance_id is None:
            return None
        stamp = self._poll_runner.stamp(instance_id)
        if stamp is None:
            return None
        return stamp, self.status_lines(self._poll_runner)

    def wait_for_change(self, timeout: float, stop: Any) -> bool:
        """For the status poller: block up to ``timeout`` seconds (or until ``stop`` is set) and say
        whether the instance may have changed elsewhere, so that :meth:`poll` is worth a read.

        A store that announces writes (PostgreSQL's LISTEN/NOTIFY, through ``adapter.watch()``)
        wakes this as soon as another process commits, and a quiet second costs no read at all.
        Any other store, or one whose announcements cannot be heard just now, is read every
        ``timeout`` seconds as before."""
        if self._watcher is None and not self._watched:
            self._watched = True
            watch = getattr(self._poll_adapter or self.adapter, "watch", None)
            if watch is not None:
                self._watcher = watch()
                stop.wait(0)
                return True  # read once: a write before we listened is not announced
        if self._watcher is not None:
            changed = self._watcher.wait(timeout)
            if changed is not None:
                return self.instance_id in changed
        stop.wait(timeout)
        return True

    def stamp(self) -> Any:
        """The change stamp of the instance as this chat last wrote it (see :meth:`poll`)."""
        instance_id = self.instance_id
        return self.agent.stamp(instance_id) if instance_id is not None else None

    # -- what the person was last shown (docs/chat.md: the chat always knows what it asked)

    def _view(self) -> Any:
        instance_id = self.instance_id
        if instance_id is None:
            return None
        try:
            return self.agent.view(instance_id)
        except FormError:
            return None

    def mark_seen(self) -> None:
        """A turn ended: the person has been shown what this chat's own commits did, and not
        what was written elsewhere meanwhile (seen.py), which the next notice says."""
        view = self._view()
        commits = self.own.take()
        if view is not None:
            self.seen = shown_after(self.seen, commits, view.compiled, view.instance, view.evaluation)
        else:
            self.seen = None
        self.loop.seen = self.seen

    def _shown(self, view: Any) -> None:
        """The person is being shown ``view`` whole (a notice says what changed up to it)."""
        from formctl.agent.notices import snapshot

        self.own.take()  # what they did is part of what is shown now
        self.seen = snapshot(view.compiled, view.evaluation, view.instance)
        self.loop.seen = self.seen

    def seen_version(self) -> Any:
        return (self.seen["instance"], self.seen["version"]) if self.seen else None

    def changes(self, by: str, words: str | None = None) -> str | None:
        """The notice to send when the form changed since the person was last shown it (by
        anything but this chat's own model), or None when nothing they would see changed.
        ``words``: the person's line that crossed the change, sent with it for the model to
        take only if the question it answered is still the open one."""
        from formctl.agent.notices import describe_changes, notice_message

        seen, instance_id = self.seen, self.instance_id
        if seen is None or instance_id is None or seen.get("instance") != instance_id:
            return None
        view = self._view()
        if view is None or view.instance.version == seen.get("version"):
            return None
        sentences = describe_changes(view.compiled, view.evaluation, view.instance, seen)
        self._shown(view)  # the notice says it all; or only the version moved (an executor's record)
        if not sentences:
            return None
        return notice_message(f"{by}: {'; '.join(sentences)}.", words)

    # -- turns -------------------------------------------------------------------------

    def opening(self) -> str | None:
        """The message that opens the conversation (or carries ``--seed`` into a resumed one), if any."""
        # The seeds ride under the opening line in a continued chat too: the person record reads
        # the lines after it as the host's values, never as the person's words (agent/person.py).
        if not self.resumed or self.seed_lines:
            return "\n".join([OPENER, *self.seed_lines])
        return None

    def send(self, text: str) -> Any:
        if self.recorder is not None:
            self.recorder.person(text)
        return self.loop.send(text)

    def _event(self, ev: Any) -> None:
        if ev.kind == "turn_end":
            self.interrupted = self.cancelled = ev.stop_reason == "cancelled"
            if not self.interrupted:
                self.mark_seen()  # before the loop's last save of the turn, which keeps it
        if ev.kind == "tool_call":
            self.calls[ev.id] = ev
        if ev.kind == "loop_error" and ev.code == "key_rejected":
            self.stopped = ev.message  # every further line would be refused the same way
        if ev.kind == "tool_result" and isinstance(ev.result, dict) and ev.result.get("status") == "error":
            code = (ev.result.get("data") or {}).get("code") if isinstance(ev.result.get("data"), dict) else None
            if code in ("store_damaged", "store_error"):  # the person's answers were not written
                self.unwritten = str(ev.result.get("message") or code)
        if ev.kind == "loop_error" or (
            ev.kind == "tool_result"
            and ev.name == "form_start"
            and isinstance(ev.result, dict)
            and ev.result.get("status") == "error"
        ):
            self.failed = True
        if self.recorder is not None:
            try:
                self.recorder.event(ev)
            except Exception as exc:  # a transcript problem must not end the chat
                if self.options.debug:
                    raise
                self.recorder = None
                sys.stderr.write(f"· stopped recording {self.options.record}: {exc}\n")
        if self.on_event is not None:
            self.on_event(ev)

    def activity(self, ev: Any) -> str:
        """The dim line for a tool result (empty for reads)."""
        call = self.calls.pop(ev.id, None)
        data = ev.result.get("data") if isinstance(ev.result, dict) else None
        def_id = data.get("form") if isinstance(data, dict) else None
        return render.activity_line(
            ev.name,
            ev.result,
            self.labels(def_id),
            call.input if call is not None and isinstance(call.input, dict) else None,
            reasons=self.model.name != "guided",
        )  # guided says the reason itself

    def mask_text(self, text: str) -> str:
        """``text`` with every value ever given to a sensitive field of this chat's instance masked."""
        if not any(f.sensitive for f in self.compiled.fields) or self.instance_id is None:
            return text
        from formctl.transcripts.normalise import masker_for

        return masker_for(self.compiled, self.agent.open_instance(self.instance_id)).mask_text(text)

    def close(self) -> None:
        if self.recorder is not None:
            try:
                self.recorder.finish(self.agent, self.instance_id)
            except Exception:
                if self.options.debug:
                    raise
        if self._watcher is not None:
            self._watcher.close()
        for adapter in (self.adapter, self._poll_adapter):
            if adapter is not None:
                adapter.close()

    def usage_line(self) -> str | None:
        """The conversation's tokens in one line, or None for a model that reports none (guided)."""
        usage = self.loop.usage
        return usage.line() if usage else None

    def cancel(self) -> None:
        """Ctrl-C during a turn (any thread): stop the loop at its next safe point, and stop
        waiting for a store that is not answering, if that is where the turn is."""
        self.loop.cancel()
        interrupt = getattr(self.adapter, "interrupt", None)
        if interrupt is not None:
            interrupt()

    def goodbye(self) -> str:
        instance_id = self.instance_id
        if instance_id is None:
            return "Nothing was started."
        if self.unwritten is not None:
            return (
                f"Not saved: some of your answers could not be written to {instance_id} (the store refused "
                f"them). Once a host has run formctl store repair {instance_id}, carry on with: "
                f"formctl resume {instance_id}"
            )
        try:
            instance = self.agent.open_instance(instance_id)
        except StoreError as exc:  # the store is away: say what is certain without it
            return (
                f"{exc.message} Every answer the chat confirmed as saved is in {instance_id}; "
                f"carry on with: formctl resume {instance_id}"
            )
        if instance is None:
            return f"{instance_id} is gone from the store."
        status = instance.status
        if status == "complete":
            return f"Done: {self.compiled.name} {instance_id} is complete."
        if status == "abandoned":
            return f"{instance_id} was abandoned; its answers are kept."
        if self._stale(instance):
            return (
                f"{instance_id} can't be continued (its form changed); move it with: formctl migrate "
                f"{instance_id}, or close it with: formctl abandon {instance_id} --reason REASON"
            )
        if status == "awaiting":
            return (
                f"Saved. {instance_id} is waiting on {instance.blocked_on}; "
                f"once it is resolved, carry on with: formctl resume {instance_id}"
            )
        if status == "ready":
            return (
                f"Saved, not sent: {instance_id} is ready to send. To check it and send it: "
                f"formctl resume {instance_id}"
            )
        return f"Saved. Carry on with: formctl resume {instance_id}"
