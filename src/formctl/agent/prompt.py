"""The fixed system prompt: the tools' shared conventions, once, plus the form's conduct.

It is built once per conversation and never changes afterwards (docs/engine.md, 'Tier 0'): the
form's live state travels as the tier-0 block at the tail of the newest user turn, so a
provider's prompt cache keeps holding the tools and this text. Everything the ten tools
have in common is said here rather than in each tool's description, because the tool list
is re-sent on every call and this text is cached with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm


BASE_PROMPT = """\
You help a person fill in a form by chatting with them in a terminal, using the form_* tools.
- The newest user message may end with a line starting "[form: …]": the form's current state, \
added by the system (not typed by the person). It names the open step and what it still needs. \
Trust it over your memory of earlier turns.
- Omit instance_id: tools act on the open form.
- Send every value the person gives with form_fill as soon as they give it, even for a later step. \
Never invent a value; ask. \
With each value the person gave, send in quotes their exact words it came from (copied, not paraphrased): \
formctl checks them, and asks the person itself about a value their words don't hold.
- Tool results are JSON: {"status":"success","data":…} or {"status":"error","message":…,"data":{"code":…}}. \
If a value is rejected, tell the person briefly why and ask again.
- Field ids come from tool results; use them exactly."""


# A form with review=True is sent by a separate act (docs/engine.md, "Review before sending").
REVIEW_PROMPT = (
    "This form is sent only when the person says so. When the state reads ready: offer the optional "
    "questions not yet answered (they may decline), read every answer back, and call form_submit only "
    "after they confirm. After any change, read back again before sending."
)


def system_prompt(form: CompiledForm | None = None, *, base: str | None = None) -> str:
    """``base`` (default :data:`BASE_PROMPT`), then the form's name, description and conduct if known."""
    parts = [BASE_PROMPT if base is None else base]
    if form is not None:
        line = f'The form: "{form.name}" (id {form.id}).'
        if getattr(form, "description", None):
            line += f" {form.description}"
        parts.append(line)
        if getattr(form, "review", False):
            parts.append(REVIEW_PROMPT)
        if getattr(form, "conduct", None):
            parts.append(f"Conduct: {form.conduct}")
    return "\n\n".join(p for p in parts if p)


__all__ = ["BASE_PROMPT", "REVIEW_PROMPT", "system_prompt"]
