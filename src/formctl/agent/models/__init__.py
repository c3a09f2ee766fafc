"""Model adapters behind one interface (``base.ChatModel``), and choosing one: :func:`pick_model`.

A model is named ``PROVIDER:NAME`` (docs/models.md):

- ``anthropic:claude-sonnet-4-6``: the Anthropic Messages API (``ANTHROPIC_API_KEY``,
  ``ANTHROPIC_BASE_URL``);
- ``openai:gpt-4.1``, ``openai:llama3.1``: any OpenAI-compatible Chat Completions API
  (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``; a local server such as Ollama at
  ``http://localhost:11434/v1`` needs no key). The extra ``formctl[openai]``;
- ``guided``: the offline guided model.

Without a prefix the provider is the one whose key is set (Anthropic's first, then
OpenAI's key or base URL); with no key at all, the guided model. ``--offline`` always wins.

Nothing here imports a provider's SDK at module level: an adapter (and its SDK) loads only
when its model is actually picked, so ``import formctl`` and ``formctl list`` stay fast and
work without either SDK installed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from formctl.agent.models.base import ChatModel, ModelReply, ModelRequest
from formctl.errors import ModelError

if TYPE_CHECKING:
    from formctl.forms.runner import FormRunner

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_MODELS",
    "PROVIDERS",
    "ChatModel",
    "ModelChoice",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "choose_model",
    "model_label",
    "pick_model",
]

# A current, tool-capable model that is not on the SDK's deprecation list (claude-sonnet-4-5
# reaches end of life on 2026-11-30). Override with --model or FORMCTL_MODEL.
DEFAULT_MODEL = "claude-sonnet-4-6"
# Each provider's model when only the provider is known (a key set, no name given).
DEFAULT_MODELS = {"anthropic": DEFAULT_MODEL, "openai": "gpt-4.1"}
PROVIDERS = ("anthropic", "openai", "guided")


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """Which model a spec and the environment pick: ``provider`` (anthropic | openai | guided),
    ``name`` (the provider's model name; "guided" for the guided model) and ``why`` (for the
    guided model: what made it the choice, e.g. "--offline" or "no model key is set")."""

    provider: str
    name: str
    why: str = ""

    @property
    def spec(self) -> str:
        """The choice as ``--model`` takes it: ``openai:llama3.1``, ``guided``."""
        return "guided" if self.provider == "guided" else f"{self.provider}:{self.name}"


def _key(variable: str) -> bool:
    return bool(os.environ.get(variable, "").strip())


def choose_model(model_name: str | None = None, *, offline: bool = False) -> ModelChoice:
    """The model ``model_name`` (``PROVIDER:NAME``, a bare name, or None: ``FORMCTL_MODEL``) picks.

    Pure apart from reading the environment; builds nothing and imports no SDK, so a caller
    (``formctl eval``, a header line) can say what will run before it runs. Raises
    :class:`ModelError` for a provider formctl does not know, or one named explicitly whose key
    is not set (a named provider never quietly becomes another).
    """
    if offline:
        return ModelChoice("guided", "guided", "--offline")
    spec = (model_name or "").strip() or os.environ.get("FORMCTL_MODEL", "").strip()
    provider, colon, name = spec.partition(":")
    if not colon:
        provider, name = "", spec
    provider, name = provider.strip().lower(), name.strip()
    if not colon and name.lower() == "guided":
        return ModelChoice("guided", "guided", "--model guided")
    if colon:
        if provider not in PROVIDERS:
            raise ModelError(
                f'Unknown model provider "{provider}" in "{spec}": use anthropic:NAME, openai:NAME or guided.'
            )
        if provider == "guided":
            return ModelChoice("guided", "guided", "--model guided")
        if provider == "anthropic" and not _key("ANTHROPIC_API_KEY"):
            raise ModelError(f"--model {spec} needs ANTHROPIC_API_KEY: set it, or pick another model.")
        if provider == "openai" and not (_key("OPENAI_API_KEY") or _key("OPENAI_BASE_URL")):
            raise ModelError(
                f"--model {spec} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server): set it, "
                "or pick another model."
            )
        return ModelChoice(provider, name or DEFAULT_MODELS[provider])
    # No prefix: the provider whose key is set.
    if _key("ANTHROPIC_API_KEY"):
        return ModelChoice("anthropic", name or DEFAULT_MODELS["anthropic"])
    if _key("OPENAI_API_KEY") or _key("OPENAI_BASE_URL"):
        return ModelChoice("openai", name or DEFAULT_MODELS["openai"])
    return ModelChoice("guided", "guided", "no model key is set")


def pick_model(
    runner: FormRunner | None,
    *,
    model_name: str | None = None,
    offline: bool = False,
    form_id: str | None = None,
    timeout: float | None = None,
    locale: str | None = None,
) -> ChatModel:
    """The model ``formctl run`` talks to: :func:`choose_model`'s choice, built.

    ``offline``, or no model key at all: the guided model (offline, deterministic), which
    needs ``runner`` and ``form_id`` (a provider's model needs neither: ``formctl eval``'s
    simulated person is one, with no form to drive), and reads the person's words by ``locale`` (None: the
    environment's, ``FORMCTL_LOCALE`` or ``LANG``). ``timeout``: the deadline of one call in seconds
    (``--model-timeout``; None: ``FORMCTL_MODEL_TIMEOUT`` or two minutes, docs/models.md).
    Raises :class:`ModelError` as :func:`choose_model` does, and for a timeout that is no number
    of seconds above 0.
    """
    choice = choose_model(model_name, offline=offline)
    if choice.provider == "anthropic":
        from formctl.agent.models.anthropic import AnthropicModel

        return AnthropicModel(choice.name, deadline=timeout)
    if choice.provider == "openai":
        from formctl.agent.models.openai import OpenAIChatModel

        return OpenAIChatModel(choice.name, deadline=timeout)
    from formctl.agent.models.guided import GuidedModel

    return GuidedModel(runner, form_id=form_id, locale=locale)


def model_label(model: ChatModel) -> str:
    """A model as a person reads it and a transcript records it: ``openai:llama3.1``, ``guided``."""
    provider = getattr(model, "provider", None)
    name = str(getattr(model, "name", "") or "")
    if isinstance(provider, str) and provider and provider not in ("guided", "scripted") and name:
        return f"{provider}:{name}"
    return name
