"""Phrasing: what the guided model says after its tools ran.

It reports what the results say (captured, held, rejected with the reason and hint, unknown
ids with their did-you-mean), then reads the instance through the runner (never writing) to
say what comes next: the next question, a wait, a termination or the summary of a finished
form. A terminated form is never restarted, and a form that waits is never abandoned:
``quit`` only says how to resume.

The texts are pure functions of the instance read (and the turn's results). The few that
decide what happens now (:func:`speak`, :func:`state_paragraphs`, :func:`question`) also
record in the model's :class:`~formctl.agent.models.guided.state.GuidedState` what the reply
said: the question asked, the step announced, the failures shown, the version read back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.agent.models.guided.answers import format_value, jsonable, or_list
from formctl.agent.models.guided.held import held_paragraphs
from formctl.agent.models.guided.questions import asks_nothing, failed_step_check, next_question
from formctl.agent.models.guided.state import GuidedState, Plan, Snapshot
from formctl.agent.models.guided.words import Result, Turn
from formctl.forms.evaluate import FILLED, HELD
from formctl.forms.executors import COULD_NOT_CHECK
from formctl.forms.lifecycle import Status, is_closed
from formctl.forms.messages import said_by
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledField, CompiledForm
    from formctl.forms.history import MoveTarget

HELP_TEXT = (
    "Answer each question in your own words, or give any answer directly as "
    '"Label: value" (several at once separated by ";"). You can also say: '
    '"undo" (take back your last answer), "back" (take it back and answer again), '
    '"skip" (leave out an optional question), "status" (where we are), '
    '"withdraw" (take back a request waiting for approval, to change an answer), '
    '"what else" (what\'s still to come) and "quit" (stop now and carry on later). '
    'When every answer is in I read them all back, and "yes" sends the form.'
)


STALE_TEXT = (
    "This form's definition changed since it was started, so it can't be continued here. "
    "Its answers are kept: `formctl export {id}` shows them, `formctl migrate {id}` moves it to the "
    "new version, and `formctl abandon {id} --reason REASON` closes it."
)


def stale_text(instance_id: str) -> str:
    """What the guided model says of a stale instance, naming it (never a placeholder)."""
    return STALE_TEXT.format(id=instance_id)


# After a refused correction of a good answer; a model resumed over it keeps the offer (restore.py).
KEEP_OFFER = 'say "keep" to put it back'

# How a waiting request is taken back, in the wait's text: the chat's own command (its name is
# cli/chat/commands.py's); after it the answers can be corrected and the request is made again.
WITHDRAW_TEXT = 'To correct an answer before then, take the request back with /withdraw (or say "withdraw").'

# The read-back's question: a model resumed over a conversation that ends with it reads back again.
READ_BACK_QUESTION = "Shall I send it?"


def turn_errors(turn: Turn) -> list[Result]:
    """The results of this turn's tool calls that failed, in call order."""
    results = [turn.results[str(c.get("id"))] for c in turn.calls if str(c.get("id")) in turn.results]
    return [r for r in results if not r.ok]


