"""The one shared module of example forms for the engine tests.

Every engine test builds its forms here, so a form is written once and every test that
uses it reads the same definition. Each builder is a plain function returning a fresh
``CompiledForm`` (gates and executors are closures, so tests that need their own
recording hooks call the ``make_*`` variants with arguments).

``ALL_FORMS`` maps a form id to its zero-argument factory; ``tests/conftest.py`` registers
every entry in the shared ``registry`` fixture. Other helpers may append forms at the end
of this module: add the factory and an ``ALL_FORMS`` entry next to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import EmailStr, Field

from formctl import Fail, Jump, define_form
from formctl.forms.instance import Entry, FieldLog, Instance, Provenance

RETRACT = object()
"""In ``build_instance`` answers, a retraction revision."""


def build_instance(
    form, answers: dict[str, Any] | None = None, *, cursors: dict[str, int] | None = None, **attrs: Any
) -> Instance:
    """A stored-looking instance of ``form`` built by hand, for the pure evaluate/project tests.

    ``answers`` maps a field id to a value, or to a list of values (its revisions, oldest
    first; ``RETRACT`` for a retraction). Each field's cursor is on its last revision
    unless ``cursors`` says otherwise. Values are stored raw, with the write-time error
    the field's validator gives. Other keyword arguments set ``Instance`` attributes
    (``status``, ``open_step_override``, ``occurrences``...).
    """
    prov = Provenance("tests", "agent", "2026-01-01T00:00:00.000Z")
    entries: dict[str, FieldLog] = {}
    seq = 0
    for field_id, given in (answers or {}).items():
        revisions = given if isinstance(given, list) else [given]
        field = form.field_by_id.get(field_id)
        logged = []
        for value in revisions:
            seq += 1
            if value is RETRACT:
                logged.append(Entry(seq, None, prov, retracted=True))
            else:
                error = field.validator.validate(value).error if field is not None else None
                logged.append(Entry(seq, value, prov, error=error))
        cursor = (cursors or {}).get(field_id, len(logged) - 1)
        entries[field_id] = FieldLog(tuple(logged), cursor)
    attrs.setdefault("id", "form_test")
    attrs.setdefault("def_id", form.id)
    attrs.setdefault("def_version", form.version)
    attrs.setdefault("subject", "s1")
    return Instance(entries=entries, revision_seq=seq, **attrs)


# --------------------------------------------------------------------------- pi-intake
# The form of the did_you_mean table (test_aliases.py) and the first tier-0 rendering (test_tier0.py).


def pi_intake():
    return (
        define_form(
            "pi-intake",
            version=1,
            name="Personal injury intake",
            description="Claimant and incident details.",
            conduct="Conversational, one or two questions at a time.",
        )
        .step("claimant", title="Claimant", preview="name, email, phone")
        .field("fullName", Annotated[str, Field(min_length=2)], label="Full name", ask="Their full legal name.")
        .field("email", EmailStr, label="Email")
        .field("phone", str, label="Phone")
        .step("incident", title="Incident", preview="date, type, what happened")
        .field("incidentType", Literal["vehicle", "premises", "medical"], label="Type of incident")
        .field("incidentDate", str, label="Date of incident")
        .field(
            "vehicleCount",
            Annotated[int, Field(ge=1)],
            label="Vehicles involved",
            when=lambda v, s: v["incidentType"] == "vehicle",
        )
        .field("treated", bool, label="Sought treatment")
        .build()
    )


# --------------------------------------------------------------------------- basic
# Small two-step form with one of everything the views and log tests need.


def basic(version: int = 1):
    return (
        define_form("basic", version=version, name="Basic form", description="Two small steps.")
        .step("one", title="One", preview="name, age")
        .field(
            "name", Annotated[str, Field(min_length=2)], label="Name", ask="Their name.", hint="At least two letters."
        )
        .field("age", Annotated[int, Field(ge=0)], label="Age")
        .field("nick", str | None, label="Nickname")
        .step("two", title="Two", ask="Ask about their preferences.")
        .field("colour", Literal["red", "green"], label="Colour")
        .field("agree", bool, label="Agree")
        .build()
    )


# --------------------------------------------------------------------------- trio
# Three plain text fields for the bare undo/redo sequences (docs/engine.md, 'The answer log').


def trio():
    return (
        define_form("trio", version=1, name="Trio")
        .step("s", title="S")
        .field("a", str, label="A")
        .field("b", str, label="B")
        .field("c", str, label="C")
        .field("n", int | None, label="N")
        .build()
    )


# --------------------------------------------------------------------------- chain
# The multi-pass example and the negation-gate hazard (docs/engine.md, 'Liveness and applicability').


def chain(order: tuple[str, ...] = ("a", "b", "c", "d")):
    """a; b when a=="yes"; c when b=="yes"; d (optional) when not c. ``order`` permutes declaration."""
    specs: dict[str, tuple[Any, Callable | None]] = {
        "a": (str, None),
        "b": (str, lambda v, s: v["a"] == "yes"),
        "c": (str, lambda v, s: v["b"] == "yes"),
        "d": (str | None, lambda v, s: not v["c"]),
    }
    builder = define_form("chain", version=1, name="Chain").step("main", title="Main")
    for fid in order:
        schema, gate = specs[fid]
        builder = builder.field(fid, schema, label=fid.upper(), when=gate)
    return builder.build()


# --------------------------------------------------------------------------- gate defects


def throwing_gate():
    """Field y's gate raises once x is "boom": reads tolerate it, writes raise FormDefinitionError."""

    def boom(v, s):
        if v["x"] == "boom":
            raise RuntimeError("kaboom")
        return True

    return (
        define_form("throwing-gate", version=1, name="Throwing gate")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y", when=boom)
        .build()
    )


