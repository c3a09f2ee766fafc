"""A conversation as every chat that took part in it saved it: the model both stores share
(docs/chat.md, "Shared conversations").

A conversation only ever grows by **exchanges**: one message of the person and everything the
model and the tools did in answer to it. Each exchange is numbered (``pos``) when its chat
first needs the number, from a counter the store keeps per instance, so any number of chats
on one instance, in any processes, each write exchanges of their own and never one another's.
The same counter numbers the person's **turns**: every message the person types gets the next
number when they send it, and an answer's provenance names it (``turn``). An exchange records
its turns with their words (``words``), so a turn number names the same words for every
reader, whichever chat wrote them.

A conversation saved whole before exchanges (one document per instance, by an earlier formctl)
is its first part, with no recorded words (``words`` None): its turns are counted as that
formctl counted them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from formctl.errors import StoreError

FORMAT = 2
"""The conversation as ``formctl store copy`` hands it over (format 1: a document saved whole)."""

_NOT_RUN = "Not run: the chat that asked for it ended first."


@dataclass(slots=True)
class Part:
    """One exchange (``pos`` from 1) of one chat, or a conversation saved whole before exchanges
    (``pos`` 0, ``words`` None)."""

    pos: int
    chat: str
    messages: list[dict[str, Any]]
    words: list[tuple[int, str]] | None
    saved_at: str = ""


@dataclass(slots=True)
class Conversation:
    """Every part of one instance's conversation, in order, and what the person was last shown."""

    parts: list[Part] = field(default_factory=list)
    seen: dict[str, Any] | None = None
    exchanges: int = 0  # the highest exchange number given out
    turns: int = 0  # the highest turn number given out

    @property
    def messages(self) -> list[dict[str, Any]]:
        return joined([part.messages for part in self.parts])