def speak(state: GuidedState, snap: Snapshot, turn: Turn, plan: Plan) -> list[str]:
    """The reply after the plan's tools ran: what the results say, then what happens now."""
    paragraphs: list[str] = []
    errors = turn_errors(turn)
    compiled = snap.compiled
    labels = {f.id: f.label for f in compiled.fields}
    if plan.kind == "start":
        paragraphs.append(welcome(compiled, new=True))
    elif plan.kind == "greet":
        paragraphs.append(welcome(compiled, new=False, snap=snap))
    for call in turn.calls:
        result = turn.results.get(str(call.get("id")))
        if result is None:
            continue
        if not result.ok:
            paragraphs.append(error_text(result, snap.instance.id))
            continue
        if call.get("name") in ("form_fill", "form_start", "form_revise") and isinstance(result.data, dict):
            if plan.kind in ("undo", "back", "redo") and plan.target is not None:
                paragraphs.append(move_text(plan.kind, plan.target, _sensitive(snap, plan.target.field)))
                if plan.kind == "back":
                    state.focus = plan.target.field
                    state.skipped.discard(plan.target.field)
            paragraphs.extend(fill_report(state, result.data, labels, snap, plan.replaced))
    aside = [f.label for f in compiled.fields if f.id in plan.in_force and snap.ev.status[f.order] == HELD]
    if aside:
        # An answer that applied before this turn and not after it (car to rail: the mileage).
        names = or_list(aside).replace(" or ", " and ")
        verb, it = ("doesn't", "it") if len(aside) == 1 else ("don't", "them")
        paragraphs.append(f"{names} {verb} apply any more, so I've set {it} aside (kept in case that changes back).")
    if plan.kind == "withdraw" and not errors:
        paragraphs.append("I've withdrawn the request for approval, so your answers can be changed.")
    paragraphs.extend(plan.notes)
    if plan.kind == "skip" and plan.skipped is not None:
        paragraphs.append(f"Skipped {labels.get(plan.skipped, plan.skipped)}.")
    paragraphs.extend(problem_paragraphs(state, snap, plan))
    if plan.kind == "submit" and not errors and snap.instance.status == Status.COMPLETE:
        state.summarised = (snap.instance.id, snap.instance.version)
        paragraphs.append(f"Sent. The {compiled.name} is complete — thank you.")
        return paragraphs
    if plan.kind == "what_else":
        paragraphs.append(what_else_text(turn, snap, state.skipped))
    if plan.kind == "status":
        paragraphs.append(status_text(snap, state.skipped))
    paragraphs.extend(state_paragraphs(state, snap, repeat=plan.kind in ("what_else", "status")))
    return paragraphs


def fill_report(
    state: GuidedState,
    data: JsonObject,
    labels: dict[str, str],
    snap: Snapshot,
    replaced: JsonObject | None = None,
) -> list[str]:
    """What a write's result says: saved, held, refused (``replaced``: the answers the refused
    corrections were meant to replace, now set aside), and fields that don't exist."""
    out = []
    values = {row.get("id"): row.get("value") for row in data.get("fields", []) if isinstance(row, dict)}
    captured = data.get("captured") or []
    if captured:
        parts = []
        for field_id in captured:
            value = values.get(field_id)
            if field_id not in values:
                value = snap.ev.values.get(field_id) if snap.maybe_ev is not None else None
            shown = "(hidden)" if _sensitive(snap, field_id) else format_value(jsonable(value))
            parts.append(f"{labels.get(field_id, field_id)}: {shown}")
        out.append(sentence("Got it — " + "; ".join(parts)))  # a value ending its own sentence gets no second dot
    held = data.get("held") or []
    if held:
        names = or_list([labels.get(f, f) for f in held]).replace(" or ", " and ")
        out.append(f"I've kept {names} for now, but it doesn't apply given the answers so far.")
    for row in data.get("rejected") or []:
        # The row's message is already a plain sentence naming the field (forms/messages.py);
        # its hint, when there is one, is for a model resending JSON, not for the person.
        field_id = row.get("field", "")
        label = labels.get(field_id, field_id)
        reason = sentence(str(row.get("message", "")))
        text = f"That wasn't accepted. {reason}" if label in reason else f"That {label} wasn't accepted. {reason}"
        if replaced and field_id in replaced:
            # The refused answer is in force now (docs/engine.md, "The answer log"): the good
            # one it was meant to replace no longer counts, and "keep" puts it back.
            earlier = "" if _sensitive(snap, field_id) else f" ({format_value(replaced[field_id])})"
            text += f" The earlier answer{earlier} no longer counts: {KEEP_OFFER}, or give {label} again."
            state.keep_offer = (snap.instance.id, field_id)
        out.append(text)
        state.said.setdefault(field_id, []).append(reason)
        if field_id in labels:
            state.focus = field_id
        if state.revisit is not None and field_id in state.revisit.answers:
            del state.revisit.answers[field_id]  # going over a step: asked again
    for row in data.get("unknown_fields") or []:
        sent = row.get("field", "")
        guesses = [labels.get(g, g) for g in row.get("did_you_mean") or []]
        text = f'There is no question called "{sent}"'
        text += f" — did you mean {or_list(guesses)}?" if guesses else "."
        out.append(text)
    return out


