"""The CI gate of ``formctl eval``: which figures decide the exit status.

Without a gate, any failed run exits 1 (a model is not allowed a single failure). A live model
is not that reliable, and a team puts the bar where it means to hold it: ``--min-pass P`` (each
model's pass^1, the mean over its scenarios, at least P) and ``--min-pass-k P`` (each model's
pass^k at least P: with ``--runs K``, the chance that all K runs of a scenario pass). With a
gate, the gate alone decides: every model must meet every bar given. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from formctl.json_types import JsonObject

__all__ = ["Gate", "parse_share"]


def parse_share(text: str) -> float:
    """``0.9``, ``90%`` or ``90`` (a percentage above 1) as a share from 0 to 1; ValueError otherwise."""
    raw = text.strip()
    percent = raw.endswith("%")
    value = float(raw.rstrip("%").strip())
    if percent or value > 1:
        value /= 100
    if not 0 <= value <= 1:
        raise ValueError(f"{text!r} is not a share from 0 to 1 (or a percentage)")
    return value


@dataclass(frozen=True, slots=True)
class Gate:
    """The bars a model's figures must meet (None: no bar)."""

    min_pass: float | None = None
    min_pass_k: float | None = None

    @property
    def given(self) -> bool:
        return self.min_pass is not None or self.min_pass_k is not None

    def judge(self, report: JsonObject) -> tuple[bool, list[str]]:
        """Whether every model meets every bar, and one line per model and bar."""
        k = report["k"]
        ok, lines = True, []
        for model in report["models"]:
            for figure, name, option, bar in (
                ("pass_1", "pass^1", "--min-pass", self.min_pass),
                ("pass_k", f"pass^{k}", "--min-pass-k", self.min_pass_k),
            ):
                if bar is None:
                    continue
                value = model[figure]
                met = value is not None and value >= bar - 1e-9
                ok = ok and met
                shown = "–" if value is None else f"{value * 100:.1f}%"
                verdict = "met" if met else "NOT met"
                lines.append(
                    f"gate: {model['model']} {name} {shown} {'≥' if met else '<'} {bar * 100:.1f}% ({option}): {verdict}"
                )
        return ok, lines