def reentrant_gate():
    """Field y's gate asks for its own step's completion: it gets the optimistic fallback."""
    return (
        define_form("reentrant", version=1, name="Re-entrant gate")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y", when=lambda v, s: s.step_complete("s"))
        .step("t", title="T")
        .field("z", str, label="Z")
        .build()
    )


def undeclared_gate():
    """Field y's gate reads an id the form does not declare: a gate defect."""
    return (
        define_form("undeclared-gate", version=1, name="Undeclared gate")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y", when=lambda v, s: v["nope"] == 1)
        .build()
    )


# --------------------------------------------------------------------------- optionality


def optionality():
    return (
        define_form("optionality", version=1, name="Optionality")
        .step("s", title="S")
        .field("req_int", Annotated[int, Field(ge=1)], label="Required int")
        .field("opt_int", Annotated[int, Field(ge=1)] | None, label="Optional int")
        .field("opt_text", str | None, label="Optional text")
        .field("opt_bool", bool | None, label="Optional bool")
        .step("all-optional", title="All optional")
        .field("maybe", str | None, label="Maybe")
        .step("empty-step", title="Empty step")
        .build()
    )


# --------------------------------------------------------------------------- validation


def validation():
    return (
        define_form("validation", version=1, name="Validation")
        .step("s", title="S")
        .field("count", int, label="Count")
        .field("ratio", float, label="Ratio")
        .field("flag", bool, label="Flag")
        .field("kind", Literal["vehicle", "premises"], label="Kind")
        .field("mail", EmailStr, label="Mail")
        .field(
            "code", Annotated[str, Field(min_length=2)], label="Code", ask="A short code.", hint="Two letters at least."
        )
        .field("opt_count", int | None, label="Optional count")
        .field("exact", Literal[5], label="Exact five")
        .field("address", dict[str, str] | None, label="Address")
        .build()
    )


# --------------------------------------------------------------------------- tier 0 renderings


def rv():
    """Tier 0 on a revisit: a checkpoint sends the talk back to the finished step 1."""
    return (
        define_form("rv", version=1, name="Revisit", conduct="C.")
        .step("claimant", title="Claimant")
        .field("name", str, label="Name")
        .field("nick", str | None, label="Nick")
        .step("details", title="Details")
        .field("detail", str, label="Detail")
        .step("signoff", title="Sign-off", preview="sig")
        .field("sig", str, label="Signature")
        .checkpoint("back", when=lambda v, s: v["detail"] == "changed", run=lambda ctx: Jump("claimant"))
        .build()
    )


def failing_fill():
    """Tier 0 with an open failure: x's on_fill fails with "boom"."""

    def on_x(ctx):
        if ctx.values.get("x") == "bad":
            return Fail("boom")
        return None

    return (
        define_form("f", version=1, name="F")
        .step("a", title="A")
        .field("x", str, label="X", on_fill=on_x)
        .field("y", str, label="Y")
        .build()
    )


def blk():
    """Tier 0 while awaiting: a blocking checkpoint with no run waits for the host."""
    return (
        define_form("blk", version=1, name="Blocking")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y")
        .checkpoint("cp", when=lambda v, s: v["x"] == "hit", blocking=True, wait_message="Hold on.")
        .build()
    )


def opt():
    """Tier 0 with a gated-off step: step 1 all optional, step 3 gated by q=="go", step 4 has a preview."""
    return (
        define_form("opt", version=1, name="Optional and gated")
        .step("a", title="A")
        .field("p", str | None, label="P")
        .step("b", title="B")
        .field("q", str, label="Q")
        .step("c", title="C", when=lambda v, s: v["q"] == "go")
        .field("r", str, label="R")
        .step("d", title="D", preview="pd")
        .field("t", str, label="T")
        .build()
    )