def problem_paragraphs(state: GuidedState, snap: Snapshot, plan: Plan) -> list[str]:
    out = []
    if plan.asked_back is not None:
        out.append(explain(state, snap, *plan.asked_back))
    if plan.needed is not None:
        field = snap.compiled.field_by_id[plan.needed]
        out.append(f"I understand, but {field.label} is required, so I can't leave it out. {_why(snap, field)}")
    for field_id, words, reason in plan.problems:
        field = snap.compiled.field_by_id[field_id]
        shown = "that" if field.sensitive else f'"{words}"'  # a near-miss of a secret is still secret
        out.append(f"I couldn't use {shown} for {field.label}: {reason}")
        state.said.setdefault(field_id, []).append(reason)
    for key in plan.unknown:
        out.append(f'There is no question called "{key}".')
    if plan.unplaced:
        out.append(
            "I wasn't sure which question this answers: "
            + "; ".join(f'"{w}"' for w in plan.unplaced)
            + '. You can say "Label: value".'
        )
    return out


def explain(state: GuidedState, snap: Snapshot, field_id: str, why: bool) -> str:
    """The answer to a question back about a field: why it is needed, or what it means, from
    the field's own help (its ``ask`` and ``hint``), else from what kind of answer it takes."""
    field = snap.compiled.field_by_id[field_id]
    helps = [sentence(h) for h in (field.ask, field.hint) if h]
    for h in helps:
        state.said.setdefault(field_id, []).append(h)  # the question asked again does not repeat it
    if why:
        return f"{_why(snap, field)} {' '.join(helps)}".strip()
    if not helps:
        helps = [_kind_help(state, snap, field_id)]
    text = f"{field.label}: {' '.join(helps)}"
    return text if field.required else text + ' It\'s optional: say "skip" to leave it out.'


def _why(snap: Snapshot, field: CompiledField) -> str:
    if field.required:
        return f"The {snap.compiled.name} needs your {_lower_first(field.label)} to go ahead."
    return f'{field.label} is optional: it helps with the {snap.compiled.name}, and "skip" leaves it out.'


def _kind_help(state: GuidedState, snap: Snapshot, field_id: str) -> str:
    """What kind of answer a field takes, for a field with no help of its own."""
    kind = state.kind(snap.compiled, field_id)
    if kind.name == "choice":
        return f"one of {or_list([str(o) for o in kind.options])}."
    if kind.name == "boolean":
        return "yes or no."
    if kind.name == "date":
        return "a date, like 3 March 2026."
    if kind.name == "integer":
        return "a whole number, like 40."
    if kind.name == "number":
        return "a number, like 40 or 212.40."
    if kind.name == "email":
        return "an email address, like name@example.org."
    return "a few words in your own words are fine."


def state_paragraphs(state: GuidedState, snap: Snapshot, *, repeat: bool = False) -> list[str]:
    """What happens now: a closure, a wait, the next question, or the summary of a finished form."""
    instance, compiled, ev = snap.instance, snap.compiled, snap.ev
    state.asked = None
    if is_closed(instance):
        return [closed_text(snap)]
    if snap.stale:
        return [stale_text(snap.instance.id)]
    if instance.status == Status.AWAITING:
        return [wait_text(snap, host_here=state.host_here)]
    out = []
    fresh = [f for f in snap.view.failures if (f.hook_id, f.message) not in state.shown_failures]
    for failure in snap.view.failures if repeat else fresh:
        out.append(_failure_text(snap.compiled, failure.hook_id, failure.message))
        state.shown_failures.add((failure.hook_id, failure.message))
    held = held_paragraphs(state, snap, repeat=repeat)
    if held:  # a check of the form's holds it: settle that before anything else (never offer to send)
        return out + held
    step_failure = failed_step_check(snap.view)
    if step_failure is not None:
        # Answers that disagree (a return before the departure): settle that before
        # moving on, or the person reaches the read-back with it still failing.
        out.append(fix_text(snap, step_failure.hook_id[len("step:") :], retry=step_failure.message == COULD_NOT_CHECK))
        return out
    field_id = next_question(state, snap)
    if field_id is not None:
        out.extend(question(state, snap, field_id))
        return out
    if instance.status == Status.READY:
        out.append(read_back_text(state, snap))
        state.read_back = (instance.id, instance.version)
        return out
    # A rejected blocking checkpoint keeps a fully answered form "active": only the
    # stored status says the form is really complete.
    if instance.status == Status.COMPLETE:
        if state.summarised == (instance.id, instance.version):
            out.append(
                f"The {compiled.name} is complete; nothing more is needed. "
                'If anything is wrong, tell me as "Label: value".'
            )
        else:
            out.append(summary(snap))
            state.summarised = (instance.id, instance.version)
        return out
    if snap.view.failures:
        out.append('To go on, change an answer with "Label: value" (or say "undo").')
        return out
    pending = [
        f.label for f in compiled.fields if f.required and ev.applicable[f.order] and ev.status[f.order] != FILLED
    ]
    if pending:
        out.append("Still needed: " + ", ".join(pending) + '. Give them as "Label: value".')
    else:
        out.append("There's nothing more to ask right now.")
    return out


