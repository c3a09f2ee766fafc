"""Compile rules (docs/engine.md, 'Compile checks'): the index a definition compiles to,
and every check with its message."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

import example_forms
from formctl import FormDefinitionError, FormRegistry, define_form
from formctl.forms.compile import compile_form


def _raises(builder) -> FormDefinitionError:
    with pytest.raises(FormDefinitionError) as caught:
        builder.build()
    assert caught.value.code == "form_definition_error"
    return caught.value


# --------------------------------------------------------------------------- what compiling produces


def test_fields_are_flattened_in_declaration_order_with_their_step():
    form = example_forms.pi_intake()
    assert [f.id for f in form.fields] == [
        "fullName",
        "email",
        "phone",
        "incidentType",
        "incidentDate",
        "vehicleCount",
        "treated",
    ]
    assert [f.order for f in form.fields] == list(range(7))
    assert [f.step_id for f in form.fields] == ["claimant"] * 3 + ["incident"] * 4


def test_steps_are_indexed_from_one_and_checkpoints_from_zero():
    form = (
        define_form("ix", name="Ix")
        .step("a", title="A")
        .field("x", str, label="X")
        .step("b", title="B")
        .field("y", str, label="Y")
        .checkpoint("c1", when=lambda v, s: True)
        .checkpoint("c2", when=lambda v, s: True)
        .build()
    )
    assert [(s.id, s.index, s.number) for s in form.steps] == [("a", 0, 1), ("b", 1, 2)]
    assert [(c.id, c.index) for c in form.checkpoints] == [("c1", 0), ("c2", 1)]
    assert form.step_by_id["b"].fields == [form.field_by_id["y"]]
    assert form.checkpoint_by_id["c2"].index == 1


def test_each_field_carries_its_type_string_requiredness_and_description():
    form = example_forms.basic()
    name = form.field_by_id["name"]
    assert name.type == "text (min 2 chars)"
    assert name.required is True
    assert name.description == "Their name. At least two letters."
    nick = form.field_by_id["nick"]
    assert nick.required is False
    assert nick.type == "text"
    assert nick.description is None


def test_description_is_the_hint_when_there_is_no_ask_and_empty_when_ask_is_empty():
    form = (
        define_form("d", name="D")
        .step("s", title="S")
        .field("a", str, label="A", hint="Only a hint.")
        .field("b", str, label="B", ask="", hint="Ignored hint.")
        .field("c", str, label="C", ask="Only an ask.")
        .build()
    )
    assert form.field_by_id["a"].description == "Only a hint."
    assert form.field_by_id["b"].description == ""
    assert form.field_by_id["c"].description == "Only an ask."


def test_a_step_with_no_fields_is_allowed():
    form = (
        define_form("e", name="E").step("intro", title="Intro").step("s", title="S").field("x", str, label="X").build()
    )
    assert form.step_by_id["intro"].fields == []
    assert form.step_by_id["s"].index == 1


def test_the_builder_keeps_declaration_order_and_on_complete_replaces():
    first, second = (lambda ctx: None), (lambda ctx: None)
    form = (
        define_form("o", name="O")
        .step("s", title="S")
        .field("z", str, label="Z")
        .field("a", str, label="A")
        .on_complete(first)
        .on_complete(second)
        .build()
    )
    assert [f.id for f in form.fields] == ["z", "a"]
    assert form.on_complete is second


def test_a_checkpoint_is_not_blocking_unless_declared():
    form = (
        define_form("cp", name="Cp")
        .step("s", title="S")
        .field("x", str, label="X")
        .checkpoint("c", when=lambda v, s: True, run=lambda ctx: None)
        .build()
    )
    assert form.checkpoint_by_id["c"].blocking is False


# --------------------------------------------------------------------------- the checks, in order


def test_a_form_without_an_id_is_rejected():
    error = _raises(define_form("", name="Nameless").step("s", title="S").field("x", str, label="X"))
    assert error.message == "A form definition needs an id."
    assert error.ids == []


def test_a_fractional_version_is_rejected():
    error = _raises(define_form("v", version=1.5, name="V").step("s", title="S").field("x", str, label="X"))
    assert error.message == 'Form "v" needs an integer version — instances pin it at start.'
    assert error.ids == []


def test_the_id_check_comes_before_the_version_check():
    error = _raises(define_form("", version=1.5, name="V").step("s", title="S").field("x", str, label="X"))
    assert error.message == "A form definition needs an id."


def test_duplicate_field_ids_across_steps_are_rejected_in_first_seen_order():
    builder = (
        define_form("dup", name="Dup")
        .step("a", title="A")
        .field("x", str, label="X")
        .field("y", str, label="Y")
        .step("b", title="B")
        .field("y", str, label="Why")
        .field("x", str, label="Ex")
        .field("y", str, label="Y2")
    )
    error = _raises(builder)
    assert error.message == (
        'Form "dup" declares duplicate field ids: y, x. Field ids are unique across the whole form, not per step.'
    )
    assert error.ids == ["y", "x"]


def test_duplicate_field_ids_within_one_step_are_rejected():
    error = _raises(
        define_form("dup", name="Dup").step("a", title="A").field("x", str, label="X").field("x", int, label="X2")
    )
    assert error.ids == ["x"]


def test_duplicate_step_ids_are_rejected():
    builder = (
        define_form("ds", name="Ds")
        .step("a", title="A")
        .field("x", str, label="X")
        .step("a", title="Again")
        .field("y", str, label="Y")
    )
    error = _raises(builder)
    assert error.message == 'Form "ds" declares duplicate step ids: a.'
    assert error.ids == ["a"]


def test_a_duplicate_step_is_skipped_whole_so_its_fields_are_not_checked():
    # The second "a" repeats field x, but it is skipped before its fields are looked at:
    # only the step duplicate is reported.
    builder = (
        define_form("ds", name="Ds")
        .step("a", title="A")
        .field("x", str, label="X")
        .step("a", title="Again")
        .field("x", str, label="X")
    )
    error = _raises(builder)
    assert error.message == 'Form "ds" declares duplicate step ids: a.'


def test_duplicate_fields_are_reported_before_duplicate_steps():
    builder = (
        define_form("both", name="Both")
        .step("a", title="A")
        .field("x", str, label="X")
        .field("x", str, label="X again")
        .step("a", title="A again")
        .field("y", str, label="Y")
    )
    error = _raises(builder)
    assert error.ids == ["x"]
    assert "duplicate field ids" in error.message


def test_the_verified_id_label_collision_reports_both_ambiguities():
    builder = (
        define_form("amb", name="Amb")
        .step("s", title="S")
        .field("email", str, label="Contact")
        .field("contact", str, label="Email")
    )
    error = _raises(builder)
    assert error.ids == [
        'email/contact both normalise to "contact"',
        'email/contact both normalise to "email"',
    ]
    assert error.message == (
        'Form "amb" has fields that can\'t be told apart once case and punctuation are ignored: '
        'email/contact both normalise to "contact"; email/contact both normalise to "email".'
    )


def test_ids_differing_only_in_case_or_punctuation_are_ambiguous():
    builder = (
        define_form("amb", name="Amb")
        .step("s", title="S")
        .field("full_name", str, label="Name")
        .field("fullName", str, label="Other")
    )
    error = _raises(builder)
    assert error.ids == ['full_name/fullName both normalise to "fullname"']


def test_a_field_whose_id_and_label_normalise_alike_is_not_ambiguous():
    form = define_form("ok", name="Ok").step("s", title="S").field("email", str, label="E-mail").build()
    assert form.resolve_field("E-MAIL") == "email"


def test_ambiguity_is_checked_before_duplicate_checkpoints():
    builder = (
        define_form("order", name="Order")
        .step("s", title="S")
        .field("a", str, label="Same")
        .field("b", str, label="same")
        .checkpoint("c", when=lambda v, s: True)
        .checkpoint("c", when=lambda v, s: True)
    )
    error = _raises(builder)
    assert error.ids == ['a/b both normalise to "same"']


def test_duplicate_checkpoint_ids_are_rejected():
    builder = (
        define_form("dc", name="Dc")
        .step("s", title="S")
        .field("x", str, label="X")
        .checkpoint("c", when=lambda v, s: True)
        .checkpoint("d", when=lambda v, s: True)
        .checkpoint("c", when=lambda v, s: False)
    )
    error = _raises(builder)
    assert error.message == 'Form "dc" declares duplicate checkpoint ids: c.'
    assert error.ids == ["c"]


def test_duplicate_checkpoints_are_reported_before_a_missing_field_list():
    builder = (
        define_form("dc", name="Dc")
        .step("s", title="S")
        .checkpoint("c", when=lambda v, s: True)
        .checkpoint("c", when=lambda v, s: True)
    )
    assert _raises(builder).ids == ["c"]


def test_a_form_with_no_fields_is_rejected():
    error = _raises(define_form("empty", name="Empty").step("s", title="S"))
    assert error.message == 'Form "empty" declares no fields.'
    assert error.ids == ["empty"]


def test_a_form_with_no_steps_is_rejected_as_having_no_fields():
    error = _raises(define_form("bare", name="Bare"))
    assert error.ids == ["bare"]


# --------------------------------------------------------------------------- formctl's own builder checks


def test_a_field_before_any_step_raises_at_the_builder():
    with pytest.raises(FormDefinitionError) as caught:
        define_form("early", name="Early").field("x", str, label="X")
    assert caught.value.ids == ["x"]
    assert "before any step" in caught.value.message


@pytest.mark.parametrize("label", ["", "   ", None])
def test_a_field_without_a_label_raises_at_the_builder(label):
    with pytest.raises(FormDefinitionError) as caught:
        define_form("nolabel", name="No label").step("s", title="S").field("x", str, label=label)
    assert caught.value.ids == ["x"]


def test_step_ids_and_titles_that_normalise_alike_are_a_definition_error():
    builder = (
        define_form("steps", name="Steps")
        .step("contact", title="Contact details")
        .field("x", str, label="X")
        .step("contact-details", title="More")
        .field("y", str, label="Y")
    )
    error = _raises(builder)
    assert error.ids == ['contact/contact-details both normalise to "contactdetails"']


def test_a_step_whose_id_and_title_normalise_alike_is_fine():
    form = define_form("st", name="St").step("sign-off", title="Sign off").field("x", str, label="X").build()
    assert form.resolve_step("SIGN OFF") == "sign-off"


def test_compile_form_accepts_the_builder_definition():
    builder = define_form("raw", name="Raw").step("s", title="S").field("x", Annotated[int, Field(ge=1)], label="X")
    form = compile_form(builder.definition)
    assert form.field_by_id["x"].type == "integer >= 1"


# --------------------------------------------------------------------------- registry-level check


def test_a_def_whose_id_differs_from_its_registration_fails_to_load():
    registry = FormRegistry().register("expected", name="E", load=example_forms.basic)
    with pytest.raises(Exception) as caught:
        registry.load("expected")
    assert str(caught.value) == 'Form registered as "expected" defines itself as "basic".'


def test_a_failed_load_is_not_cached():
    calls = []

    def load():
        calls.append(1)
        return example_forms.basic() if len(calls) > 1 else example_forms.trio()

    registry = FormRegistry().register("basic", name="B", load=load)
    with pytest.raises(FormDefinitionError):
        registry.load("basic")
    assert registry.load("basic").id == "basic"
    assert registry.load("basic") is registry.load("basic")
    assert len(calls) == 2


def test_listing_the_registry_loads_nothing():
    calls = []
    registry = FormRegistry().register("basic", name="Basic", description="B.", load=lambda: calls.append(1))
    assert registry.list() == [{"id": "basic", "name": "Basic", "description": "B."}]
    assert calls == []


def test_a_schema_whose_none_probe_raises_is_required():
    class Opaque:
        pass

    form = define_form("probe", name="Probe").step("s", title="S").field("x", Opaque, label="X").build()
    assert form.field_by_id["x"].required is True


def test_labels_that_normalise_to_nothing_are_not_indexed_and_never_collide():
    form = (
        define_form("blank-keys", name="Blank keys")
        .step("s", title="S")
        .field("q1", str, label="??")
        .field("q2", str, label="!!")
        .build()
    )
    assert form.resolve_field("??") is None
    assert form.resolve_field("Q1") == "q1"
