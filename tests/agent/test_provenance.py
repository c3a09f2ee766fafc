"""Provenance on every revision: recorded by the runner, kept by the stores, shown by why/history/export."""

from __future__ import annotations

import json
from datetime import date
from typing import Annotated

import pytest
from pydantic import EmailStr, Field

from clitools import invoke
from formctl import FormRegistry, FormRunner, JsonFileAdapter, MemoryAdapter, Patch, define_form
from formctl.errors import FormDefinitionError
from formctl.forms.instance import Entry, FieldLog, Instance, Provenance, instance_from_json, instance_to_json
from formctl.forms.provenance import ModelWrite
from formctl.forms.quotes import PersonMessage

AT = "2026-11-30T23:50:00Z"


def _double(ctx):
    n = ctx.values.get("nights")
    return Patch({"night_cost": n * 100}) if n else None


def person_form():
    return (
        define_form("trip", name="Trip")
        .step("who", title="Who")
        .field("email", EmailStr, label="Email", source="person")
        .field("leave", date, label="Departure date", source="person")
        .field("nights", Annotated[int, Field(ge=1)] | None, label="Nights", on_fill=_double)
        .field("night_cost", float | None, label="Night cost")
        .field("notes", str | None, label="Notes")
        .field("approver", str | None, label="Approver", source="host")
        .build()
    )


def make_runner(adapter, **kw) -> FormRunner:
    registry = FormRegistry()
    registry.register("trip", name="Trip", description="A trip.", load=person_form)
    return FormRunner(adapter, registry=registry, subject="dana", **kw)


def said(*texts: str) -> list[PersonMessage]:
    return [PersonMessage(t, i + 1, AT) for i, t in enumerate(texts)]


def revisions(runner: FormRunner, field: str) -> list[dict]:
    return [r.to_dict() for r in runner.history(field).revisions]


@pytest.fixture(params=["memory", "jsonfile"])
def store_adapter(request, tmp_path):
    if request.param == "memory":
        return MemoryAdapter()
    return JsonFileAdapter(str(tmp_path / "store"))


def test_source_must_be_person_host_or_none():
    with pytest.raises(FormDefinitionError, match='source must be "person", "host" or None'):
        define_form("x", name="X").step("s", title="S").field("a", str, label="A", source="model")


def test_a_model_value_in_the_persons_words_is_stored_as_said_with_its_quote_and_turn(store_adapter):
    runner = make_runner(store_adapter, actor="agent", source="chat")
    runner.start("trip")
    words = said("hi", "it's Dana.Reeve@Example.com, and I leave on 8 December")
    result = runner.fill(
        {"email": "dana.reeve@example.com", "leave": "2026-12-08", "notes": "window seat"},
        write=ModelWrite({"email": "dana.reeve@example.com", "leave": "on 8 December"}, words),
    )
    assert set(result.captured) == {"email", "leave", "notes"} and not result.unconfirmed
    [email] = revisions(runner, "email")
    assert email["provenance"] == {
        "kind": "said",
        "quote": "Dana.Reeve@Example.com",
        "turn": 2,
        "message": "it's Dana.Reeve@Example.com, and I leave on 8 December",
    }
    assert revisions(runner, "leave")[0]["provenance"]["quote"] == "on 8 December"
    assert revisions(runner, "notes")[0]["provenance"] == {"kind": "assumed"}


def test_a_person_field_the_words_do_not_hold_is_not_stored_and_comes_back_unconfirmed(store_adapter):
    runner = make_runner(store_adapter, actor="agent", source="chat")
    runner.start("trip")
    words = said("my email? use the usual one", "I leave next Tuesday")
    result = runner.fill(
        {"email": "dana@example.com", "leave": "2026-12-08", "notes": "hello"},
        write=ModelWrite({"leave": "next Tuesday"}, words),
    )
    assert result.captured == ["notes"]
    kinds = {u.field: u.check.kind for u in result.unconfirmed}
    assert kinds == {"email": "assumed", "leave": "reading"}
    assert runner.history("email").revisions == () and runner.history("leave").revisions == ()
    shown = result.to_dict()
    assert shown["not_stored"] == [
        {"field": "email", "kind": "assumed"},
        {"field": "leave", "kind": "reading", "quote": "next Tuesday", "reads_as": "2026-12-08"},
    ]
    assert "Ask the person" in shown["not_stored_note"]


