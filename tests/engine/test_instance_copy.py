"""Instance.copy: a snapshot that changing never reaches the original (docs/store.md, the store contract)."""

from __future__ import annotations

import pytest

from formctl.forms.instance import DispatchState, Entry, FieldLog, Instance, Provenance


def _instance() -> Instance:
    prov = Provenance("test", "tester", "2026-01-01T00:00:00Z")
    return Instance(
        id="i",
        def_id="f",
        def_version=2,
        subject="s",
        status="awaiting",
        entries={"a": FieldLog([Entry(1, "x", prov)], 0)},
        revision_seq=1,
        occurrences={"field:a": 1},
        dispatches={"i:field:a:1": DispatchState("field:a", "running", 1, "2026-01-01T00:00:00Z")},
        blocked_on="cp",
        open_step_override="s1",
        closed_reason="why",
        forced_complete=True,
        version=7,
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-02T00:00:00Z",
        completed_at="2026-01-03T00:00:00Z",
    )


def test_a_copy_holds_every_slot_of_the_original():
    original = _instance()
    clone = original.copy()
    for name in Instance.__slots__:
        assert getattr(clone, name) == getattr(original, name), name
    assert clone == original


def test_changing_a_copy_never_touches_the_original():
    original = _instance()
    clone = original.copy()
    clone.entries["b"] = FieldLog([], -1)
    clone.occurrences["field:a"] = 2
    clone.put_dispatches({"i:field:a:1": DispatchState("field:a", "ok", 1, "2026-01-01T00:00:01Z")})
    clone.status = "active"
    assert set(original.entries) == {"a"} and original.occurrences == {"field:a": 1}
    assert original.dispatches["i:field:a:1"].status == "running" and clone.dispatches["i:field:a:1"].status == "ok"
    assert clone.runs().running == () and original.runs().running == ("i:field:a:1",)


def test_the_dispatch_map_is_read_only_and_a_map_given_is_not_shared():
    given = {"i:field:a:1": DispatchState("field:a", "ok", 1, "2026-01-01T00:00:00Z")}
    instance = Instance(id="i", def_id="f", def_version=1, subject="s", dispatches=given)
    with pytest.raises(TypeError):
        instance.dispatches["x"] = given["i:field:a:1"]  # type: ignore[index]
    given["later"] = given["i:field:a:1"]  # the caller's own dict stays theirs
    assert list(instance.dispatches) == ["i:field:a:1"]
