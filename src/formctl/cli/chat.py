"""``formctl run`` and ``formctl resume``: the chat between a person and a model over one form.

Two faces over one :class:`ChatSession`:

* :class:`TerminalChat` (stdin and stdout are terminals): a prompt-toolkit prompt whose
  bottom toolbar shows tier 0, the model's text streaming in, tool activity as short dim
  lines, ``/commands`` for the person, input history kept across runs, Ctrl-C to stop a
  turn and Ctrl-D (or ``/quit``) to leave.
* :class:`PlainChat` (anything else): each stdin line is one message, output is plain
  text, so scripts and CI drive it (``printf 'Dana Reeve\\n...' | formctl run travel-claim``).

Decisions the issue left open, and why:

* **Which instance.** ``run FORM`` continues the subject's most recent instance of FORM
  that is active, awaiting or stale. A complete one is not reopened: a second
  ``formctl run travel-claim`` is a new claim (the old one is named, with
  ``formctl resume ID`` for corrections). Abandoned ones are never continued.
* **One conversation, one instance.** The runner the model drives sees only this
  conversation's instance as "the subject's open form" (:class:`_ConversationScope`),
  not whichever of the subject's instances was touched last; otherwise resuming an
  older claim while another form is open would send the model's answers to the other
  form. When the model starts a form, the conversation follows the new instance.
* **Who starts the form.** The model does, with ``form_start``, exactly as in every
  recorded transcript, so ``--record`` files replay. A new conversation opens with the
  person's side saying ``Hello.`` (recorded as the first person turn), so the model
  speaks first and the first line a person types (or pipes) is an answer.
  ``--seed k=v`` values go on the following lines of that opening message as
  ``k: v``: the model seeds them through its start (or fill) call, and a replay
  reproduces them.
* **Subject.** ``--subject`` or ``FORMCTL_SUBJECT``, else the login name.
* **Provenance.** The model writes as ``actor="agent"``; the person's ``/undo``,
  ``/redo``, ``/resolve`` and ``/abandon`` write as ``actor="person"``; both with
  ``source="chat"``.
* **Input history** lives in the store folder (``<store>/input_history``, mode 0600):
  it holds answers, and the store is where answers are kept and protected.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Any, Callable, Iterator

from formctl.cli import render
from formctl.cli.workspace import default_subject, open_registry, store_path
from formctl.forms.errors import FormError, InvalidArgumentError, NotFoundError, StoreError

OPENER = "Hello."
CHAT_SOURCE = "chat"
POLL_SECONDS = 1.0
CONTINUABLE = ("active", "awaiting", "stale")

HELP = """\
/status              the open step, in full
/inspect [STEP|FIELD] the outline, or one step or field
/history FIELD       every answer given to a field
/undo [FIELD]        take back the last answer (or a field's)
/redo [FIELD]        put an undone answer back
/resolve [--fail REASON]  answer the checkpoint the form waits on
/abandon REASON      close the form without finishing (answers are kept)
/help                this list
/quit                leave; formctl resume ID comes back here"""


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


def run_chat(options: ChatOptions) -> int:
    """Open the session, then the terminal or plain chat. Returns the exit status."""
    session = ChatSession(options)
    try:
        if sys.stdin.isatty() and sys.stdout.isatty() and os.environ.get("TERM") != "dumb":
            TerminalChat(session).run()
        else:
            PlainChat(session).converse()
    finally:
        session.close()
    # Nothing started and a turn failed (the API unreachable, the key refused, the form not
    # starting): a script or CI job must not read that as success.
    return 1 if session.failed and session.instance_id is None else 0


def _stamp(instance: Any) -> tuple[str, int, str]:
    """What changes whenever anyone commits to the instance (a dispatch record moves only ``updated_at``)."""
    return (instance.id, instance.version, instance.updated_at)


def _seed_lines(pairs: list[str]) -> list[str]:
    """``--seed k=v`` as the ``k: v`` lines of the opening message (see the module's decisions)."""
    lines = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f'--seed expects field=value, got "{pair}".')
        lines.append(f"{key.strip()}: {value.strip()}")
    return lines


# --------------------------------------------------------------------------- the scope


class _Pin:
    """The instance a conversation is about (``None`` until the model starts one)."""

    def __init__(self, instance_id: str | None) -> None:
        self.instance_id = instance_id


class _ConversationScope:
    """An adapter seen through one conversation: the subject's open form is this conversation's instance.

    Everything else passes through to the real adapter. ``create_instance`` (the model's
    ``form_start``) moves the conversation to the new instance.
    """

    def __init__(self, adapter: Any, pin: _Pin) -> None:
        self._adapter = adapter
        self._pin = pin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)

    def find_open_instance(self, subject: str) -> Any:
        if self._pin.instance_id is None:
            return None
        instance = self._adapter.get_instance(self._pin.instance_id)
        if instance is None or instance.status == "abandoned" or instance.subject != subject:
            return None
        return instance

    def create_instance(self, *args: Any, **kwargs: Any) -> Any:
        instance = self._adapter.create_instance(*args, **kwargs)
        self._pin.instance_id = instance.id
        return instance