def gated_steps():
    """Every incomplete step is gated off: the open step falls back to the first incomplete one."""
    return (
        define_form("gated-steps", version=1, name="Gated steps")
        .step("one", title="One", when=lambda v, s: v["k"] == "open")
        .field("x", str, label="X")
        .step("two", title="Two", when=lambda v, s: v["k"] == "open")
        .field("k", str, label="K")
        .build()
    )


ALL_FORMS: dict[str, Callable[[], Any]] = {
    "pi-intake": pi_intake,
    "basic": basic,
    "trio": trio,
    "chain": chain,
    "throwing-gate": throwing_gate,
    "reentrant": reentrant_gate,
    "undeclared-gate": undeclared_gate,
    "optionality": optionality,
    "validation": validation,
    "rv": rv,
    "f": failing_fill,
    "blk": blk,
    "opt": opt,
    "gated-steps": gated_steps,
}


# =========================================================================== engine tests part B
# Forms for the commit cycle, hooks, checkpoints, lifecycle, drift and recovery tests.
# Their executors report to a HookLog, so a test can see which hooks ran, in what order,
# under which idempotency keys, and make any hook answer with the effects it needs.

from formctl import Patch  # noqa: E402


class HookLog:
    """Records every executor run and answers with the behaviour set for that hook id.

    ``behaviours`` maps a hook id (``field:x``, ``step:s``, ``checkpoint:c``, ``form``) to
    an effect (returned as is) or to a function of the context (its result is returned,
    so it may also be a coroutine function). Behaviours may be changed between writes.
    """

    def __init__(self, behaviours: dict[str, Any] | None = None) -> None:
        self.behaviours: dict[str, Any] = dict(behaviours or {})
        self.contexts: list[Any] = []

    def hook(self, hook_id: str) -> Callable[[Any], Any]:
        def run(ctx):
            self.contexts.append(ctx)
            behaviour = self.behaviours.get(hook_id)
            if callable(behaviour):
                return behaviour(ctx)
            return behaviour

        return run

    @property
    def keys(self) -> list[str]:
        """The idempotency keys of every run, without the instance id: ``["field:x:1", "form:1"]``."""
        return [ctx.idempotency_key.split(":", 1)[1] for ctx in self.contexts]

    @property
    def hook_ids(self) -> list[str]:
        return [ctx.hook_id for ctx in self.contexts]

    def clear(self) -> None:
        self.contexts.clear()


def register(registry, form):
    """Register an already-built form under its own id, replacing any registration (and cached compile)."""
    registry.register(form.id, name=form.name, description=form.description, load=lambda: form)
    return form


def lab(log: HookLog | None = None):
    """A hook on everything. Required: trigger (step one) and extra (step two, 2+ chars).

    ``trigger == "watch"`` activates checkpoints watch and also (non-blocking).
    """
    log = log or HookLog()
    return (
        define_form("lab", version=1, name="Hook lab", description="Every kind of hook, reporting to a log.")
        .step("one", title="One", on_complete=log.hook("step:one"))
        .field("trigger", str, label="Trigger", on_fill=log.hook("field:trigger"))
        .field("derived", str | None, label="Derived value", on_fill=log.hook("field:derived"))
        .field("amount", int | None, label="Amount", on_fill=log.hook("field:amount"))
        .step("two", title="Follow-up", on_complete=log.hook("step:two"))
        .field("extra", Annotated[str, Field(min_length=2)], label="Extra", on_fill=log.hook("field:extra"))
        .field("auto", str | None, label="Auto")
        .checkpoint("watch", when=lambda v, s: v["trigger"] == "watch", run=log.hook("checkpoint:watch"))
        .checkpoint("also", when=lambda v, s: v["trigger"] == "watch", run=log.hook("checkpoint:also"))
        .on_complete(log.hook("form"))
        .build()
    )


def occurrence_seq(log: HookLog | None = None):
    """The occurrence sequence of a checkpoint: cp when x=="hit", and a form on_complete."""
    log = log or HookLog()
    return (
        define_form("seq", version=1, name="Occurrence sequence")
        .step("a", title="A")
        .field("x", str, label="X")
        .checkpoint("cp", when=lambda v, s: v["x"] == "hit", run=log.hook("checkpoint:cp"))
        .on_complete(log.hook("form"))
        .build()
    )