def test_a_quote_from_another_message_kind_is_not_trusted_for_a_value_it_does_not_hold(store_adapter):
    runner = make_runner(store_adapter, actor="agent", source="chat")
    runner.start("trip")
    words = said("my old address was jo@example.com")
    result = runner.fill({"email": "joanna@example.com"}, write=ModelWrite({"email": "jo@example.com"}, words))
    assert [u.check.kind for u in result.unconfirmed] == ["reading"]
    assert not result.captured


def test_a_host_only_field_refuses_a_models_value_and_takes_a_hosts(store_adapter):
    runner = make_runner(store_adapter, actor="agent", source="chat")
    runner.start("trip")
    result = runner.fill({"approver": "Sam"}, write=ModelWrite({}, said("Sam approves it")))
    assert [r.field for r in result.rejected] == ["approver"]
    assert "filled by the host" in result.rejected[0].message
    assert runner.history("approver").revisions == ()
    host = make_runner(store_adapter, actor="finance", source="cli")
    host.fill({"approver": "Sam"})
    assert revisions(host, "approver")[0]["provenance"] == {"kind": "host"}


def test_each_kind_of_write_records_its_own_kind(store_adapter):
    runner = make_runner(store_adapter)
    runner.start("trip", seed={"notes": "from the booking"})
    runner.fill({"nights": 2})
    runner.fill({"email": "a@b.co"}, how={"email": {"kind": "confirmed", "quote": "yes", "turn": 4, "message": "yes"}})
    assert revisions(runner, "notes")[0]["provenance"] == {"kind": "seed", "moment": "start"}
    assert revisions(runner, "nights")[0]["provenance"] == {"kind": "host"}
    assert revisions(runner, "night_cost")[0]["provenance"] == {"kind": "executor", "hook": "field:nights"}
    assert revisions(runner, "email")[0]["provenance"]["kind"] == "confirmed"


def test_provenance_survives_the_json_store(tmp_path):
    store = str(tmp_path / "store")
    runner = make_runner(JsonFileAdapter(store), actor="agent", source="chat")
    iid = runner.start("trip").view.instance_id
    runner.fill({"email": "jo@example.com"}, write=ModelWrite({"email": "jo@example.com"}, said("jo@example.com")))
    again = make_runner(JsonFileAdapter(store))
    [row] = again.history("email", instance_id=iid).revisions
    assert (row.kind, row.quote, row.turn) == ("said", "jo@example.com", 1)


def test_an_instance_written_before_kinds_were_recorded_still_reads():
    old = {
        "id": "form_old",
        "def_id": "trip",
        "def_version": 1,
        "subject": "s",
        "status": "active",
        "version": 3,
        "revision_seq": 3,
        "prov": [["cli", "host"], ["chat", "agent", "start"], ["chat", "agent"]],
        "entries": {
            "email": {"c": 0, "r": [[1, AT, 0, "a@b.co"]]},
            "notes": {"c": 1, "r": [[2, AT, 1, "x"], [3, AT, 2, "y"]]},
        },
    }
    instance = instance_from_json(old)
    kinds = [e.provenance.kind for e in instance.entries["notes"].revisions]
    assert kinds == [None, None]
    from formctl.forms.history import field_history

    assert [r.kind for r in field_history(instance, "notes", "Notes").revisions] == ["seed", "assumed"]
    assert field_history(instance, "email", "Email").revisions[0].kind == "host"
    assert instance_to_json(instance)["prov"] == old["prov"]  # unchanged when written back


def test_the_provenance_table_interns_identical_rows():
    p = Provenance("chat", "agent", AT, None, "said", "yes", 2, "yes")
    instance = Instance(
        id="i",
        def_id="d",
        def_version=1,
        subject="s",
        entries={
            "a": FieldLog(
                (Entry(1, True, p), Entry(2, False, Provenance("chat", "agent", AT, None, "said", "yes", 2, "yes"))), 1
            )
        },
    )
    encoded = instance_to_json(instance)
    assert len(encoded["prov"]) == 1
    assert instance_from_json(json.loads(json.dumps(encoded))) == instance


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def claim(tmp_path):
    from clitools import FORMS

    store = str(tmp_path / "store")
    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    agent = FormRunner(JsonFileAdapter(store), registry=registry, subject="dana", actor="agent", source="chat")
    iid = agent.start("travel-claim").view.instance_id
    words = [PersonMessage("Dana Reeve here, my work email is dana.reeve@example.org", 1, AT)]
    agent.fill(
        {"full_name": "Dana Reeve", "email": "dana.reeve@example.org"},
        write=ModelWrite({"full_name": "Dana Reeve", "email": "my work email is dana.reeve@example.org"}, words),
    )
    host = FormRunner(JsonFileAdapter(store), registry=registry, subject="dana", actor="host", source="cli")
    host.revise("full_name", "Dana J. Reeve", reason="as on the payslip")
    return store, iid