# --------------------------------------------------------------------------- the session


class ChatSession:
    """The store, the runners, the model, the loop and the recorder of one chat; no I/O of its own.

    ``on_event`` (set by the face) receives every loop event; ``send`` runs one turn;
    ``command`` runs a ``/command``, printing to the console the face gives it.
    """

    def __init__(self, options: ChatOptions) -> None:
        from formctl.forms.runner import FormRunner
        from formctl.store.jsonfile import JsonFileAdapter

        self.options = options
        self.seed_lines = _seed_lines(options.seed)  # a malformed --seed fails before anything opens
        self.store_dir = store_path(options.store)
        self.registry = open_registry(options.forms)
        self.adapter = JsonFileAdapter(self.store_dir)
        self.notes: list[str] = []  # lines for the face to print before the chat starts
        self.failed = False  # a turn failed (the model, or starting the form): see run_chat's status

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
                raise InvalidArgumentError(f'--seed {key}: no such field on {self.form_id} '
                                           f"(formctl check {self.form_id} lists them).")
        pinned = options.instance_id or self._continuable(self.form_id)
        self.adapter.ensure_writable()  # a store that cannot be written fails here, before the person types
        self.pin = _Pin(pinned)

        def runner(actor: str, adapter: Any) -> Any:
            return FormRunner(_ConversationScope(adapter, self.pin), registry=self.registry, subject=self.subject,
                              actor=actor, source=CHAT_SOURCE)

        self.agent = runner("agent", self.adapter)
        self.person = runner("person", self.adapter)
        self._poll_adapter: Any = None
        self._poll_runner: Any = None

        from formctl.agent.conversation import ConversationStore
        from formctl.agent.loop import ChatLoop
        from formctl.agent.models import pick_model

        self.conversations = ConversationStore(self.store_dir)
        messages = self._saved_conversation(pinned) if pinned else []
        self.resumed = bool(messages)
        self.model = pick_model(self.agent, model_name=options.model, offline=options.offline, form_id=self.form_id)
        self.recorder = self._recorder()
        self.on_event: Callable[[Any], None] | None = None
        self.loop = ChatLoop(self.agent, self.model, form_id=self.form_id, on_event=self._event,
                             messages=messages, conversation_store=self.conversations)
        self._labels: dict[str, dict[str, str]] = {}
        self.calls: dict[str, Any] = {}

    # -- choosing the instance ---------------------------------------------------------

    def _resumable(self, instance_id: str) -> Any:
        instance = self.adapter.get_instance(instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{instance_id}".')
        if instance.status == "abandoned":
            reason = f" ({instance.closed_reason})" if instance.closed_reason else ""
            raise FormError(f'Form instance "{instance.id}" was abandoned{reason}; its answers are kept '
                            f"(formctl export {instance.id}).", code="abandoned")
        return instance

    def _continuable(self, form_id: str) -> str | None:
        """The subject's instance of ``form_id`` to carry on with, or None to start a new one."""
        try:
            found = self.adapter.find_instances(subject=self.subject, def_id=form_id, strict=True)
        except StoreError as exc:
            raise StoreError(f"{exc.message} Not starting a new {form_id} in its place: restore the file, "
                             "or move it aside to start afresh (formctl store check lists damaged files).",
                             code=exc.code) from None
        for instance in found:  # most recent first
            if self._stale(instance):
                self.notes.append(
                    f"{instance.id} was started on an older version of {form_id} and can't be continued. "
                    "Close it with /abandon REASON (its answers are kept); "
                    f"the next formctl run {form_id} starts afresh."
                )
            if instance.status in CONTINUABLE:
                return instance.id
            if instance.status == "complete":
                self.notes.append(
                    f"Your last {form_id} ({instance.id}) is complete, so this is a new one; "
                    f"to change that one: formctl resume {instance.id}"
                )
                return None
        return None

    def _stale(self, instance: Any) -> bool:
        """Started on another version of the form, which has no migrate: it can't be continued."""
        if instance.status == "stale":
            return True
        return (instance.status in CONTINUABLE and instance.def_version != self.compiled.version
                and self.compiled.migrate is None)

    def _saved_conversation(self, instance_id: str) -> list[Any]:
        """The instance's saved messages; a damaged file is set aside (kept, renamed) and the chat
        starts the conversation afresh.

        The conversation is only the model's context: the answers live in the instance. Failing
        here would lock the person out of a form whose answers are intact, and saving the new
        conversation over the damaged file would lose it, so it is moved to ``*.damaged``.
        """
        path = self.conversations.path(instance_id)
        try:
            return self.conversations.load(instance_id)
        except StoreError as exc:
            if isinstance(exc.__cause__, OSError):
                raise  # unreadable, not damaged: nothing to set aside
            why = exc.message
        except UnicodeDecodeError as exc:
            why = f"The conversation file {path} is corrupt (not UTF-8 text, byte {exc.start})."
        aside = path.with_name(path.name + ".damaged")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.damaged-{n}")
        try:
            os.rename(path, aside)
        except OSError as exc:
            raise StoreError(f"{why} It could not be moved aside ({exc.strerror or exc}).") from None
        self.notes.append(f"{why} It was moved to {aside}; the conversation starts afresh, "
                          "and every answer is kept.")
        return []

    def _recorder(self) -> Any:
        if not self.options.record:
            return None
        from formctl.transcripts.record import Recorder

        path = Path(self.options.record)
        if path.exists():  # a transcript is a regression test: recording over one would lose it
            raise FormError(f"{path} already exists: record to a new path, or remove it first "
                            f"(formctl replay {path} --update refreshes it instead).", code="already_exists")
        recorder = Recorder(path, form_id=self.form_id, form_version=self.compiled.version,
                            model=self.model.name, subject=self.subject, runner=self.agent)
        if recorder.transcript.resumed:
            self.notes.append(f"Recording {path} over a form that already has answers: formctl replay "
                              f"starts from an empty store and can't reproduce it. For a replayable "
                              f"transcript, record a new form from its start.")
        return recorder

    # -- what the face shows -----------------------------------------------------------

    @property
    def instance_id(self) -> str | None:
        return self.pin.instance_id

    def model_line(self) -> str:
        """The one line at the top: which form, which model, and how to get help."""
        if self.model.name == "guided":
            why = "--offline" if self.options.offline else "no ANTHROPIC_API_KEY"
            who = f"the guided offline model ({why})"
        else:
            who = f"model {self.model.name}"
        where = f" · {self.instance_id}" if self.instance_id else ""
        return f"{self.compiled.name}{where} · {who} · /help for commands"

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
        runner = runner or self.agent
        text = runner.tier0()
        if text:
            return text.splitlines()
        tag = f"[form: {self.form_id}]"
        if self.instance_id is None:
            return [f"{tag} not started"]
        instance = runner.adapter.get_instance(self.instance_id)
        if instance is None:
            return [f"{tag} not found"]
        if instance.status == "abandoned":
            return [f"{tag} abandoned — {instance.closed_reason or 'closed'}"]
        return [f"{tag} {instance.status}"]

    def poll(self) -> tuple[Any, list[str]] | None:
        """For the status poller (another thread): (a change stamp, the status lines), read through
        an adapter of its own so it never shares file state with a turn in progress."""
        if self._poll_runner is None:
            from formctl.forms.runner import FormRunner
            from formctl.store.jsonfile import JsonFileAdapter

            self._poll_adapter = JsonFileAdapter(self.store_dir)
            self._poll_runner = FormRunner(_ConversationScope(self._poll_adapter, self.pin), registry=self.registry,
                                           subject=self.subject, actor="agent", source=CHAT_SOURCE)
        instance_id = self.instance_id
        if instance_id is None:
            return None
        instance = self._poll_adapter.get_instance(instance_id)
        if instance is None:
            return None
        return _stamp(instance), self.status_lines(self._poll_runner)

    def stamp(self) -> Any:
        """The change stamp of the instance as this chat last wrote it (see :meth:`poll`)."""
        instance_id = self.instance_id
        instance = self.adapter.get_instance(instance_id) if instance_id is not None else None
        return _stamp(instance) if instance is not None else None

    # -- turns -------------------------------------------------------------------------

    def opening(self) -> str | None:
        """The message that opens the conversation (or carries ``--seed`` into a resumed one), if any."""
        if not self.resumed:
            return "\n".join([OPENER, *self.seed_lines])
        return "\n".join(self.seed_lines) or None

    def send(self, text: str) -> Any:
        if self.recorder is not None:
            self.recorder.person(text)
        return self.loop.send(text)

    def _event(self, ev: Any) -> None:
        if ev.kind == "tool_call":
            self.calls[ev.id] = ev
        if ev.kind == "loop_error" or (ev.kind == "tool_result" and ev.name == "form_start"
                                       and isinstance(ev.result, dict) and ev.result.get("status") == "error"):
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
        return render.activity_line(ev.name, ev.result, self.labels(def_id),
                                    call.input if call is not None and isinstance(call.input, dict) else None)

    def mask_text(self, text: str) -> str:
        """``text`` with every value ever given to a sensitive field of this chat's instance masked."""
        if not any(f.sensitive for f in self.compiled.fields) or self.instance_id is None:
            return text
        from formctl.transcripts.normalise import masker_for

        return masker_for(self.compiled, self.adapter.get_instance(self.instance_id)).mask_text(text)

    def close(self) -> None:
        if self.recorder is not None:
            try:
                self.recorder.finish(self.agent, self.instance_id)
            except Exception:
                if self.options.debug:
                    raise
        for adapter in (self.adapter, self._poll_adapter):
            if adapter is not None:
                adapter.close()

    def goodbye(self) -> str:
        instance_id = self.instance_id
        if instance_id is None:
            return "Nothing was started."
        instance = self.adapter.get_instance(instance_id)
        status = instance.status if instance is not None else "gone"
        if status == "complete":
            return f"Done: {self.compiled.name} {instance_id} is complete."
        if status == "abandoned":
            return f"{instance_id} was abandoned; its answers are kept."
        if self._stale(instance):
            return (f"{instance_id} can't be continued (its form changed); "
                    f"close it with: formctl abandon {instance_id} --reason REASON")
        if status == "awaiting":
            return (f"Saved. {instance_id} is waiting on {instance.blocked_on}; "
                    f"once it is resolved, carry on with: formctl resume {instance_id}")
        return f"Saved. Carry on with: formctl resume {instance_id}"

    # -- /commands ---------------------------------------------------------------------

    def command(self, line: str, out: Any) -> bool:
        """Run a ``/command``, printing to ``out`` (a rich console). Returns False to leave."""
        name, _, rest = line[1:].strip().partition(" ")
        name, rest = name.lower(), rest.strip()
        if name in ("quit", "exit", "q"):
            return False
        if name in ("help", "?", ""):
            out.print(HELP, markup=False, highlight=False)
            return True
        handler = getattr(self, f"_cmd_{name}", None)
        if handler is None:
            out.print(f"Unknown command /{name}; /help lists them.", style="red", markup=False)
            return True
        try:
            handler(rest, out)
        except FormError as exc:
            out.print(f"error: {exc.message}", style="red", markup=False, highlight=False)
        return True

    def _need_instance(self) -> str:
        if self.instance_id is None:
            raise NotFoundError("The form has not been started yet.")
        return self.instance_id

    def _cmd_status(self, rest: str, out: Any) -> None:
        render.print_view(self.person.status(instance_id=self._need_instance()), out)

    def _cmd_inspect(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if not rest:
            view = self.person.inspect("outline", instance_id=instance_id)
        elif self.compiled.resolve_step(rest) is not None:
            view = self.person.inspect("step", rest, instance_id=instance_id)
        elif self.compiled.resolve_field(rest) is not None:
            view = self.person.inspect("field", rest, instance_id=instance_id)
        else:
            raise NotFoundError(f'No step or field "{rest}" on this form.')
        render.print_view(view, out)

    def _cmd_history(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if rest:
            histories = [self.person.history(rest, instance_id=instance_id).to_dict()]
        else:
            instance = self.person.open_instance(instance_id)
            histories = [self.person.history(f.id, instance_id=instance_id).to_dict()
                         for f in self.compiled.fields if f.id in instance.entries]
        render.print_histories(histories, out)

    def _cmd_undo(self, rest: str, out: Any) -> None:
        self._move("undo", rest or None, out)

    def _cmd_redo(self, rest: str, out: Any) -> None:
        self._move("redo", rest or None, out)

    def _move(self, action: str, field: str | None, out: Any) -> None:
        """``/undo`` and ``/redo``: move the cursor, then say which field now holds what."""
        instance_id = self._need_instance()
        if field is None:
            view = self.person.status(instance_id=instance_id)
            target = view.undo if action == "undo" else view.redo
            moved = target.field if target is not None else None
        else:
            moved = self.compiled.resolve_field(field)
        result = getattr(self.person, action)(field, instance_id=instance_id)
        self._host(action, result, field=field)
        if result.unknown or moved is None:
            envelope = {"status": "success", "data": result.to_dict()}
            line = render.activity_line("form_revise", envelope, self.labels())
        else:
            row = self.person.inspect("field", moved, instance_id=instance_id).fields[0]
            becomes = render.value_text(row.value) if row.has_value else "empty"
            line = f"{'undid' if action == 'undo' else 'redid'} {row.label} → {becomes}"
        out.print(line, style="dim", markup=False, highlight=False)

    def _cmd_resolve(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        fail = None
        if rest:
            words = shlex.split(rest)
            if words[0] != "--fail" or len(words) < 2:
                raise InvalidArgumentError("Use /resolve, or /resolve --fail REASON.")
            fail = " ".join(words[1:])
        result = self.person.resolve_checkpoint(instance_id, fail=fail)
        self._host("resolve", result, fail=fail)
        what = f"rejected: {fail}" if fail else "approved"
        out.print(f"checkpoint {what} · {self.status_lines(self.person)[0]}", style="dim", markup=False,
                  highlight=False)

    def _cmd_abandon(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if not rest:
            raise InvalidArgumentError("Say why: /abandon REASON.")
        instance = self.person.abandon(rest, instance_id=instance_id)
        self._host("abandon", instance, reason=rest)
        out.print(f"abandoned {instance.id}: {rest} (answers are kept)", style="dim", markup=False, highlight=False)

    def _host(self, action: str, result: Any, **args: Any) -> None:
        if self.recorder is not None:
            self.recorder.host(action, result=result, **args)


# --------------------------------------------------------------------------- the two faces


class _Face:
    """What both faces share: the conversation's flow, and how loop events become output.

    A face says how to print (``_text`` for streamed model text, ``_line`` for whole
    lines), where the person's lines come from (``_lines``), how a turn runs (``_turn``)
    and what to refresh after one (``_refresh``).
    """

    MARK = "· "

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self.out = render.console()
        self._open_text = False
        session.on_event = self._event

    # -- output --------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        raise NotImplementedError

    def _line(self, text: str, style: str | None = None, *, mark: bool = True) -> None:
        raise NotImplementedError

    def _event(self, ev: Any) -> None:
        if ev.kind == "text_delta":
            self._text(ev.text)
            self._open_text = not ev.text.endswith("\n")
        elif ev.kind == "model_turn":
            self._end_text()
        elif ev.kind == "tool_result":
            line = self.session.activity(ev)
            if line:
                self._end_text()
                self._line(line, "dim")
        elif ev.kind == "loop_error":
            self._end_text()
            self._line(ev.message, "yellow")

    def _end_text(self) -> None:
        if self._open_text:
            self._text("\n")
            self._open_text = False

    # -- the flow ------------------------------------------------------------------------

    def _lines(self) -> Iterator[str]:
        raise NotImplementedError

    def _turn(self, text: str) -> None:
        raise NotImplementedError

    def _refresh(self) -> None:
        """After a turn or a command."""

    def converse(self) -> None:
        """Header and notes; the opening turn (or what was last asked); then each line the person
        gives, as a message or a ``/command``, until the input ends or ``/quit``."""
        s = self.session
        self._line(s.model_line(), "dim", mark=False)
        for note in s.notes:
            self._line(note, "dim")
        s.notes.clear()
        opening = s.opening()
        if opening:
            self._turn(opening)
        elif s.resumed:
            self._text(_last_said(s.loop.messages))
            self._refresh()
        try:
            for line in self._lines():
                if not line.startswith("/"):
                    self._turn(line)
                elif s.command(line, self.out):
                    self._refresh()
                else:
                    break
        except KeyboardInterrupt:
            # Ctrl-C ends a plain chat (exit 130), but every committed answer is kept: say how
            # to carry on, as leaving any other way does.
            self._end_text()
            self._text("\n")
            self._line(s.goodbye(), mark=False)
            raise
        self._line(s.goodbye(), mark=False)


def _last_said(messages: list[dict[str, Any]]) -> str:
    """The model's last words of a saved conversation, so a resumed chat shows what was asked."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        if text.strip():
            return text.rstrip("\n") + "\n"
    return ""


class PlainChat(_Face):
    """Reads one message per stdin line and prints plain text: the model's words, ``· `` activity
    lines, and the status line whenever the step changes."""

    def __init__(self, session: ChatSession) -> None:
        super().__init__(session)
        self._last_status: str | None = None

    def _text(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def _line(self, text: str, style: str | None = None, *, mark: bool = True) -> None:
        self._text(f"{self.MARK if mark else ''}{text}\n")

    def _lines(self) -> Iterator[str]:
        for raw in sys.stdin:
            # Python reads a pipe with surrogateescape: bytes that are not UTF-8 arrive as lone
            # surrogates, which nothing can write back out (the conversation's JSON, the
            # transcript), so the chat died a turn later. They become U+FFFD here instead.
            line = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace").strip()
            if line:
                yield line

    def _turn(self, text: str) -> None:
        self.session.send(text)
        self._end_text()
        self._refresh()

    def _refresh(self) -> None:
        # The status line is printed when the step (or the state) changes, not on every
        # answer: the pending list shrinks with each one and would repeat the activity line.
        line = self.session.status_lines()[0]
        head = line.split(" · pending: ")[0]
        if head != self._last_status:
            self._last_status = head
            self._line(line)


class TerminalChat(_Face):
    """The interactive chat: prompt-toolkit for input and the status bar, rich for output.

    The status bar is a bottom toolbar rendered from a cached list of lines. A poller
    thread reads the instance about once a second through its own adapter; when the
    stored version moves it re-renders tier 0 and repaints the toolbar, and if the change
    came from outside this chat (another terminal's ``formctl resolve``), it also prints
    one dim line above the prompt, so the change is seen without a keystroke.
    """

    MARK = "  "

    def __init__(self, session: ChatSession) -> None:
        super().__init__(session)
        self._status: list[str] = []
        self._stamp: Any = None
        self._busy = threading.Event()
        self._stop = threading.Event()
        self._prompt: Any = None

    # -- output ------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        # Streamed as it arrives: no markup (the model's brackets are text), no re-wrapping.
        self.out.print(text, end="", markup=False, highlight=False, soft_wrap=True)
        self.out.file.flush()

    def _line(self, text: str, style: str | None = None, *, mark: bool = True) -> None:
        self.out.print(f"{self.MARK if mark else ''}{text}", style=style, markup=False, highlight=False)

    def _event(self, ev: Any) -> None:
        super()._event(ev)
        if ev.kind == "tier0_changed":
            self._status = self.session.status_lines()

    # -- the status bar ----------------------------------------------------------------

    def _toolbar(self) -> Any:
        from prompt_toolkit.application import get_app_or_none

        lines = self._status or ["[form] …"]
        app = get_app_or_none()
        size = app.output.get_size() if app is not None else None
        rows, columns = (size.rows, size.columns) if size is not None else (24, 80)
        # The step line always; the rest (later:, failures) only when the terminal has room.
        shown = lines if rows >= 12 else lines[:1]
        return "\n".join(_fit(f" {line}", columns) for line in shown)

    def _refresh(self) -> None:
        """After our own turn or command: re-read, and remember the version as ours."""
        try:
            self._status = self.session.status_lines()
            self._stamp = self.session.stamp()
        except FormError:
            pass

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                polled = self.session.poll()
            except Exception:
                continue  # a torn read or a locked file: try again next second
            if polled is None:
                continue
            stamp, lines = polled
            if stamp == self._stamp:
                continue
            self._stamp = stamp
            self._status = lines
            app = self._prompt.app if self._prompt is not None else None
            if app is None or not app.is_running:
                continue  # a turn or a command is running: it refreshes when it ends
            if not self._busy.is_set():
                app.loop.call_soon_threadsafe(self._notice, f"  updated elsewhere · {lines[0]}")
            app.invalidate()

    def _notice(self, text: str) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(lambda: self.out.print(text, style="cyan", markup=False, highlight=False))

    # -- the flow ----------------------------------------------------------------------

    def _lines(self) -> Iterator[str]:
        while True:
            try:
                line = self._prompt.prompt("you › ").strip()
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line, like a shell
            except EOFError:
                return
            if line:
                yield line
                self._history.flush()  # the turn has run: its values are known, and masked

    def _turn(self, text: str) -> None:
        """One model turn in a worker thread, so Ctrl-C here can cancel it at a safe point."""
        self._busy.set()
        error: list[BaseException] = []

        def work() -> None:
            try:
                self.session.send(text)
            except BaseException as exc:  # shown below, on the main thread
                error.append(exc)

        worker = threading.Thread(target=work, name="formctl-turn", daemon=True)
        worker.start()
        stopping = False
        while worker.is_alive():
            try:
                worker.join(0.1)
            except KeyboardInterrupt:
                if not stopping:  # said first; the loop then reports the cancel in its own words
                    self._end_text()
                    self._line("stopping…", "yellow")
                stopping = True
                self.session.loop.cancel()
        self._end_text()
        self._busy.clear()
        self._refresh()
        if error:
            if not isinstance(error[0], FormError):
                raise error[0]
            self._line(f"error: {error[0].message}", "red", mark=False)

    def run(self) -> None:
        from prompt_toolkit import PromptSession

        self._history = _masked_history(_history_file(self.session.store_dir), self.session.mask_text)
        self._prompt = PromptSession(
            history=self._history,
            bottom_toolbar=self._toolbar,  # prompt-toolkit's reverse video: readable with or without NO_COLOR
        )
        self._refresh()
        poller = threading.Thread(target=self._poll, name="formctl-status", daemon=True)
        poller.start()
        try:
            self.converse()
        finally:
            self._stop.set()
            poller.join(timeout=2 * POLL_SECONDS)  # before the session closes the poller's adapter
            self._history.flush()


def _fit(line: str, columns: int) -> str:
    """One toolbar line cut to the terminal's width, less the last column (the toolbar does
    not wrap, and a character in the last column pushes the cursor onto the next line)."""
    return line if len(line) < columns else line[: max(columns - 2, 1)] + "…"


def _masked_history(path: Path, mask: Callable[[str], str]) -> Any:
    """prompt-toolkit's file history, but a line reaches the file only after its turn has run,
    masked: a value given to a ``sensitive=True`` field never lands in the history file.

    (The line is held back because when it is typed, nobody yet knows it holds a value for a
    sensitive field; after the turn the value is in the store, and the masks know it. The
    up-arrow still recalls the line as typed, from memory, for the rest of this run.)
    """
    from prompt_toolkit.history import FileHistory

    class MaskedFileHistory(FileHistory):
        def __init__(self, filename: str) -> None:
            super().__init__(filename)
            self._pending: list[str] = []

        def store_string(self, string: str) -> None:
            self._pending.append(string)

        def flush(self) -> None:
            pending, self._pending = self._pending, []
            for line in pending:
                super().store_string(mask(line))

    return MaskedFileHistory(str(path))


def _history_file(store_dir: Path) -> Path:
    store_dir.mkdir(parents=True, exist_ok=True)
    path = store_dir / "input_history"
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    return path