def cap_lab(log: HookLog | None = None, *, with_run: bool = True, wait_for_host: bool = False, blocking: bool = True):
    """A claim whose total over 100 hits the blocking checkpoint "cap".

    ``with_run=False`` gives a checkpoint with no run (it waits for the host);
    ``wait_for_host=True`` makes a run that returns None wait too. Required: total, sign.
    """
    log = log or HookLog()
    return (
        define_form("cap-lab", version=1, name="Capped claim")
        .step("claim", title="Claim")
        .field("total", int, label="Total", on_fill=log.hook("field:total"))
        .field("note", str | None, label="Note", on_fill=log.hook("field:note"))
        .step("signoff", title="Sign-off")
        .field("sign", str, label="Signature", on_fill=log.hook("field:sign"))
        .checkpoint(
            "cap",
            when=lambda v, s: (v["total"] or 0) > 100,
            blocking=blocking,
            wait_message="Checking with Finance.",
            wait_for_host=wait_for_host,
            run=log.hook("checkpoint:cap") if with_run else None,
        )
        .checkpoint(
            "second", when=lambda v, s: (v["total"] or 0) > 100, blocking=blocking, run=log.hook("checkpoint:second")
        )
        .on_complete(log.hook("form"))
        .build()
    )


def relay(log: HookLog | None = None, length: int = 12):
    """r0 … r«length-1»: each field's on_fill patches the next one, so one fill starts a chain of patch rounds."""
    log = log or HookLog()
    builder = define_form("relay", version=1, name="Relay").step("s", title="S")
    for i in range(length):
        hook = log.hook(f"field:r{i}")

        def on_fill(ctx, i=i, hook=hook):
            hook(ctx)
            return Patch({f"r{i + 1}": f"from r{i}"}) if i + 1 < length else None

        builder = builder.field(f"r{i}", str | None, label=f"Relay {i}", on_fill=on_fill)
    return builder.build()


def async_hooks(log: HookLog | None = None):
    """Executors written as ``async def``: x's on_fill patches y; z's on_fill raises after awaiting."""
    import asyncio

    log = log or HookLog()

    async def on_x(ctx):
        log.contexts.append(ctx)
        await asyncio.sleep(0)
        return Patch({"y": f"derived from {ctx.values['x']}"})

    async def on_z(ctx):
        log.contexts.append(ctx)
        await asyncio.sleep(0)
        raise RuntimeError("async boom")

    return (
        define_form("async-hooks", version=1, name="Async hooks")
        .step("s", title="S")
        .field("x", str, label="X", on_fill=on_x)
        .field("y", str | None, label="Y")
        .field("z", str | None, label="Z", on_fill=on_z)
        .build()
    )


def drift(version: int = 1, migrate=None, log: HookLog | None = None, *, with_e: bool = False):
    """A form whose definition changes under its instances.

    Version 1: a, b required; c optional. ``with_e=True`` adds a required field e with an
    on_fill hook (as a later version might). ``migrate`` is passed through.
    """
    log = log or HookLog()
    builder = (
        define_form("drift", version=version, name="Drifting form", migrate=migrate)
        .step("s", title="S")
        .field("a", str, label="A", on_fill=log.hook("field:a"))
        .field("b", str, label="B", on_fill=log.hook("field:b"))
        .field("c", str | None, label="C", on_fill=log.hook("field:c"))
    )
    if with_e:
        builder = builder.field("e", str, label="E", on_fill=log.hook("field:e"))
    return builder.on_complete(log.hook("form")).build()


ALL_FORMS.update(
    {
        "lab": lab,
        "seq": occurrence_seq,
        "cap-lab": cap_lab,
        "relay": relay,
        "async-hooks": async_hooks,
        "drift": drift,
    }
)


def reviewed(log: HookLog | None = None):
    """A form read back and sent (``review=True``): a name (required) and a note (optional) in one
    step; the dates of a trip in the next, whose on_complete fails a return before the departure."""
    from datetime import date

    log = log or HookLog()

    def dates_in_order(ctx):
        log.hook("step:trip")(ctx)
        if ctx.values["back"] < ctx.values["leave"]:
            return Fail("The return date is before the departure date.")
        return None

    return (
        define_form("reviewed", version=1, name="Reviewed form", review=True)
        .step("who", title="Who")
        .field("name", str, label="Name")
        .field("note", str | None, label="Note")
        .step("trip", title="Trip", on_complete=dates_in_order)
        .field("leave", date, label="Leave")
        .field("back", date, label="Back")
        .on_complete(log.hook("form"))
        .build()
    )


ALL_FORMS["reviewed"] = reviewed


def secret():
    """A sensitive PIN between two plain fields, and a checkpoint that jumps back (colour "again")."""
    return (
        define_form("secret", name="Secret")
        .step("who", title="Who")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
        .field("pin", Annotated[int, Field(ge=1000, le=9999)], label="PIN", sensitive=True)
        .field("colour", str, label="Colour")
        .checkpoint("again", when=lambda v, s: v["colour"] == "again", run=lambda ctx: Jump("who"))
        .build()
    )
