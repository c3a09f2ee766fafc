"""The guided model: an offline, deterministic interviewer that needs no API key.

Split by concept: :mod:`.answers` (the person's text to a typed value), :mod:`.words`
(reading the person's turn and commands), :mod:`.natural` (placing the values of a natural
answer), :mod:`.state` (what the model remembers, the plan of a turn, the instance read),
:mod:`.questions` (which question is open), :mod:`.planning` (what to ask or write next),
:mod:`.phrasing` (the text it says) and :mod:`.model` (the ChatModel itself, holding the state
and calling planning and phrasing). The design is in docs/guided.md.
"""

from formctl.agent.models.guided.answers import UnreadableAnswer, convert_answer
from formctl.agent.models.guided.model import GuidedModel

__all__ = ["GuidedModel", "UnreadableAnswer", "convert_answer"]