def joined(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The parts' messages as one conversation a model accepts: a user message that follows a
    user message is joined to it (one exchange went unanswered: the chat's own rule), and a tool
    call an exchange left without its result (its chat ended mid-call) gets a "not run" one."""
    out: list[dict[str, Any]] = []
    for messages in parts:
        pending = _unanswered(out)  # the exchange before ended mid-call (its chat was stopped)
        if pending:
            out.append({"role": "user", "content": [_not_run(i) for i in pending]})
        for message in messages:
            if out and message.get("role") == "user" and out[-1].get("role") == "user":
                out[-1] = {
                    "role": "user",
                    "content": [*_blocks(out[-1].get("content")), *_blocks(message.get("content"))],
                }
            else:
                out.append(dict(message))
    return out


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}] if isinstance(content, str) and content else []


def _unanswered(out: list[dict[str, Any]]) -> list[str]:
    """The ids of the tool calls of the last message, when it is the model's and calls tools."""
    if not out or out[-1].get("role") != "assistant":
        return []
    return [
        b.get("id", "") for b in _blocks(out[-1].get("content")) if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def _not_run(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": _NOT_RUN, "is_error": True}


# --------------------------------------------------------------------------- parts as JSON


def check_messages(data: Any, where: str) -> list[dict[str, Any]]:
    """``data`` as a list of messages, or a :class:`StoreError` saying what is wrong with it."""
    if not isinstance(data, list):
        raise StoreError(f"The conversation in {where} is not a formctl conversation (no message list).")
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in data):
        raise StoreError(f"The conversation in {where} is corrupt (a message without a user/assistant role).")
    return data


def stored_part(pos: int, chat: str, messages: Any, words: Any, saved_at: str, where: str) -> Part:
    """A part as a store read it back, its ``messages`` (and, for an exchange, its ``words``)
    checked: a :class:`StoreError` naming ``where`` when they are not what a chat saves. A part at
    ``pos`` 0 is a conversation saved whole, which has no words."""
    checked = check_messages(messages, where)
    return Part(pos, chat, checked, None if pos == 0 else check_words(words, where), saved_at)


def check_words(data: Any, where: str) -> list[tuple[int, str]]:
    if not isinstance(data, list) or not all(
        isinstance(w, (list, tuple)) and len(w) == 2 and isinstance(w[0], int) and isinstance(w[1], str) for w in data
    ):
        raise StoreError(f"The conversation in {where} is corrupt (its turns are not [number, words] pairs).")
    return [(int(n), str(text)) for n, text in data]


def document(instance_id: str, conversation: Conversation, saved_at: str) -> dict[str, Any]:
    """The conversation whole, as ``formctl store copy`` hands it over (:data:`FORMAT`)."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "instance_id": instance_id,
        "saved_at": saved_at,
        "counts": [conversation.exchanges, conversation.turns],
        "exchanges": [
            {"pos": p.pos, "chat": p.chat, "saved_at": p.saved_at, "messages": p.messages, "words": p.words}
            for p in conversation.parts
            if p.pos
        ],
    }
    earlier = [p for p in conversation.parts if not p.pos]
    if earlier:
        out["earlier"] = {"saved_at": earlier[0].saved_at, "messages": earlier[0].messages}
    if conversation.seen is not None:
        out["seen"] = conversation.seen
    return out


def from_document(data: dict[str, Any], where: str) -> Conversation:
    """A conversation from :func:`document`'s form (or format 1's: one document saved whole)."""
    if not isinstance(data, dict) or data.get("format") not in (1, FORMAT):
        raise StoreError(f"The conversation in {where} is not a formctl conversation (format 1 or {FORMAT}).")
    seen = data.get("seen") if isinstance(data.get("seen"), dict) else None
    if data["format"] == 1:
        return Conversation([stored_part(0, "", data.get("messages"), None, "", where)], seen)
    parts = []
    earlier = data.get("earlier")
    if isinstance(earlier, dict):
        parts.append(stored_part(0, "", earlier.get("messages"), None, str(earlier.get("saved_at", "")), where))
    for item in data.get("exchanges") or []:
        if not isinstance(item, dict) or not isinstance(item.get("pos"), int) or item["pos"] < 1:
            raise StoreError(f"The conversation in {where} is corrupt (an exchange without its number).")
        chat, saved_at = str(item.get("chat", "")), str(item.get("saved_at", ""))
        parts.append(stored_part(item["pos"], chat, item.get("messages"), item.get("words"), saved_at, where))
    counts = data.get("counts")
    exchanges, turns = (int(counts[0] or 0), int(counts[1] or 0)) if isinstance(counts, list) else (0, 0)
    return settled(parts, seen, exchanges, turns)


def settled(parts: list[Part], seen: dict[str, Any] | None, exchanges: int = 0, turns: int = 0) -> Conversation:
    """The parts in order (the whole document first, then by exchange number), with the counters
    at least as far as the parts themselves go."""
    parts = sorted(parts, key=lambda p: p.pos)
    exchanges = max([exchanges, *(p.pos for p in parts)])
    turns = max([turns, *(n for p in parts for n, _ in (p.words or []))])
    return Conversation(parts, seen, exchanges, turns)


def outcome(held: Conversation | None, given: Conversation) -> tuple[str, str]:
    """What copying ``given`` over ``held`` does (``formctl store copy``): exchange by exchange,
    one side's a beginning of the other's (a chat saves its exchange again as it grows) or
    missing is the same history; different words in one exchange, or exchanges each side lacks,
    have diverged."""
    if held is None:
        return "copied", ""
    mine, theirs = _units(given), _units(held)
    ahead, behind, apart = False, False, None
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if a == b:
            continue
        if b is None or (a is not None and _grew(b, a)):
            ahead = True
        elif a is None or _grew(a, b):
            behind = True
        else:
            apart = apart if apart is not None else key
    if apart is None and not (ahead and behind):
        if ahead:
            return "updated", ""
        if behind:
            return "newer", ""
        return "same", ""
    where = "the conversation saved whole" if apart == 0 else f"exchange {apart}" if apart is not None else ""
    return "diverged", (
        f"the chat went on on both sides ({len(mine)} part(s) in the source, {len(theirs)} in the target"
        + (f", different in {where})" if where else ", each with parts the other lacks)")
    )


def _units(conversation: Conversation) -> dict[int, tuple[str, list[Any], list[Any]]]:
    return {p.pos: (p.chat, p.messages, list(p.words or [])) for p in conversation.parts}


def _grew(early: tuple[str, list[Any], list[Any]], late: tuple[str, list[Any], list[Any]]) -> bool:
    """``late`` is ``early`` saved again after its chat went on: the same chat, and both its
    messages and its words begin with ``early``'s."""
    return early[0] == late[0] and all(
        len(short) <= len(long) and long[: len(short)] == short for short, long in zip(early[1:], late[1:])
    )