def question(state: GuidedState, snap: Snapshot, field_id: str) -> list[str]:
    """The question for a field (with the step's heading when it opens one), recorded as asked."""
    compiled, ev = snap.compiled, snap.ev
    field = compiled.field_by_id[field_id]
    out = []
    step = compiled.steps[field.step_index]
    if ev.revisiting and ev.open_step == field.step_index and state.announced != f"revisit:{step.id}":
        out.append(f"We need to go back over {step.title}: please confirm or correct these answers.")
        state.announced = f"revisit:{step.id}"
    elif ev.open_step == field.step_index and state.announced not in (step.id, f"revisit:{step.id}"):
        heading = f"Step {step.number} of {len(compiled.steps)}: {step.title}."
        if step.ask:
            heading += f" {step.ask}"
        out.append(heading)
        state.announced = step.id
    kind = state.kind(compiled, field_id)
    said = state.said.get(field_id, [])  # this reply's rejection: not said twice
    choices = ""
    if kind.name == "choice":
        choices = " — " + or_list([str(o) for o in kind.options])
    elif kind.name == "boolean":
        choices = " — yes or no"
    if choices and any(said_by(s, choices[3:]) for s in said):
        choices = ""
    line = f"{field.label}{choices}?"
    helps = [h for h in (field.ask, field.hint) if h and not any(said_by(s, h) for s in said)]
    if kind.name == "date" and not helps and not any("2026-11-03" in s for s in said):
        helps.append("A date, like 2026-11-03.")
    if ev.status[field.order] == FILLED and field_id in ev.values:
        if field.sensitive:
            helps.append('It has an answer (hidden); say "same" to keep it.')
        else:
            helps.append(f'It is {format_value(jsonable(ev.values[field_id]))} now; say "same" to keep it.')
    elif not field.required:
        helps.append('Optional: say "skip" to leave it out.')
    if helps:
        line += " " + " ".join(sentence(h) for h in helps)
    out.append(line)
    state.asked = field_id
    state.asked_at = (snap.instance.id, snap.instance.version)
    return out


# ------------------------------------------------------------------ texts


def welcome(compiled: CompiledForm, *, new: bool, snap: Snapshot | None = None) -> str:
    if new:
        text = f"Let's fill in the {compiled.name}."
        if compiled.description:
            text += f" It covers: {_lower_first(compiled.description)}"
            text = text if text.endswith(".") else text + "."
        return text + ' I\'ll ask one thing at a time. Say "help" at any point to see what else you can say.'
    answered = sum(1 for f in compiled.fields if snap is not None and snap.ev.status[f.order] == FILLED)
    if answered:
        saved = "Your answer so far is saved." if answered == 1 else f"Your {answered} answers so far are saved."
        return f"Welcome back to the {compiled.name}. {saved}"
    return f"Let's carry on with the {compiled.name}."


def status_text(snap: Snapshot, skipped: set[str]) -> str:
    compiled, ev, instance = snap.compiled, snap.ev, snap.instance
    if asks_nothing(instance) or snap.stale:
        return ""
    if ev.open_step is None:
        return ""  # the summary of the finished form says it all
    step = compiled.steps[ev.open_step]
    rows = snap.view.fields
    done = [r.label for r in rows if r.status == FILLED and not r.ask]
    pending = [r.label for r in rows if r.ask and r.id not in skipped]
    text = f"We're on step {step.number} of {len(compiled.steps)}: {step.title}."
    if done:
        text += " Answered: " + ", ".join(done) + "."
    if pending:
        text += " Still to answer: " + ", ".join(pending) + "."
    return text


