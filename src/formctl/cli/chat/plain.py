"""What both front ends share (:class:`Face`), and the plain one: one message per stdin line.

:class:`PlainChat` runs when stdin or stdout is not a terminal, so scripts and CI drive the
chat (``printf 'Dana Reeve\\n...' | formctl run travel-claim``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Iterator

from formctl.agent.events import Event, LoopError, ModelTurn, TextDelta, ToolResult
from formctl.agent.models.base import content_blocks
from formctl.cli import collector, render
from formctl.cli.chat.session import ChatSession
from formctl.errors import FormError
from formctl.json_types import JsonObject

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

# Said when a line is not text (bytes that are not UTF-8); the line is not sent, the chat goes on.
UNREADABLE = "That line has characters that could not be read; please type it again."


def readable(line: str) -> bool:
    """Whether ``line`` is text: no lone surrogates, which is how Python and prompt-toolkit hand
    over bytes they could not decode, and which neither the store nor the model could take."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


ERROR_STYLES = ("red", "yellow")
SINCE = "Since we last spoke"
ELSEWHERE = "Changed elsewhere"
# How long a message the store could not take waits for a database that is away before it is
# given up (docs/chat.md, "The database goes away"); FORMCTL_STORE_PATIENCE changes it.
STORE_PATIENCE = 120.0


def _store_patience() -> float:
    try:
        seconds = float(os.environ.get("FORMCTL_STORE_PATIENCE", STORE_PATIENCE))
    except ValueError:
        return STORE_PATIENCE
    return seconds if seconds >= 0 else STORE_PATIENCE


# Notices in a row at most, while changes keep landing elsewhere: a colleague writing on and on
# would otherwise keep this chat talking; what is left is said before the next line is taken.
CATCH_UPS = 3


class WordWrap:
    """Streamed text broken into lines at word boundaries, for a terminal ``width`` columns wide.

    A terminal wraps a long line wherever the column runs out, mid-word ("It should h" /
    "ave a period."). Text reaches the screen here in pieces as the model streams it, so this
    keeps the column it is at, holds back a word until it is whole (a piece may end inside
    one), and starts a new line before a word that would not fit. A word longer than the
    line is written as it is. ``width=None`` (not a terminal) leaves the text alone.
    """

    def __init__(self, width: int | None) -> None:
        self.width = width
        self.column = 0
        self._word = ""
        self._spaces = ""

    def feed(self, text: str) -> str:
        if not self.width:
            return text
        out: list[str] = []
        for char in text:
            if char == "\n":
                out.append(self._place())
                self._spaces = ""
                out.append("\n")
                self.column = 0
            elif char in " \t":
                out.append(self._place())
                self._spaces += char
            else:
                self._word += char
        return "".join(out)

    def flush(self) -> str:
        """What is held back (the last word), at the end of a piece of output."""
        return self._place() if self.width else ""

    def _place(self) -> str:
        if not self._word:
            return ""
        from rich.cells import cell_len

        word, spaces = self._word, self._spaces
        self._word, self._spaces = "", ""
        size = cell_len(word)
        if self.column and self.column + cell_len(spaces) + size > (self.width or 0):
            self.column = size
            return "\n" + word
        self.column += cell_len(spaces) + size
        return spaces + word


