"""The reads the layers above ask the runner for, so that none of them reaches its store."""

from __future__ import annotations

from conftest import make_registry
from formctl import FormRunner, MemoryAdapter


def test_an_outline_without_an_instance_creates_nothing_and_shows_every_step():
    adapter = MemoryAdapter()
    runner = FormRunner(adapter, registry=make_registry(), subject="dana")
    started = FormRunner(MemoryAdapter(), registry=make_registry(), subject="dana")
    expected = started.inspect("outline", instance_id=started.start("pi-intake").view.instance_id).to_dict()

    outline = runner.outline("pi-intake").to_dict()

    assert adapter.find_instances() == []
    assert [s["id"] for s in outline["steps"]] == [s["id"] for s in expected["steps"]]
    assert [f["id"] for f in outline["fields"]] == [f["id"] for f in expected["fields"]]
    assert outline["instance_id"] == ""


def test_items_served_are_empty_lists_where_no_program_is_kept():
    runner = FormRunner(MemoryAdapter(), registry=make_registry(), subject="dana")
    runner.start("pi-intake")
    listed = runner.instances()

    assert runner.items_served(listed) == [[]]
    assert runner.watch() is None  # the memory store announces nothing: a reader polls