def what_else_text(turn: Turn, snap: Snapshot, skipped: set[str]) -> str:
    outline = None
    for call in turn.calls:
        result = turn.results.get(str(call.get("id")))
        if call.get("name") == "form_inspect" and result is not None and result.ok:
            outline = result.data if isinstance(result.data, dict) else outline
    if outline is None:
        return "I couldn't read the outline just now."
    ev, compiled = snap.ev, snap.compiled
    open_k = ev.open_step
    parts = []
    if open_k is not None:
        step = compiled.steps[open_k]
        pending = [
            f.label
            for f in step.fields
            if ev.applicable[f.order] and ev.status[f.order] != FILLED and f.id not in skipped
        ]
        if pending:
            parts.append(f"In this step ({step.title}) I still need: {', '.join(pending)}.")
    later, omitted = [], False
    for summary in outline.get("steps") or []:
        upcoming = compiled.step_by_id.get(summary.get("id"))
        if upcoming is None or summary.get("complete"):
            continue
        k = upcoming.index
        if open_k is not None and k <= open_k:
            continue
        # Don't promise a step none of whose questions apply given the answers so far.
        if not any(ev.applicable[f.order] for f in upcoming.fields):
            omitted = True
            continue
        collects = summary.get("collects")
        later.append(f"{summary.get('title')} ({collects})" if collects else str(summary.get("title")))
    if later:
        parts.append("After that: " + "; ".join(later) + ".")
    if omitted:
        parts.append("Depending on your answers there may be a little more.")
    if not parts:
        parts.append("Nothing else — this is the last of it.")
    return " ".join(parts)


def wait_text(snap: Snapshot, *, host_here: bool = False) -> str:
    instance, compiled = snap.instance, snap.compiled
    checkpoint = compiled.checkpoint_by_id.get(instance.blocked_on or "")
    message = (
        checkpoint.wait_message
        if checkpoint is not None and checkpoint.wait_message
        else (f'The form is waiting on the "{instance.blocked_on}" check.')
    )
    # The wait message names who decides ("waiting for Finance to approve"); the
    # command is the same for every form, so say it. A chat opened --as-host is the host's own
    # terminal: there, it is /resolve. Either way the person may take the request back to
    # correct an answer: the chat's /withdraw (cli/chat/commands.py) does it, and is recorded.
    if host_here:
        return (
            f"{sentence(message)} Your answers are saved, but nothing can change until it is resolved: "
            "you are playing the host, so decide it here with /resolve (or /resolve --fail REASON "
            f"to turn it down). {WITHDRAW_TEXT}"
        )
    return (
        f"{sentence(message)} Your answers are saved, but nothing can change until it is resolved: "
        f"the approver runs `formctl resolve {instance.id}` (or `formctl resolve {instance.id} --fail REASON` "
        f"to turn it down). {WITHDRAW_TEXT} Message me again once that's done and we'll carry on."
    )


def closed_text(snap: Snapshot) -> str:
    reason = snap.instance.closed_reason
    if reason:
        return (
            f"I'm sorry, we have to stop here: {sentence(reason)} "
            "Your answers so far are kept, but there's nothing more to fill in."
        )
    return "This form has been closed, so there's nothing more to fill in. Your answers are kept."


def quit_text(snap: Snapshot) -> str:
    instance = snap.instance
    if is_closed(instance):
        return closed_text(snap)
    return (
        "No problem — everything you've answered is saved. "
        f"You can pick this up later with `formctl resume {instance.id}`."
    )


def fix_text(snap: Snapshot, step_id: str, *, retry: bool = False) -> str:
    """How to settle a step's failed check: the step's answers, and how to change one (or,
    when the check could not run, to give one again so it runs again)."""
    compiled, ev = snap.compiled, snap.ev
    step = compiled.step_by_id.get(step_id)
    shown = []
    for field in step.fields if step is not None else []:
        if ev.status[field.order] == FILLED and field.id in ev.values:
            value = "(hidden)" if field.sensitive else format_value(jsonable(ev.values[field.id]))
            shown.append(f"{field.label}: {value}")
    text = (
        'To check again, give one of these answers again as "Label: value"'
        if retry
        else 'Which answer should change? Tell me as "Label: value"'
    )
    return text + (" — now " + "; ".join(shown) + "." if shown else ".")


