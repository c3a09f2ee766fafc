"""Python values from hosts and executors: dates, enums and models are taken and stored as JSON;
a value with no JSON form (or an integer too long to write as JSON) is refused and nothing is
stored.
"""

from __future__ import annotations

import datetime as _dt
import enum as _enum
import json as _json

from pydantic import BaseModel as _BaseModel

from formctl import FormRegistry, FormRunner, Patch, define_form


class _Colour(_enum.Enum):
    red = "red"
    blue = "blue"


class _Address(_BaseModel):
    street: str
    since: _dt.date


def _dated_form():
    return (
        define_form("dated", name="Dated")
        .step("s", title="S")
        .field(
            "day",
            _dt.date,
            label="Day",
            # an author derives a date from a parsed one: ctx.values holds Python dates
            on_fill=lambda ctx: Patch({"due": ctx.values["day"] + _dt.timedelta(days=30)}),
        )
        .field("due", _dt.date | None, label="Due")
        .field("at", _dt.datetime | None, label="At")
        .field("colour", _Colour | None, label="Colour")
        .field("address", _Address | None, label="Address")
        .field("later", _dt.date | None, label="Later", when=lambda v, s: v["colour"] == _Colour.blue)
        .build()
    )


def test_an_executor_may_patch_the_python_values_it_was_given(adapter):
    runner = FormRunner(
        adapter, registry=FormRegistry().register("dated", name="D", description="", load=_dated_form), subject="qa"
    )
    result = runner.start("dated", seed={"day": "2024-01-31"})
    _, instance, ev = runner.evaluation()
    assert ev.field_status("due") == "filled", ev.errors
    assert ev.values["due"] == _dt.date(2024, 3, 1)
    assert instance.entries["due"].revisions[-1].value == "2024-03-01"  # stored as JSON spells it
    assert result.failures == []


def test_a_host_may_fill_dates_enums_and_models_from_python(adapter):
    runner = FormRunner(
        adapter, registry=FormRegistry().register("dated", name="D", description="", load=_dated_form), subject="qa"
    )
    runner.start("dated")
    when = _dt.datetime(2024, 1, 31, 10, 0, tzinfo=_dt.UTC)
    result = runner.fill(
        {
            "day": _dt.date(2024, 5, 1),
            "at": when,
            "colour": _Colour.red,
            "address": _Address(street="1 High St", since=_dt.date(2020, 1, 1)),
            "later": _dt.date(2025, 1, 1),
        }
    )
    assert result.rejected == []
    assert result.captured == ["day", "at", "colour", "address"] and result.held == ["later"]
    for view in (result.to_dict(), runner.inspect().to_dict()):
        assert _json.loads(_json.dumps(view)) == view  # held (raw) values are JSON too
    _, instance, ev = runner.evaluation()
    assert ev.values["at"] == when and ev.values["colour"] is _Colour.red
    assert ev.values["address"] == _Address(street="1 High St", since=_dt.date(2020, 1, 1))
    assert instance.entries["later"].revisions[-1].value == "2025-01-01"


def test_a_value_with_no_json_form_is_rejected_and_nothing_is_stored(adapter):
    runner = FormRunner(
        adapter, registry=FormRegistry().register("dated", name="D", description="", load=_dated_form), subject="qa"
    )
    runner.start("dated")
    result = runner.fill({"day": object(), "at": float("nan"), "Colour": "red"})
    assert [r.field for r in result.rejected] == ["day", "at"]
    assert all("not JSON data" in r.message and r.hint for r in result.rejected)
    assert result.captured == ["colour"]
    _, instance, _ = runner.evaluation()
    assert "day" not in instance.entries and "at" not in instance.entries
    assert _json.loads(_json.dumps(result.to_dict())) == result.to_dict()


def test_a_patch_value_with_no_json_form_fails_its_hook(adapter):
    def form():
        return (
            define_form("badpatch", name="Bad patch")
            .step("s", title="S")
            .field("a", str, label="A", on_fill=lambda ctx: Patch({"b": object()}))
            .field("b", str | None, label="B")
            .build()
        )

    runner = FormRunner(
        adapter, registry=FormRegistry().register("badpatch", name="B", description="", load=form), subject="qa"
    )
    result = runner.start("badpatch", seed={"a": "x"})
    assert [f.hook_id for f in result.failures] == ["field:a"]
    _, instance, _ = runner.evaluation()
    (record,) = [r for r in instance.dispatches.values() if r.hook_id == "field:a"]
    assert "not JSON data" in record.detail and "not JSON data" not in result.failures[0].message
    assert "b" not in instance.entries


def test_an_integer_too_long_to_write_as_json_is_refused_not_stored(adapter):
    from conftest import make_registry

    runner = FormRunner(adapter, registry=make_registry(), subject="qa")
    runner.start("pi-intake")
    result = runner.fill({"vehicleCount": 10**5000, "phone": "0123"})  # past Python's 4300-digit str limit
    assert [r.field for r in result.rejected] == ["vehicleCount"] and "not JSON data" in result.rejected[0].message
    assert result.captured == ["phone"]
    assert "vehicleCount" not in runner.open_instance().entries
