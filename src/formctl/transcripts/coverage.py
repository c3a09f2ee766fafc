"""Coverage over a set of transcripts: what of each form the conversations exercised.

Sampled after every tool result and host action of a replay, from the engine's own
evaluation (so "applicable" means exactly what the engine decided, not a re-implementation):

- steps opened (the open step at some point);
- fields filled (live and valid at some point);
- ``when`` gates (fields, steps, checkpoints) seen true *and* false — a gate seen only one
  way has half its behaviour untested — and checks (``check:«id»``) seen passing *and*
  failing on the answers they read;
- checkpoints fired (their rising edge counted);
- effects run (executors: field ``on_fill``, step ``on_complete``, checkpoint ``run``,
  form ``on_complete``), from the dispatch log.

The report lists, per form, what was never exercised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from formctl.forms.evaluate import FILLED
from formctl.forms.lifecycle import is_in_progress
from formctl.forms.resolutions import is_resolution

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.runner import FormRunner


class CoverageSummary(TypedDict):
    """One form's coverage: each figure as (exercised, declared), and what was never exercised, by kind."""

    form: str
    transcripts: int
    steps: tuple[int, int]
    fields: tuple[int, int]
    gates: tuple[int, int]
    checkpoints: tuple[int, int]
    effects: tuple[int, int]
    never: dict[str, list[str]]


@dataclass
class FormCoverage:
    compiled: CompiledForm
    transcripts: set[str] = field(default_factory=set)
    steps_opened: set[str] = field(default_factory=set)
    fields_filled: set[str] = field(default_factory=set)
    gates: dict[str, set[bool]] = field(default_factory=dict)
    checkpoints_fired: set[str] = field(default_factory=set)
    effects_ran: set[str] = field(default_factory=set)

    # -- what the form declares -----------------------------------------------------------

    def declared_gates(self) -> list[str]:
        c = self.compiled
        out = [f"step:{s.id}" for s in c.steps if s.when is not None]
        out += [f"field:{f.id}" for f in c.fields if f.when is not None]
        out += [f"checkpoint:{cp.id}" for cp in c.checkpoints]
        out += [f"check:{check.id}" for check in c.checks]
        return out

    def declared_effects(self) -> list[str]:
        c = self.compiled
        out = [f"field:{f.id}" for f in c.fields if f.on_fill is not None]
        out += [f"step:{s.id}" for s in c.steps if s.on_complete is not None]
        out += [f"checkpoint:{cp.id}" for cp in c.checkpoints if cp.run is not None]
        if c.on_complete is not None:
            out.append("form")
        return out

    def summary(self) -> CoverageSummary:
        c = self.compiled
        gates = self.declared_gates()
        both = [g for g in gates if self.gates.get(g) == {True, False}]
        effects = self.declared_effects()
        return {
            "form": c.id,
            "transcripts": len(self.transcripts),
            "steps": (len([s for s in c.steps if s.id in self.steps_opened]), len(c.steps)),
            "fields": (len([f for f in c.fields if f.id in self.fields_filled]), len(c.fields)),
            "gates": (len(both), len(gates)),
            "checkpoints": (len([cp for cp in c.checkpoints if cp.id in self.checkpoints_fired]), len(c.checkpoints)),
            "effects": (len([e for e in effects if e in self.effects_ran]), len(effects)),
            "never": {
                "steps opened": [s.id for s in c.steps if s.id not in self.steps_opened],
                "fields filled": [f.id for f in c.fields if f.id not in self.fields_filled],
                "gates seen both ways": [
                    f"{g} (only {'true' if self.gates.get(g) == {True} else 'false' if self.gates.get(g) == {False} else 'never evaluated'})"
                    for g in gates
                    if g not in both
                ],
                "checkpoints fired": [cp.id for cp in c.checkpoints if cp.id not in self.checkpoints_fired],
                "effects run": [e for e in effects if e not in self.effects_ran],
            },
        }


class Coverage:
    """Accumulates samples across replays, one :class:`FormCoverage` per form."""

    def __init__(self) -> None:
        self.forms: dict[str, FormCoverage] = {}

    def sample(self, runner: FormRunner, instance_id: str | None, transcript: str) -> None:
        try:
            compiled, instance, ev = runner.evaluation(instance_id)
        except Exception:
            return  # no instance yet (before form_start), or one that cannot load
        cov = self.forms.get(compiled.id)
        if cov is None:
            cov = self.forms[compiled.id] = FormCoverage(compiled)
        elif cov.compiled is not compiled:
            cov.compiled = compiled
        cov.transcripts.add(transcript)
        if ev.open_step is not None and is_in_progress(instance):
            cov.steps_opened.add(compiled.steps[ev.open_step].id)
        for f in compiled.fields:
            if ev.status[f.order] == FILLED:
                cov.fields_filled.add(f.id)
            if f.when is not None:
                cov.gates.setdefault(f"field:{f.id}", set()).add(bool(ev.applicable[f.order]))
        for s in compiled.steps:
            if s.when is not None:
                cov.gates.setdefault(f"step:{s.id}", set()).add(bool(ev.step_open[s.index]))
        for cp in compiled.checkpoints:
            cov.gates.setdefault(f"checkpoint:{cp.id}", set()).add(bool(ev.checkpoint_active[cp.index]))
            if instance.occurrences.get(f"checkpoint:{cp.id}", 0) > 0:
                cov.checkpoints_fired.add(cp.id)
        failing = {check.id for check in ev.failed_checks}
        for check in compiled.checks:
            if check.id in failing:
                cov.gates.setdefault(f"check:{check.id}", set()).add(False)
            elif all(compiled.fields[i].id in ev.live for i in check.required):  # it applied, and passed
                cov.gates.setdefault(f"check:{check.id}", set()).add(True)
        for key, record in instance.dispatches.items():
            if is_resolution(key):
                continue  # the host's answer to a checkpoint, not an executor run
            if record.ended:  # it ran (not still running)
                cov.effects_ran.add(record.hook_id)

    def summaries(self) -> list[CoverageSummary]:
        return [self.forms[k].summary() for k in sorted(self.forms)]

    def render(self) -> str:
        lines = ["coverage:"]
        for s in self.summaries():
            lines.append(
                f"  {s['form']} ({s['transcripts']} transcript{'' if s['transcripts'] == 1 else 's'}): "
                f"steps opened {_frac(s['steps'])}, "
                f"fields filled {_frac(s['fields'])}, gates both ways {_frac(s['gates'])}, "
                f"checkpoints fired {_frac(s['checkpoints'])}, effects run {_frac(s['effects'])}"
            )
            for what, items in s["never"].items():
                if items:
                    lines.append(f"    never {what}: {', '.join(items)}")
        if len(lines) == 1:
            lines.append("  (no form was started)")
        return "\n".join(lines)


def _frac(figure: tuple[int, int]) -> str:
    done, total = figure
    return f"{done}/{total}"
