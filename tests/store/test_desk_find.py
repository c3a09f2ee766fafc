"""``find`` on the folder store: what the index holds is what the instance holds now, whether a
process parses the whole index (a warm one) or reads only the lines holding the words (a new
one), with rows superseded, undone, refused and left pending by a writer that died."""

from __future__ import annotations

import json

import pytest

from fixture_project import FORMS
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.forms.search import SearchQuery, query_for


@pytest.fixture
def desk(tmp_path):
    store = str(tmp_path / "store")
    registry = FormRegistry.from_toml(FORMS / "registry.toml")

    def runner(subject: str) -> FormRunner:
        return FormRunner(JsonFileAdapter(store), registry=registry, subject=subject)

    return store, registry, runner


def _ids(store: str, registry: FormRegistry, text: str, *, warm: bool) -> list[str]:
    adapter = JsonFileAdapter(store)
    if warm:
        adapter.search(SearchQuery.of("x"))  # parse nothing yet...
        adapter.index.rows()  # ...then the whole index, as a process that listed first
    return [h.instance_id for h in adapter.search(query_for(registry, text))]


def test_a_search_sees_each_instance_as_it_is_now_warm_or_cold(desk):
    store, registry, runner = desk
    maria = runner("c1").start("travel-claim", seed={"full_name": "María López"}).view.instance_id
    sam = runner("c2").start("travel-claim", seed={"full_name": "Sam Lee", "email": "sam@example.org"}).view.instance_id
    for warm in (False, True):
        assert _ids(store, registry, "maria lopez", warm=warm) == [maria]
        assert _ids(store, registry, "SAM@exa", warm=warm) == [sam]

    r = runner("c1")
    r.revise("full_name", "Ana Ruiz", instance_id=maria)
    for warm in (False, True):
        assert _ids(store, registry, "maria", warm=warm) == []  # the old name is no longer in force
        assert _ids(store, registry, "ana ruiz", warm=warm) == [maria]
    r.undo("full_name", instance_id=maria)
    r.fill({"email": "not an email"}, instance_id=maria)  # refused: stored with its error
    for warm in (False, True):
        assert _ids(store, registry, "maria", warm=warm) == [maria]  # undone: back in force
        assert _ids(store, registry, "not an email", warm=warm) == []  # a refused value is not held
        assert _ids(store, registry, "c1", warm=warm) == [maria]  # the subject matches too


def test_an_instance_a_dead_writer_left_pending_is_read_from_its_files(desk):
    store, registry, runner = desk
    iid = runner("c1").start("travel-claim", seed={"full_name": "María López"}).view.instance_id
    with open(f"{store}/index.jsonl", "ab") as f:  # a writer announced a write and died
        f.write(json.dumps([iid, "c1"]).encode() + b"\n")
    for warm in (False, True):
        assert _ids(store, registry, "maria lopez", warm=warm) == [iid]
