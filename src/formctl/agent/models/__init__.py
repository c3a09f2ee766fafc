"""Model adapters behind one interface (``base.ChatModel``), and :func:`pick_model`.

Nothing here imports ``anthropic`` at module level: the Anthropic adapter (and the SDK)
load only when an Anthropic model is actually picked, so ``import formctl`` and
``formctl list`` stay fast and work without the SDK's import cost.
"""

from __future__ import annotations

import os
from typing import Any

from formctl.agent.models.base import ChatModel, ModelError, ModelReply, ModelRequest

__all__ = ["DEFAULT_MODEL", "ChatModel", "ModelError", "ModelReply", "ModelRequest", "pick_model"]

# A current, tool-capable model that is not on the SDK's deprecation list (claude-sonnet-4-5
# reaches end of life on 2026-11-30). Override with --model or FORMCTL_MODEL.
DEFAULT_MODEL = "claude-sonnet-4-6"


def pick_model(
    runner: Any,
    *,
    model_name: str | None = None,
    offline: bool = False,
    form_id: str | None = None,
) -> ChatModel:
    """The model ``formctl run`` talks to.

    ``offline``, or no ``ANTHROPIC_API_KEY``: the guided model (offline, deterministic).
    Otherwise the Anthropic Messages API with ``model_name``, else ``FORMCTL_MODEL``, else
    :data:`DEFAULT_MODEL`.
    """
    if offline or not os.environ.get("ANTHROPIC_API_KEY", "").strip():
        from formctl.agent.models.guided import GuidedModel

        return GuidedModel(runner, form_id=form_id)
    from formctl.agent.models.anthropic import AnthropicModel

    name = model_name or os.environ.get("FORMCTL_MODEL", "").strip() or DEFAULT_MODEL
    return AnthropicModel(name)
