"""``formctl run`` and ``formctl resume``: the chat between a person and a model over one form.

One :class:`~formctl.cli.chat.session.ChatSession` (with its ``/commands``) behind two front
ends: :class:`~formctl.cli.chat.terminal.TerminalChat` when stdin and stdout are terminals,
:class:`~formctl.cli.chat.plain.PlainChat` otherwise. The decisions are in docs/chat.md.
"""

from __future__ import annotations

import dataclasses
import os
import sys

from formctl.cli.chat.plain import PlainChat
from formctl.cli.chat.session import ChatOptions, ChatSession
from formctl.cli.chat.terminal import TerminalChat, _masked_history

__all__ = ["ChatOptions", "ChatSession", "PlainChat", "TerminalChat", "_masked_history", "run_chat"]


def run_chat(options: ChatOptions) -> int:
    """Open the session, then the terminal or plain chat. Returns the exit status."""
    from formctl.cli.drift import ask_in_terminal, ask_line, offer_migration

    if options.ask is None and sys.stdin.isatty() and sys.stdout.isatty():
        options = dataclasses.replace(options, ask=ask_line)  # whose form it is can be asked
    session = ChatSession.open(options)
    try:
        terminal = sys.stdin.isatty() and sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
        # A stale instance can't be continued: moved (asked, or --migrate), or the chat does not open.
        asking = sys.stdin.isatty() and sys.stdout.isatty()  # piped, stdin holds answers: nothing to ask
        moved = offer_migration(session, migrate=options.migrate, ask=ask_in_terminal if asking else None)
        if not moved and session.stale_instance() is not None:
            # Not moved: the one message (offer_migration's, on stderr) says why and how; a chat
            # opened on it could only say the same again, in other words.
            return 1
        if terminal:
            TerminalChat(session).run()
        else:
            PlainChat(session).converse()
        if session.stale_instance() is not None:
            return 1  # neither moved nor closed: the conversation could not go on
    finally:
        session.close()
    if session.stopped:  # the API refused the key: one line, where scripts look, and a failure
        sys.stdout.flush()
        sys.stderr.write(f"error: {session.stopped}\n")
        return 1
    # Nothing started and a turn failed (the API unreachable, the key refused, the form not
    # starting), or the person's answers could not be written (a damaged instance, a full disk):
    # a script or CI job must not read that as success.
    if session.unwritten is not None:
        return 1
    return 1 if session.failed and session.instance_id is None else 0
