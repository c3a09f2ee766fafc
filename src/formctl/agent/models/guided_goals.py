"""The guided model's side of a goal program: it asks about the active goal's items that no
form answers, one at a time, and settles each with ``goal_update`` (docs/goals.md, "The
person's side").

    Verify the client: done, later, or not needed?

Once the program is complete it asks the same about the deferred work still owed, once each
("New documents (deferred: posting them): done, later, or not needed?"), and "The documents
came in" (received, arrived…) completes it.

"done" (yes, verified, ok…) completes the item, "later" (defer, tomorrow…) defers it, "not
needed" (no, skip, n/a…) declines it; anything else is asked again with the three words.
The reply the person gave is the update's reason, so the history says what was said. Like the
form-filling guided model it is offline and deterministic, and writes only through the tools,
so a transcript of it reads like one of a real model.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from formctl.agent.models.base import ModelReply, ModelRequest, TextSink, content_blocks
from formctl.goals.evaluate import is_asked
from formctl.goals.state import COMPLETED, DECLINED, DEFERRED, Disposition

if TYPE_CHECKING:
    from formctl.goals.runner import GoalRunner

__all__ = ["GuidedGoalModel", "answer_disposition", "question"]

_DONE = re.compile(r"^(done|yes|yep|y|ok|okay|verified|complete|completed|finished|got it|checked)\b", re.I)
_LATER = re.compile(r"^(later|defer|deferred|not yet|tomorrow|next time|soon|after)\b", re.I)
# Said anywhere in a reply with no negation: the thing came ("The documents came in").
_ARRIVED = re.compile(
    r"\b(came in|come in|arrived|received|got (it|them)|have (it|them) now|in hand|sent (it|them))\b", re.I
)
_NEGATION = re.compile(r"\b(not|no|never|yet)\b|n't\b", re.I)
_DECLINED = re.compile(r"^(not needed|no|n|skip|decline|declined|n/?a|none|not applicable|never mind)\b", re.I)


def answer_disposition(text: str) -> Disposition | None:
    """``completed``, ``deferred`` or ``declined`` for a person's reply, or None if it is none of them."""
    words = text.strip().lower().strip(".!")
    if _DECLINED.match(words):
        return DECLINED
    if _LATER.match(words):
        return DEFERRED
    if _DONE.match(words) or (_ARRIVED.search(words) and not _NEGATION.search(words)):
        return COMPLETED
    return None


def question(label: str) -> str:
    return f"{label}: done, later, or not needed?"


class GuidedGoalModel:
    """Settles the active goal's non-form items through ``goal_update``, asking the person each."""

    name = "guided"

    def __init__(self, goals: GoalRunner) -> None:
        self.goals = goals  # the conversation's GoalRunner (reads only; writes go through the tools)
        self.asking: tuple[str, str] | None = None  # (goal, item) last asked about
        self.asking_label = ""
        self.asked_owed: set[tuple[str, str]] = set()  # follow-ups asked about once already

    def _next_item(self) -> tuple[str, str, str] | None:
        status = self.goals.inspect()
        if status is None:
            return None
        if status.active_goal is None:  # complete: the deferred work still owed, each once
            for f in status.follow_ups:
                if (f.goal, f.item) not in self.asked_owed:
                    return f.goal, f.item, f"{f.label} (deferred: {f.reason})" if f.reason else f.label
            return None
        goal = status.goal(status.active_goal)
        if goal is None:  # the program changed under the chat: nothing of it to ask about
            return None
        for item in goal.items:
            if is_asked(item):
                return goal.key, item.key, item.label
        return None

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        last = request.messages[-1] if request.messages else {"content": []}
        blocks = content_blocks(last.get("content"))
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            failed = any(b.get("is_error") for b in results)
            return self._say(("That didn't go through; " if failed else "") + self._ask_next(), on_text)
        said = next((b.get("text", "") for b in blocks if b.get("type") == "text"), "")
        if self.asking is None or said.strip() == "Hello.":
            return self._say(self._ask_next(), on_text)
        disposition = answer_disposition(said)
        goal, item = self.asking
        if disposition is None:
            return self._say(f"Please answer done, later, or not needed. {question(self.asking_label)}", on_text)
        status = self.goals.inspect()
        if status is None:  # the program cannot be read now: say so, as when nothing is left
            return self._say(self._ask_next(), on_text)
        if status.active_goal is None:
            self.asked_owed.add((goal, item))
        call = {
            "type": "tool_use",
            "id": f"toolu_goal_{status.version}_{item}",
            "name": "goal_update",
            "input": {
                "goal": goal,
                disposition: [item],
                "reason": f"Said in the chat: {said.strip()[:200]}",
                "version": status.version,
            },
        }
        return ModelReply(content=[call], stop_reason="tool_use")

    def _ask_next(self) -> str:
        found = self._next_item()
        if found is None:
            self.asking = None
            status = self.goals.inspect()
            if status is not None and status.active_goal is None:
                return "That is all the deferred work for now."
            return "That settles this goal's checklist."
        goal, item, label = found
        self.asking = (goal, item)
        self.asking_label = label
        return question(label)

    @staticmethod
    def _say(text: str, on_text: TextSink | None) -> ModelReply:
        if on_text is not None:
            on_text(text)
        return ModelReply(content=[{"type": "text", "text": text}])