class Face:
    """What both faces share: the conversation's flow, and how loop events become output.

    A face says how to print (``_text`` for streamed model text, ``_line`` for whole
    lines), where the person's lines come from (``_lines``), how a turn runs (``_turn``)
    and what to refresh after one (``_refresh``).
    """

    MARK = "· "

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self.out = render.console()
        self.err: Console | None = None  # where a /command's errors go (None: with the rest, on ``out``)
        self._open_text = False
        self._wrap = WordWrap(self._width())
        session.on_event = self._event

    # -- output --------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        raise NotImplementedError

    def _line(self, text: str, style: str | None = None, *, mark: bool = True) -> None:
        raise NotImplementedError

    def _width(self) -> int | None:
        """The columns to wrap the model's words at: the terminal's, or None when output is not one."""
        return self.out.width if self.out.is_terminal else None

    def _event(self, ev: Event) -> None:
        if isinstance(ev, TextDelta):
            self._text(self._wrap.feed(ev.text))
            self._open_text = not ev.text.endswith("\n")
        elif isinstance(ev, ModelTurn):
            self._end_text()
        elif isinstance(ev, ToolResult):
            line = self.session.activity(ev)
            if line:
                self._end_text()
                self._line(line, "dim")
        elif isinstance(ev, LoopError) and ev.code != "key_rejected":  # that one ends the chat: run_chat says it
            self._end_text()
            self._line(ev.message, "yellow")

    def _end_text(self) -> None:
        held = self._wrap.flush()
        if held:
            self._text(held)
        if self._open_text:
            self._text("\n")
            self._open_text = False
        self._wrap.column = 0

    # -- the flow ------------------------------------------------------------------------

    def _lines(self) -> Iterator[str]:
        raise NotImplementedError

    def _turn(self, text: str) -> None:
        raise NotImplementedError

    def _refresh(self) -> None:
        """After a turn or a command."""

    def _catch_up(self, by: str) -> bool:
        """If the form changed since the person was last shown it (``by`` says how), have the model
        say what changed and ask the question open now, before any bare answer is taken; and
        again for what was written elsewhere while it did (at most :data:`CATCH_UPS` in all)."""
        said = False
        for _ in range(CATCH_UPS):
            notice = self.session.changes(by)
            if notice is None:
                break
            self._turn(notice)
            said, by = True, ELSEWHERE
            if self.session.cancelled or self.session.stopped:
                break
        return said

    def _exchange(self, text: str) -> None:
        """One turn, then what was written elsewhere while it ran, said at once: two chats on one
        instance sending at the same moment each commit during the other's turn, and the chat's
        last words must not contradict the status bar (docs/chat.md, "Two chats on one instance"). Unless the person's next
        line is already waiting: they typed it before any notice, so it goes with the notice
        (see :meth:`_talk`), to be taken only for the question it answered."""
        self._turn(text)
        if self.session.store_failed and not (self.session.cancelled or self.session.stopped):
            self._send_again(text)
        if not (self.session.cancelled or self.session.stopped or self._line_waiting()):
            self._catch_up(ELSEWHERE)

    def _send_again(self, text: str) -> None:
        """The store failed during the person's message and does not answer now: it is away (a
        server down, or frozen). Their message is kept and sent again once the store answers,
        before any other line is read, so a line typed meanwhile is never taken for the answer
        to the question this message answered (docs/chat.md, "The database goes away"). Waits
        up to :data:`STORE_PATIENCE` seconds (``FORMCTL_STORE_PATIENCE``); Ctrl-C stops the wait."""
        if self.session.store_answers():
            return  # a damaged record, not a server away: said as it was
        self._line(
            "waiting for the database… your message is kept and sent again once it answers (Ctrl-C stops waiting)",
            "yellow",
        )
        import time

        ends = time.monotonic() + _store_patience()
        try:
            while not self.session.store_answers():
                if time.monotonic() >= ends:
                    self._line("The database is still not answering: your message was not sent.", "yellow")
                    return
                time.sleep(1.0)
        except KeyboardInterrupt:
            self._end_text()
            self._line("Stopped waiting for the database: your message was not sent.", "yellow")
            return
        self.session.unwritten = None
        self._line("the database answers again: sending your message again", "dim")
        self._turn(text)

    def _line_waiting(self) -> bool:
        """Whether the person's next line has already arrived (typed during the turn)."""
        return False

    def converse(self) -> None:
        """Header and notes; the opening turn (or what was last asked); then each line the person
        gives, as a message or a ``/command``, until the input ends or ``/quit``; then goodbye.

        Ctrl-C during a turn stops that turn (the loop takes it, docs/chat.md, "Ctrl-C"); one
        anywhere else ends a plain chat (exit 130), but every committed answer is kept, so the goodbye
        says how to carry on, as leaving any other way does. Python runs its Ctrl-C handler at
        the next safe point, not when the key is pressed: a Ctrl-C that comes as stdin closes
        is seen only after the read has returned the end of input, so it may land after the
        talk or inside the goodbye. Wherever it lands, the goodbye is said, once.
        """
        interrupted = talked = said = False
        while not said:
            try:
                if not talked:
                    talked = True
                    self._talk()
                if interrupted:
                    self._end_text()
                    self._text("\n")
                self._goodbye()
                said = True
            except KeyboardInterrupt:
                interrupted = True
        if interrupted:
            raise KeyboardInterrupt

    def _talk(self) -> None:
        s = self.session
        self._line(s.model_line(), "dim", mark=False)
        for note in s.notes:
            self._line(note, "dim")
        s.notes.clear()
        opening = s.opening()
        if s.resumed and not self._catch_up(SINCE) and not opening:
            self._text(self._wrap.feed(_last_said(s.loop.messages)) + self._wrap.flush())
            self._refresh()
        if opening:
            self._exchange(opening)
        collector.settled()  # the chat now waits on a person and may run for hours (cli/collector.py)
        for line in self._lines() if not s.stopped else ():
            if not line.startswith("/"):
                # Changed elsewhere since the last question: the line goes with the notice,
                # so it is taken only if the question it answered is still the open one.
                self._exchange(s.changes(ELSEWHERE, words=line) or line)
                if s.stopped:
                    break
                continue
            self._catch_up(ELSEWHERE)
            if not s.command(line, self.out, self.err):
                break
            self._refresh()
            self._catch_up(f"You used {line.split()[0]}")
            if s.stopped:
                break

    def _goodbye(self) -> None:
        lines = [self.session.goodbye(), self.session.usage_line()]
        self._text(
            "".join(f"{_wrapped(line, self._wrap.width)}\n" for line in lines if line)
        )  # one write: said whole or not at all


