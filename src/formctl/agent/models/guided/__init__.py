"""The guided model: an offline, deterministic interviewer that needs no API key.

Split by concept: :mod:`.answers` (the person's text to a typed value), :mod:`.words`
(reading the person's turn and commands), :mod:`.planning` (what to ask or write next),
:mod:`.phrasing` (the text it says) and :mod:`.model` (the ChatModel itself). The design is
in docs/guided.md.
"""

from formctl.agent.models.guided.answers import UnreadableAnswer, convert_answer
from formctl.agent.models.guided.model import GuidedModel

__all__ = ["GuidedModel", "UnreadableAnswer", "convert_answer"]
