"""The terminal front end: a prompt-toolkit prompt with tier 0 in a bottom toolbar.

The model's text streams in, tool activity shows as short dim lines, input history is kept
across runs (masked, in the store folder), Ctrl-C stops a turn and Ctrl-D (or ``/quit``)
leaves. prompt-toolkit is imported only when the terminal chat runs.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from formctl.cli.chat.plain import ELSEWHERE, UNREADABLE, Face, _last_said, readable
from formctl.cli.chat.session import ChatSession
from formctl.errors import FormError

if TYPE_CHECKING:  # pragma: no cover
    from prompt_toolkit import PromptSession
    from prompt_toolkit.application import Application
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.key_processor import KeyPressEvent
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner

    from formctl.agent.events import Event
    from formctl.cli.chat.history import MaskedFileHistory
    from formctl.forms.reading import Stamp

# The longest line the prompt takes (characters). A paste without bracketed-paste mode arrives
# one key press at a time; past this the characters are counted, not kept, and the line is
# refused when Enter comes, so a paste of any size costs bounded memory and time.
LINE_LIMIT = 10_000
# Past this many characters a key press no longer saves an undo state (each one is a copy of
# the whole line: a long paste typed key by key would otherwise keep thousands of copies).
_UNDO_LIMIT = 1_000
STOPPED = "Saved before you stopped it"  # the notice after a stopped turn that had written answers


class TerminalChat(Face):
    """The interactive chat: prompt-toolkit for input and the status bar, rich for output.

    The status bar is a bottom toolbar rendered from a cached list of lines. A poller
    thread reads the instance every ``options.poll_seconds`` (a second unless the host or
    ``FORMCTL_POLL_SECONDS`` says otherwise) through its own adapter; when the
    stored version moves it re-renders tier 0 and repaints the toolbar, and if the change
    came from outside this chat (another terminal's ``formctl resolve``), it leaves the prompt
    (keeping what was typed) so the model says what changed and asks again without a keystroke.
    """

    MARK = "  "

    def __init__(self, session: ChatSession) -> None:
        super().__init__(session)
        self._status: list[str] = []
        self._stamp: Stamp | None = None
        self._left_for: Stamp | None = None  # the stamp the prompt was last left for (see _poll)
        self._busy = threading.Event()
        self._stop = threading.Event()
        self._prompt: PromptSession[str] | None = None
        self._changed = False  # the prompt was left because the form changed elsewhere (see _poll)
        self._held = ""  # the text to put back at the prompt (typed before a change elsewhere)
        self._dropped = 0  # characters of the line being typed beyond LINE_LIMIT (not kept)
        self._spinner = _Spinner(self.out)
        session.asker = self._ask
        # Said by the main thread, which draws the spinner, at its next tick (see _run_turn).
        self._waiting: list[str] = []
        session.on_store_wait = self._waiting.append

    def _ask(self, question: str) -> str | None:
        """formctl's own question, asked from the turn's worker thread: a plain line read (the
        prompt belongs to the main thread, which is waiting for the turn)."""
        self._end_text()
        self.out.print(question, style="bold", markup=False, highlight=False)
        while True:
            try:
                answer = input("you › ").strip()
            except EOFError:
                return None
            if readable(answer):  # the same door as the prompt's lines: bytes that are not text are refused
                return answer
            self._line(UNREADABLE, "yellow")

    # -- output ------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        # Streamed as it arrives, already broken at words (Face's WordWrap): no markup (the
        # model's brackets are text), and no re-wrapping by rich, which would break it again.
        self.out.print(text, end="", markup=False, highlight=False, soft_wrap=True)
        self.out.file.flush()

    def _line(self, text: str, style: str | None = None, *, mark: bool = True) -> None:
        self.out.print(f"{self.MARK if mark else ''}{text}", style=style, markup=False, highlight=False)

    def _event(self, ev: Event) -> None:
        if ev.kind == "model_call":
            self._spinner.call_started()
        elif ev.kind in ("text_delta", "model_turn", "turn_end", "loop_error"):
            self._spinner.call_ended()  # before anything is printed: the spinner's line goes first
        super()._event(ev)
        if ev.kind == "tier0_changed":
            self._status = self.session.status_lines()

    # -- the status bar ----------------------------------------------------------------

    def _toolbar(self) -> str:
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
        interval = self.session.options.poll_seconds
        unsaid = False  # a change the person has not been shown, seen while the prompt was away
        while not self._stop.is_set():
            try:
                if unsaid:  # look again each interval until the prompt is back (no announcement is coming)
                    self._stop.wait(interval)
                elif not self.session.wait_for_change(interval, self._stop):
                    continue
                if self._stop.is_set():
                    continue
                polled = self.session.poll()
            except Exception:
                self._stop.wait(interval)
                continue  # a torn read, a locked file, a server away: try again next interval
            if polled is None:
                continue
            stamp, lines = polled
            fresh = stamp != self._stamp
            if fresh:
                self._stamp = stamp
                self._status = lines
            app = self._prompt.app if self._prompt is not None else None
            if app is None or not app.is_running:
                unsaid = self._behind(stamp)
                continue  # a turn or a command is running: it refreshes when it ends
            unsaid = False
            loop = app.loop  # set while the application runs
            if loop is not None and not self._busy.is_set() and self._behind(stamp) and stamp != self._left_for:
                # Changed elsewhere while the person is at the prompt: leave the prompt (what they
                # typed so far is kept) so the chat says what changed and asks again, unprompted.
                # Asked of what the person was shown, not of the stamp last drawn: a commit made
                # elsewhere just before this chat's own refresh is in that stamp, and unsaid.
                self._left_for = stamp  # once per stamp: a notice that cannot be built is not retried each second
                loop.call_soon_threadsafe(self._leave_prompt, app)
            if fresh:
                app.invalidate()

    def _behind(self, stamp: Stamp) -> bool:
        """Whether the stored instance (``stamp``) holds a change the person has not been shown."""
        seen = self.session.seen_version()
        return seen is not None and seen[0] == stamp[0] and seen[1] != stamp[1]

    def _leave_prompt(self, app: Application[str]) -> None:
        if app.is_running and not app.is_done:
            self._held = app.current_buffer.text
            self._changed = True
            app.exit(result="")

    # -- the flow ----------------------------------------------------------------------

    def _lines(self) -> Iterator[str]:
        while True:
            held, self._held = self._held, ""
            assert self._prompt is not None  # made by run()
            self._changed = False  # set by _leave_prompt, for this prompt only
            try:
                line = self._prompt.prompt("you › ", default=held)
            except KeyboardInterrupt:
                self._dropped = 0
                continue  # Ctrl-C at the prompt clears the line, like a shell
            except EOFError:
                return
            if self._changed:
                self._changed = False
                self._catch_up(ELSEWHERE)
                if self.session.stopped:
                    return
                continue
            dropped, self._dropped = self._dropped, 0
            if dropped:
                self._history.discard()
                self._line(
                    f"That line is too long ({dropped + len(line):,} characters; at most {LINE_LIMIT:,}): "
                    "nothing was sent. Please type a shorter one.",
                    "yellow",
                )
                continue
            line = line.strip()
            if line and not readable(line):
                # prompt-toolkit hands a byte it could not decode over as a lone surrogate
                self._history.discard()
                self._line(UNREADABLE, "yellow")
            elif line:
                yield line
                self._history.flush()  # the turn has run: its values are known, and masked

    def _turn(self, text: str) -> None:
        """One model turn in a worker thread, so Ctrl-C here can cancel it at a safe point.

        A turn stopped after it had written answers (Ctrl-C while an executor runs, or while
        the model reads the results) never told the person what it saved, nor asked what comes
        next: the chat says it and asks now (docs/chat.md, "Ctrl-C")."""
        self._run_turn(text)
        if self.session.interrupted and not self.session.stopped:
            self.session.interrupted = False  # said once: a catch-up that is stopped too is not caught up
            if not self._catch_up(STOPPED):  # nothing the person would see changed: ask again
                self._text(self._wrap.feed(_last_said(self.session.loop.messages)) + self._wrap.flush())
            self.session.interrupted = False
            if self.session.cancelled:  # the catch-up was stopped too: nothing more is tried, the poller's
                self._left_for = self._stamp  # leaving the prompt for it included (docs/chat.md, "Ctrl-C")

    def _run_turn(self, text: str) -> None:
        self._busy.set()
        worker = _TurnWorker(self.session.send, text)
        stopping = False
        # Python runs the Ctrl-C handler at its next safe point in this thread: on a busy machine
        # the worker can be well into the turn before this thread gets back from start(), so the
        # start and every check of the worker are inside the try, not only the wait. The wait is
        # on an Event, not Thread.join: a Ctrl-C that interrupts join() on Python 3.11 marks the
        # thread stopped while it still runs (threading._wait_for_tstate_lock), and the prompt
        # came back in the middle of the turn.
        while True:
            try:
                if worker.thread.ident is None and not stopping:
                    worker.thread.start()
                while not worker.done.wait(0.1):
                    if self._waiting:
                        self._spinner.call_ended()
                        self._end_text()
                        self._line(self._waiting.pop(), "yellow")
                    self._spinner.tick()
                break
            except KeyboardInterrupt:
                self._spinner.call_ended()
                if stopping:  # a second Ctrl-C: the person will not wait for the turn to stop
                    self._busy.clear()
                    raise
                self._end_text()  # said first; the loop then reports the cancel in its own words
                self._line("stopping…", "yellow")
                stopping = True
                self.session.cancel()
        self._spinner.call_ended()
        self._end_text()
        self._busy.clear()
        self._refresh()
        if worker.error is not None:
            if not isinstance(worker.error, FormError):
                raise worker.error
            self._line(f"error: {worker.error.message}", "red", mark=False)

    def run(self) -> None:
        from prompt_toolkit import PromptSession

        self._history = _masked_history(_history_file(self.session.store_dir), self.session.mask_text)
        self._prompt = PromptSession(
            history=self._history,
            bottom_toolbar=self._toolbar,  # prompt-toolkit's reverse video: readable with or without NO_COLOR
            key_bindings=self._bounded_typing(),
        )
        self._refresh()
        poller = threading.Thread(target=self._poll, name="formctl-status", daemon=True)
        poller.start()
        try:
            self.converse()
        finally:
            self._stop.set()
            poller.join(timeout=2 * self.session.options.poll_seconds)  # before the session closes the poller's adapter
            self._history.flush()

    def _bounded_typing(self) -> KeyBindings:
        """Typing and pasting key by key with the line held to :data:`LINE_LIMIT` characters.

        The key press that would take the line past the limit empties it (its undo states too),
        and every character after it is counted, not kept, until Enter, which refuses the line
        and says how long it was: a paste of any size costs bounded memory and a bounded redraw."""
        from prompt_toolkit.filters import Condition, emacs_insert_mode, vi_insert_mode
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.keys import Keys

        bindings = KeyBindings()

        @Condition
        def overflowing() -> bool:
            return self._dropped > 0

        def worth_an_undo_state(event: KeyPressEvent) -> bool:
            return len(event.current_buffer.text) < _UNDO_LIMIT and not event.is_repeat

        def take(event: KeyPressEvent, data: str) -> None:
            buffer = event.current_buffer
            if self._dropped or len(buffer.text) + len(data) > LINE_LIMIT:
                self._dropped += len(buffer.text) + len(data) if not self._dropped else len(data)
                if buffer.text:
                    buffer.reset()  # the line and its undo states: it will be refused whole
                return
            buffer.insert_text(data)

        @bindings.add(Keys.Any, filter=overflowing)
        def _count(event: KeyPressEvent) -> None:
            self._dropped += len(event.data) * event.arg

        @bindings.add(
            Keys.Any, filter=~overflowing & (emacs_insert_mode | vi_insert_mode), save_before=worth_an_undo_state
        )
        def _insert(event: KeyPressEvent) -> None:
            take(event, event.data * event.arg)

        @bindings.add(Keys.BracketedPaste)
        def _paste(event: KeyPressEvent) -> None:
            take(event, event.data.replace("\r\n", "\n").replace("\r", "\n"))

        return bindings


class _TurnWorker:
    """One turn, run in a thread of its own: what it raised (shown on the main thread), and when
    it is done."""

    def __init__(self, send: Callable[[str], object], text: str) -> None:
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._work, args=(send, text), name="formctl-turn", daemon=True)

    def _work(self, send: Callable[[str], object], text: str) -> None:
        try:
            send(text)
        except BaseException as exc:  # shown by the main thread
            self.error = exc
        finally:
            self.done.set()


class _Spinner:
    """While a model call is in flight: a spinner with the seconds elapsed and how to stop.

    Shown only once a call has taken :attr:`DELAY` seconds (the guided model answers at once,
    and a flash of spinner on every turn would be noise), and taken down before anything the
    model says is printed. Rich draws it on its own line below the conversation (transient:
    nothing is left behind). ``call_started``/``call_ended`` come from the turn's thread,
    ``tick`` from the main thread, which waits for the turn.
    """

    DELAY = 0.3

    def __init__(self, console: Console) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._since: float | None = None
        self._live: Live | None = None

    def call_started(self) -> None:
        with self._lock:
            self._since = time.monotonic()

    def call_ended(self) -> None:
        with self._lock:
            self._since = None
            live, self._live = self._live, None
        if live is not None:
            live.stop()

    def tick(self) -> None:
        with self._lock:
            if self._since is None or self._live is not None or time.monotonic() - self._since < self.DELAY:
                return
            from rich.live import Live

            self._live = Live(_Thinking(self._since), console=self.console, refresh_per_second=4, transient=True)
            self._live.start()


class _Thinking:
    """The spinner's line, re-rendered on every refresh so the seconds count up."""

    def __init__(self, since: float) -> None:
        from rich.spinner import Spinner

        self.since = since
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> Spinner:
        from rich.text import Text

        seconds = int(time.monotonic() - self.since)
        self.spinner.update(text=Text(f" thinking… {seconds}s · Ctrl-C to stop", style="dim"))
        return self.spinner


def _fit(line: str, columns: int) -> str:
    """One toolbar line cut to the terminal's width, less the last column (the toolbar does
    not wrap, and a character in the last column pushes the cursor onto the next line)."""
    return line if len(line) < columns else line[: max(columns - 2, 1)] + "…"


def _masked_history(path: Path, mask: Callable[[str], str]) -> MaskedFileHistory:
    """The chat's input history in ``path``, each line masked before it is written (history.py)."""
    from formctl.cli.chat.history import MaskedFileHistory

    return MaskedFileHistory(str(path), mask)


def _history_file(store_dir: Path) -> Path:
    store_dir.mkdir(parents=True, exist_ok=True)
    path = store_dir / "input_history"
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    return path