def _wrapped(text: str, width: int | None) -> str:
    wrap = WordWrap(width)
    return wrap.feed(text) + wrap.flush()


def _last_said(messages: list[JsonObject]) -> str:
    """The model's last words of a saved conversation, so a resumed chat shows what was asked."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        blocks = content_blocks(message.get("content"))
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if text.strip():
            return text.rstrip("\n") + "\n"
    return ""


class PlainChat(Face):
    """Reads one message per stdin line and prints plain text: the model's words, ``· `` activity
    lines, and the status line whenever the step changes."""

    def __init__(self, session: ChatSession) -> None:
        super().__init__(session)
        self._last_status: str | None = None
        self.err = render.console(stderr=True)
        self._read = self._stdin_lines()
        session.asker = self._ask
        session.on_store_wait = lambda line: self._line(line, "yellow")  # from the waiting thread: one write

    def _line_waiting(self) -> bool:
        """Bytes already in stdin's buffer or its pipe, looked at without reading them (a pipe's
        descriptor is made non-blocking for the look): stdin stays the one reader's, so a goal
        program's walk reads on where the form's chat stopped."""
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None or not hasattr(stream, "peek"):
            return False
        try:
            fd = stream.fileno()
        except (OSError, ValueError):  # not a file (a test's BytesIO): nothing can be waiting unseen
            return False
        import fcntl
        import os

        if os.isatty(fd):
            # A terminal's descriptor is shared with the shell: never made non-blocking. A line
            # typed there is read whole when Enter comes, so the kernel's queue says it all.
            import select

            return bool(select.select([fd], [], [], 0)[0])
        try:
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            return bool(stream.peek(1))
        except (BlockingIOError, OSError, ValueError):
            return False
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)

    def _ask(self, question: str) -> str | None:
        """formctl's own question mid-turn: printed, and answered by the next stdin line (None at its end)."""
        self._end_text()
        self._line(question)
        return next(self._read, None)

    def _text(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def _line(self, text: str, style: str | None = None, *, mark: bool = True) -> None:
        line = _wrapped(f"{self.MARK if mark else ''}{text}", self._wrap.width) + "\n"
        if style in ERROR_STYLES:  # in a pipe every error line goes to stderr, where scripts look
            sys.stdout.flush()
            sys.stderr.write(line)
            sys.stderr.flush()
        else:
            self._text(line)

    def _width(self) -> int | None:
        # Piped input with the output on a terminal (``printf … | formctl run``): the lines
        # still reach a person's screen, so they wrap at words as the terminal chat's do.
        if not sys.stdout.isatty():
            return None
        import shutil

        return shutil.get_terminal_size().columns

    def _lines(self) -> Iterator[str]:
        return self._read

    def _stdin_lines(self) -> Iterator[str]:
        # The one reader of stdin, for the chat's lines and for formctl's own questions alike
        # (a second reader would buffer ahead and swallow the lines after its answer). Bytes,
        # decoded strictly line by line: a line that is not UTF-8 is refused and said so
        # (replacement characters would be stored as if typed); the next line is read.
        stream = getattr(sys.stdin, "buffer", None) or sys.stdin
        for raw in stream:
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raw = None
            if raw is None or not readable(raw):
                self._line(UNREADABLE, "yellow")
                continue
            line = raw.strip()
            if line:
                yield line

    def _turn(self, text: str) -> None:
        self.session.send(text)
        self._end_text()
        self._refresh()

    def _refresh(self) -> None:
        # The status line is printed when the step (or the state) changes, not on every
        # answer: the pending list shrinks with each one and would repeat the activity line.
        try:
            line = self.session.status_lines()[0]
        except FormError:
            return  # the store is away (a server restarting): the turn has said so; next time

        head = line.split(" · pending: ")[0]
        if head != self._last_status:
            self._last_status = head
            self._line(line)
