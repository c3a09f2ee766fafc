"""The chat session: the store, the runners, the model, the loop and the recorder of one chat.

No I/O of its own: a front end (:mod:`.plain`, :mod:`.terminal`) prints what it is told.
:meth:`ChatSession.open` opens a chat (:mod:`.opening` does the opening work: which instance it
continues, recovery, the saved conversation, the model); the session only wires what it is
given. Which instance a chat continues, and why the opening message is ``Hello.``, are in
docs/chat.md.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, Self

from formctl.agent.models.base import SaysWhatItAsked
from formctl.cli import render
from formctl.cli.chat.commands import ChatCommands
from formctl.cli.chat.opening import Opening, open_chat
from formctl.cli.chat.options import CHAT_SOURCE, OPENER, ChatOptions
from formctl.cli.chat.seen import REPLACED, Snapshot, shown_after, snapshot_of
from formctl.errors import FormError, StoreError
from formctl.forms.adapter import Interruptible, ReportsWaits
from formctl.forms.lifecycle import is_awaiting, is_closed, is_complete, is_continuable, is_ready, is_stale
from formctl.forms.person_status import Asking, status_for

if TYPE_CHECKING:  # pragma: no cover
    import threading

    from rich.console import Console

    from formctl.agent.events import Event, ToolCall, ToolResult
    from formctl.agent.loop import Turn
    from formctl.forms.instance import Instance
    from formctl.forms.project import MigrateResult
    from formctl.forms.reading import InstanceView, Stamp
    from formctl.forms.runner import FormRunner

__all__ = ["CHAT_SOURCE", "OPENER", "ChatOptions", "ChatSession"]

# --------------------------------------------------------------------------- the session


class ChatSession:
    """The store, the runners, the model, the loop and the recorder of one chat; no I/O of its own.

    Made by :meth:`open`. ``on_event`` (set by the face) receives every loop event; ``send``
    runs one turn; ``command`` runs a ``/command``, printing to the console the face gives it.
    """

    @classmethod
    def open(cls, options: ChatOptions) -> Self:
        """Open a chat for ``options`` (see :func:`~formctl.cli.chat.opening.open_chat`)."""
        return cls(open_chat(options))

    def __init__(self, opening: Opening) -> None:
        from formctl.agent.loop import ChatLoop
        from formctl.agent.person import Person

        self.options = opening.options
        self.seed_lines = opening.seed_lines
        self.store_dir = opening.store_dir
        choice, runners, saved = opening.choice, opening.runners, opening.saved
        self.registry, self.adapter = runners.registry, runners.adapter
        self.form_id, self.subject, self.compiled = choice.form_id, choice.subject, choice.compiled
        self.default = runners.default
        self.own = runners.own  # this chat's commits, until the person is shown the form (seen.py)
        self.agent, self.person = opening.agent, opening.person
        self.conversations = opening.conversations
        self.model = opening.model
        self.recorder = opening.recorder
        self.poller = opening.poller
        self.notes = opening.notes  # lines for the face to print before the chat starts
        self.resumed = bool(saved.messages)
        self.failed = False  # a turn failed (the model, or starting the form): see run_chat's status
        self.unwritten: str | None = None  # why some of the person's answers could not be written (the store)
        self.stopped: str | None = None  # why the chat cannot go on (the API refused the key)
        # The last turn was stopped (Ctrl-C) before it ended: what it saved was not yet said to the
        # person, so the form is not marked as seen, and the face says it and asks again.
        self.interrupted = False
        self.cancelled = False  # the last turn was stopped (``interrupted`` is reset once it is said)
        self.on_event: Callable[[Event], None] | None = None
        # formctl's own questions to the person (a model's value their words don't hold): the face
        # sets ``asker`` (print the question, read their answer line); without one nothing is asked.
        self.asker: Callable[[str], str | None] | None = None
        # The model reaches this conversation's subject and nobody else's (README, "Who may do what").
        # The loop resumes the saved conversation (its messages, the person's numbered words).
        self.loop = ChatLoop(
            self.agent,
            self.model,
            form_id=self.form_id,
            on_event=self._event,
            conversation=saved.conversation,
            conversation_store=self.conversations,
            scope=self.subject,
            person=Person(ask=self._ask_person, not_theirs=frozenset({OPENER})),
        )
        # What the person was last shown of the instance (formctl.agent.notices), saved with the
        # conversation: a resumed chat says what changed while it was away.
        self.seen: Snapshot | None = saved.seen
        self._tell_loop_seen()
        self._labels: dict[str, dict[str, str]] = {}
        self.calls: dict[str, ToolCall] = {}
        self.commands = ChatCommands(self)  # the /commands (commands.py): a table, run against this session
        # The face's "waiting for the database…" line: said once a turn, when the store starts
        # waiting for its server (formctl.forms.adapter.ReportsWaits; from the waiting thread).
        self.on_store_wait: Callable[[str], None] | None = None
        self._said_waiting = False
        self.store_failed = False  # the store failed during the last turn (see Face._send_again)
        if isinstance(self.adapter, ReportsWaits):
            self.adapter.on_wait = self._store_waits

    def command(self, line: str, out: Console, err: Console | None = None) -> bool:
        """Run a ``/command`` (see :class:`ChatCommands`); False means leave the chat."""
        return self.commands.run(line, out, err)

    def _ask_person(self, question: str) -> str | None:
        answer = self.asker(question) if self.asker is not None else None
        if answer is not None and self.recorder is not None:
            self.recorder.answer(answer)  # a replay gives it again when formctl asks again
        return answer

    # -- the instance --------------------------------------------------------------------

    def stale_instance(self) -> Instance | None:
        """The instance this chat continues, if it is stale (formctl.cli.drift offers to move it)."""
        instance_id = self.instance_id
        instance = self.agent.open_instance(instance_id) if instance_id is not None else None
        return instance if instance is not None and self._stale(instance) else None

    def migrate(self) -> MigrateResult:
        """Move this chat's instance to the registered version of its form (the person's choice)."""
        result = self.person.migrate(self.instance_id)
        self.notes = [n for n in self.notes if "can't be continued" not in n]  # it can now
        return result

    def _stale(self, instance: Instance) -> bool:
        """A continuable instance started on another version of the form, which has no migrate."""
        return is_continuable(instance) and is_stale(self.compiled, instance)

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

    def status_lines(self, runner: FormRunner | None = None) -> list[str]:
        """Tier 0 as lines, or, when it is empty (complete, abandoned, not started), what the form is."""
        lines = self._status_lines(runner or self.agent)
        if self.options.as_host:
            lines[0] = f"[as host] {lines[0]}"
        return lines

    def _status_lines(self, runner: FormRunner) -> list[str]:
        # The person's status line, not the model's tier 0 (forms/person_status.py).
        text = status_for(runner, self.instance_id, self._asking()) if self.instance_id is not None else ""
        if text:
            return text.splitlines()
        tag = f"[form: {self.form_id}]"
        if self.instance_id is None:
            return [f"{tag} not started"]
        instance = runner.open_instance(self.instance_id)
        if instance is None:
            return [f"{tag} not found"]
        if is_closed(instance):
            return [f"{tag} abandoned — {instance.closed_reason or 'closed'}"]
        return [f"{tag} {instance.status}"]

    def _asking(self) -> Asking | None:
        """What the model asked last, when it can say (the guided model): the status line is then
        the step of the question it asked (it asks optional questions left behind after the engine
        has moved on), without the optional fields the person chose to leave out."""
        if not isinstance(self.model, SaysWhatItAsked):
            return None
        asked, left_out = self.model.asking()
        return Asking(asked, left_out)

    def poll(self) -> tuple[Stamp, list[str]] | None:
        """For the status poller (another thread): (a change stamp, the status lines), read through
        the poller's own adapter so it never shares file state with a turn in progress."""
        instance_id = self.instance_id
        if instance_id is None:
            return None
        stamp = self.poller.stamp(instance_id)
        if stamp is None:
            return None
        return stamp, self.status_lines(self.poller.runner)

    def wait_for_change(self, timeout: float, stop: threading.Event) -> bool:
        """For the status poller: block up to ``timeout`` seconds (or until ``stop`` is set) and say
        whether the instance may have changed elsewhere, so that :meth:`poll` is worth a read
        (see :meth:`StatusPoller.wait_for_change <formctl.cli.chat.poller.StatusPoller.wait_for_change>`)."""
        return self.poller.wait_for_change(self.instance_id, timeout, stop)

    def stamp(self) -> Stamp | None:
        """The change stamp of the instance as this chat last wrote it (see :meth:`poll`)."""
        instance_id = self.instance_id
        return self.agent.stamp(instance_id) if instance_id is not None else None

    # -- what the person was last shown (docs/chat.md: the chat always knows what it asked)

    def _view(self) -> InstanceView | None:
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
        self._tell_loop_seen()

    def _shown(self, view: InstanceView) -> None:
        """The person is being shown ``view`` whole (a notice says what changed up to it)."""
        self.own.take()  # what they did is part of what is shown now
        self.seen = snapshot_of(view.compiled, view.evaluation, view.instance)
        self._tell_loop_seen()

    def _tell_loop_seen(self) -> None:
        """The loop saves what the person was shown with the conversation, after every turn."""
        self.loop.seen = dict(self.seen) if self.seen is not None else None

    def seen_version(self) -> tuple[str, int | None] | None:
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
        sentences = [
            *describe_changes(view.compiled, view.evaluation, view.instance, dict(seen)),
            *seen.get(REPLACED, ()),
        ]
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

    def _store_waits(self, server: str) -> None:
        if not self._said_waiting and self.on_store_wait is not None:
            self._said_waiting = True
            self.on_store_wait(f"waiting for the database ({server})…")

    def store_answers(self) -> bool:
        """Whether the store answers now (one quick read): after a turn the store failed, a store
        that does not is away (a server down or frozen), not damaged."""
        try:
            self.agent.instances(limit=1)
        except FormError:
            return False
        return True

    def send(self, text: str) -> Turn:
        self._said_waiting = self.store_failed = False
        if self.recorder is not None:
            self.recorder.person(text)
        return self.loop.send(text)

    def _event(self, ev: Event) -> None:
        from formctl.agent.events import LoopError, ToolCall, ToolResult, TurnEnd

        if isinstance(ev, TurnEnd):
            self.interrupted = self.cancelled = ev.stop_reason == "cancelled"
            if not self.interrupted:
                self.mark_seen()  # before the loop's last save of the turn, which keeps it
        elif isinstance(ev, ToolCall):
            self.calls[ev.id] = ev
        elif isinstance(ev, LoopError):
            if ev.code in ("store_error", "store_damaged"):
                self.store_failed = True  # the store failed under the turn (the model's reads included)
            if ev.code == "key_rejected":
                self.stopped = ev.message  # every further line would be refused the same way
            self.failed = True
        elif isinstance(ev, ToolResult):
            self._tool_result(ev)
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

    def _tool_result(self, ev: ToolResult) -> None:
        """A store that refused the person's answers is said at the end; a form that could not be
        started fails the chat."""
        if not isinstance(ev.result, dict) or ev.result.get("status") != "error":
            return
        data = ev.result.get("data")
        code = data.get("code") if isinstance(data, dict) else None
        if code in ("store_damaged", "store_error"):  # the person's answers were not written
            self.unwritten = str(ev.result.get("message") or code)
            self.store_failed = True
        if ev.name == "form_start":
            self.failed = True

    def activity(self, ev: ToolResult) -> str:
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
        self.poller.close()
        self.adapter.close()

    def usage_line(self) -> str | None:
        """The conversation's tokens in one line, or None for a model that reports none (guided)."""
        usage = self.loop.usage
        return usage.line() if usage else None

    def cancel(self) -> None:
        """Ctrl-C during a turn (any thread): stop the loop at its next safe point, and stop
        waiting for a store that is not answering, if that is where the turn is."""
        self.loop.cancel()
        if isinstance(self.adapter, Interruptible):
            self.adapter.interrupt()

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
        if is_complete(instance):
            return f"Done: {self.compiled.name} {instance_id} is complete."
        if is_closed(instance):
            return f"{instance_id} was abandoned; its answers are kept."
        if self._stale(instance):
            return (
                f"{instance_id} can't be continued (its form changed); move it with: formctl migrate "
                f"{instance_id}, or close it with: formctl abandon {instance_id} --reason REASON"
            )
        if is_awaiting(instance):
            return (
                f"Saved. {instance_id} is waiting on {instance.blocked_on}; "
                f"once it is resolved, carry on with: formctl resume {instance_id}"
            )
        if is_ready(instance):
            return (
                f"Saved, not sent: {instance_id} is ready to send. To check it and send it: "
                f"formctl resume {instance_id}"
            )
        return f"Saved. Carry on with: formctl resume {instance_id}"
