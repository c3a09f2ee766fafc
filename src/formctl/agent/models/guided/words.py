"""Reading the person's words: the newest person turn of a request, the tool calls and
results since, and the whole-message commands (undo, back, skip, status, what else, ...)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from formctl.agent.models.base import content_blocks
from formctl.json_types import JsonObject, JsonValue

TIER0_PREFIX = "[form: "
GOALS_PREFIX = "[goals: "  # a goal program's line, after tier 0 (docs/goals.md)

# Whole-message commands, after command_key() (lower case, no punctuation, single spaces).
COMMANDS: dict[str, str] = {
    "undo": "undo",
    "undo that": "undo",
    "undo last": "undo",
    "undo it": "undo",
    "back": "back",
    "go back": "back",
    "previous": "back",
    "back up": "back",
    "redo": "redo",
    "skip": "skip",
    "skip it": "skip",
    "skip this": "skip",
    "skip that": "skip",
    "pass": "skip",
    "next": "skip",
    "status": "status",
    "where are we": "status",
    "where am i": "status",
    "progress": "status",
    "what else": "what_else",
    "what else will you need": "what_else",
    "what else do you need": "what_else",
    "what else is there": "what_else",
    "whats left": "what_else",
    "what is left": "what_else",
    "whats next": "what_else",
    "what do you still need": "what_else",
    "what else do you need from me": "what_else",
    "withdraw": "withdraw",
    "withdraw the request": "withdraw",
    "withdraw my request": "withdraw",
    "take the request back": "withdraw",
    "cancel the request": "withdraw",
    "help": "help",
    "commands": "help",
    "quit": "quit",
    "stop": "quit",
    "exit": "quit",
    "bye": "quit",
    "pause": "quit",
    "ill finish later": "quit",
    "later": "quit",
}
LABELLED = re.compile(r"^\s*([^:=\n]{1,60}?)\s*[:=]\s*(.*?)\s*$", re.S)


def person_words(message: JsonObject) -> str | None:
    """The person's words in a user turn, or None for a turn of tool results.

    The loop appends tier 0 (``[form: ...``) as the last text block of the newest user
    turn, so that block is not the person's. Normally one block is left: the words. After
    a failed model call the loop joins the next message onto the unanswered turn, so the
    newest words are the last block left, and those are the ones answered.
    """
    blocks = content_blocks(message.get("content"))
    has_results = any(b.get("type") == "tool_result" for b in blocks)
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    while texts and texts[-1].startswith((TIER0_PREFIX, GOALS_PREFIX)):  # the goals line follows tier 0
        texts = texts[:-1]
    if has_results:
        # A turn of tool results is the person's only when words were joined onto it: a
        # turn cancelled (Ctrl-C) after its tools ran leaves their results unanswered, and
        # the person's next message lands in the same turn. Those words are answered.
        return texts[-1] if texts else None
    return texts[-1] if texts else ""


@dataclass(slots=True)
class Result:
    ok: bool
    data: JsonValue = None
    message: str = ""
    code: str | None = None


@dataclass(slots=True)
class Turn:
    """The newest person turn of a request and the tool calls and results since."""

    words: str | None
    calls: list[JsonObject]
    results: dict[str, Result]
    conversation_started: bool  # an assistant turn came before the person's words
    instance_id: str | None  # the newest instance id any tool result named


def parse_result(block: JsonObject) -> Result:
    content = block.get("content")
    if isinstance(content, list):  # Anthropic also allows a list of text blocks
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    try:
        envelope = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return Result(False, message=str(content))
    if not isinstance(envelope, dict):
        return Result(False, message=str(content))
    data = envelope.get("data")
    if envelope.get("status") == "success" and not block.get("is_error"):
        return Result(True, data=data)
    code = data.get("code") if isinstance(data, dict) else None
    return Result(False, data=data, message=str(envelope.get("message") or ""), code=code)


def read_turn(messages: list[JsonObject]) -> Turn:
    start = None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and person_words(messages[i]) is not None:
            start = i
            break
    words = person_words(messages[start]) if start is not None else None
    calls: list[JsonObject] = []
    results: dict[str, Result] = {}
    for message in messages[(start + 1) if start is not None else 0 :]:
        for block in content_blocks(message.get("content")):
            if message.get("role") == "assistant" and block.get("type") == "tool_use":
                calls.append(block)
            elif block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = parse_result(block)
    started = start is not None and any(m.get("role") == "assistant" for m in messages[:start])
    # The conversation's instance is the newest one a tool result named (form_history can
    # name other instances, so it doesn't count).
    names: dict[str, str] = {}
    instance_id = None
    for message in messages:
        for block in content_blocks(message.get("content")):
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            elif block.get("type") == "tool_result" and names.get(str(block.get("tool_use_id"))) != "form_history":
                data = parse_result(block).data
                if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
                    instance_id = data["instance_id"]
    return Turn(words, calls, results, started, instance_id)


def command_key(words: str) -> str:
    text = words.strip().lower().lstrip("/")
    text = text.replace("'", "").replace("\u2019", "")
    text = re.sub(r"[^a-z0-9 ]+", " ", text)
    return " ".join(text.split())


def generic_kind(calls: list[JsonObject]) -> str:
    names = {c.get("name") for c in calls}
    if "form_start" in names:
        return "start"
    if "form_list" in names:
        return "list"
    if "form_inspect" in names:
        return "what_else"
    if names == {"form_status"}:
        return "status"
    return "answers"


def segments(words: str) -> list[str]:
    return [s.strip() for s in re.split(r"[;\n]", words) if s.strip()]