def read_back_text(state: GuidedState, snap: Snapshot) -> str:
    """Every answer, before the form is sent, and how to send it or change it."""
    compiled, ev = snap.compiled, snap.ev
    lines = [f"That's everything for the {compiled.name}. Before I send it, please check your answers:"]
    left_out = []
    for field in compiled.fields:
        if not ev.applicable[field.order]:
            continue
        if ev.status[field.order] == FILLED and field.id in ev.values:
            shown = "(hidden)" if field.sensitive else format_value(jsonable(ev.values[field.id]))
            lines.append(f"- {field.label}: {shown}")
        elif not field.required:
            left_out.append(field.label)
            state.skipped.add(field.id)  # offered once: the read-back lists it, "Label: value" adds it
    if left_out:
        lines.append("Left out: " + ", ".join(left_out) + ".")
    lines.append(f'{READ_BACK_QUESTION} Say "yes" to send it, or tell me what to change as "Label: value".')
    return "\n".join(lines)


def summary(snap: Snapshot) -> str:
    compiled, ev = snap.compiled, snap.ev
    lines = [f"That's everything — the {compiled.name} is complete. Here's what I have:"]
    for field in compiled.fields:
        if ev.applicable[field.order] and ev.status[field.order] == FILLED and field.id in ev.values:
            shown = "(hidden)" if field.sensitive else format_value(jsonable(ev.values[field.id]))
            lines.append(f"- {field.label}: {shown}")
    lines.append('If anything is wrong, tell me as "Label: value".')
    return "\n".join(lines)


def error_text(result: Result, instance_id: str) -> str:
    if result.code == "form_blocked":
        return "I can't change anything while the form is waiting."
    if result.code == "form_stale":
        return stale_text(instance_id)
    if result.code in (None, "form_definition_error"):
        # A bug in the form's own code (a gate or a check that raised): nothing the person
        # said or can fix, and never an exception's text. The host sees it with --debug.
        return (
            "That couldn't be done just now: something in the form itself went wrong, not your answer. "
            "Your earlier answers are kept."
        )
    return f"That didn't go through: {result.message}"


def list_text(turn: Turn) -> str:
    rows: list[JsonObject] = []
    for result in turn.results.values():
        if result.ok and isinstance(result.data, dict):
            rows = result.data.get("forms") or []
    if not rows:
        return "There are no forms to fill in."
    lines = ["Which form would you like to fill in? Reply with its name:"]
    for row in rows:
        lines.append(f"- {row.get('id')}: {row.get('name')}")
    return "\n".join(lines)


def move_text(kind: str, target: MoveTarget, sensitive: bool = False) -> str:
    verb = "Redone" if kind == "redo" else "Undone"
    if target.empties:
        return f"{verb}: {target.label} is empty again."
    if sensitive:  # as "Got it — PIN: (hidden)": a sensitive value is never shown
        which = "the answer you took back" if kind == "redo" else "its previous answer"
        return f"{verb}: {target.label} has {which} again (hidden)."
    back = f"{verb}: {target.label} is back to {format_value(jsonable(target.value))}"
    # One answer back can be one that was refused when given: it is in force again, as it was.
    return f"{back}." if target.accepted else f"{back}, which wasn't accepted."


def _sensitive(snap: Snapshot, field_id: str) -> bool:
    field = snap.compiled.field_by_id.get(field_id)
    return bool(field is not None and field.sensitive)


def _failure_text(compiled: CompiledForm, hook_id: str, message: str) -> str:
    """A failed executor in words: a fault as "… couldn't be checked just now." (the engine never
    passes on the exception), a form's own ``Fail`` reason as written, with what it was about."""
    kind, _, name = hook_id.partition(":")
    field = compiled.field_by_id.get(name) if kind == "field" else None
    step = compiled.step_by_id.get(name) if kind == "step" else None
    if message == COULD_NOT_CHECK:
        if field is not None:
            return f"{field.label} couldn't be checked just now."
        if step is not None:
            return f"{step.title} couldn't be checked just now."
        return f"{_hook_name(hook_id)} couldn't be run just now." if kind == "checkpoint" else COULD_NOT_CHECK
    if field is not None:
        return f"{field.label}: {sentence(message)}"
    if kind == "checkpoint":
        return f"{_hook_name(hook_id)} did not pass: {sentence(message)}"
    return sentence(message)


def _hook_name(hook_id: str) -> str:
    kind, _, name = hook_id.partition(":")
    return f'The "{name}" check' if kind == "checkpoint" and name else f'"{hook_id}"'


def sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