def test_why_shows_the_value_the_persons_words_highlighted_and_who_corrected_it(claim):
    store, iid = claim
    out = invoke("why", iid, "email", "--store", store)
    assert out.exit_code == 0, out.output
    assert "Work email (email): dana.reeve@example.org" in out.output
    assert "said by the person, turn 1" in out.output
    assert "Dana Reeve here, «my work email is dana.reeve@example.org»" in out.output
    out = invoke("why", iid, "full_name", "--store", store)
    assert "Full name (full_name): Dana J. Reeve" in out.output
    assert "written by the host" in out.output
    assert "1. Dana Reeve · said, turn 1 · given by agent (chat)" in out.output
    assert "2. Dana J. Reeve · host · corrected by host (cli)" in out.output
    assert "revision: as on the payslip" in out.output


def test_why_json_and_an_unknown_field(claim):
    store, iid = claim
    data = json.loads(invoke("why", iid, "email", "--store", store, "--json").output)
    assert data["value"] == "dana.reeve@example.org"
    assert data["provenance"]["kind"] == "said" and data["provenance"]["turn"] == 1
    out = invoke("why", iid, "emial", "--store", store)
    assert out.exit_code == 1 and 'No field "emial"' in out.output


def test_history_json_and_export_provenance_carry_the_same_data(claim):
    store, iid = claim
    history = json.loads(invoke("history", iid, "email", "--store", store, "--json").output)
    assert history["revisions"][0]["provenance"]["quote"] == "my work email is dana.reeve@example.org"
    exported = json.loads(invoke("export", iid, "--provenance", "--json", "--store", store).output)
    assert exported["provenance"]["email"]["kind"] == "said"
    assert exported["provenance"]["full_name"]["kind"] == "host"
    assert "provenance" not in json.loads(invoke("export", iid, "--json", "--store", store).output)
    table = invoke("history", iid, "email", "--store", store).output
    assert "said, turn 1" in table


def test_the_same_words_for_the_same_value_of_another_field_are_not_said(store_adapter):
    runner = make_runner(store_adapter, actor="agent", source="chat")
    runner.start("trip")
    words = said("2 nights")
    result = runner.fill({"nights": 2}, write=ModelWrite({"nights": "2 nights"}, words))
    assert revisions(runner, "nights")[0]["provenance"]["kind"] == "said" and result.captured == ["nights"]
    # "2 nights" is the answer to nights: the same 2 for the night cost, from the same words, is a reading
    runner.fill({"night_cost": 2.0}, write=ModelWrite({"night_cost": "2 nights"}, words))
    assert revisions(runner, "night_cost")[-1]["provenance"]["kind"] == "reading"


def test_a_value_the_person_already_gave_keeps_their_words_when_the_model_sends_it_again(store_adapter):
    runner = make_runner(store_adapter, actor="agent", source="chat")
    runner.start("trip")
    words = said("jo@example.com")
    runner.fill({"email": "jo@example.com"}, write=ModelWrite({"email": "jo@example.com"}, words))
    again = runner.fill({"email": "jo@example.com"}, write=ModelWrite({}, [*words, *said("x", "same")[1:]]))
    assert not again.unconfirmed
    assert [r["provenance"]["quote"] for r in revisions(runner, "email")] == ["jo@example.com", "jo@example.com"]


def test_the_chats_notices_are_not_the_persons_words_but_the_line_inside_one_is():
    from formctl.agent.notices import notice_message
    from formctl.agent.person import Person

    person = Person(not_theirs=frozenset({"Hello."}))
    person.said("Hello.")
    person.said(notice_message("you undid Work email (now jo@example.com)"))
    person.said(notice_message("a host changed Total", words="it was 310"))
    person.said("my email is jo@example.com")
    assert [(m.text, m.turn) for m in person.words()] == [("it was 310", 1), ("my email is jo@example.com", 2)]
