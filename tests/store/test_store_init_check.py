"""``formctl store init`` makes a folder a whole store: ``store check`` right after reads it
as fine (docs/store.md, "Layout"), and init leaves an existing store as it is."""

from __future__ import annotations

import json

from clitools import invoke, start


def test_store_check_right_after_store_init_says_the_store_is_fine(tmp_path):
    store = str(tmp_path / "new-store")
    made = invoke("store", "init", "--store", store)
    assert made.exit_code == 0, made.output
    assert "folder created" in made.stdout

    checked = invoke("store", "check", "--store", store)
    assert checked.exit_code == 0, checked.output
    assert "out of date" not in checked.output
    assert "missing" not in checked.output
    as_json = json.loads(invoke("store", "check", "--store", store, "--json").stdout)
    assert as_json["ok"] is True


def test_store_init_on_a_store_in_use_leaves_it_as_it_is(tmp_path):
    store = str(tmp_path / "in-use")
    iid = start(store, {"full_name": "Dana"})
    again = invoke("store", "init", "--store", store)
    assert again.exit_code == 0, again.output
    assert "already set up" in again.stdout
    assert invoke("store", "check", "--store", store).exit_code == 0
    assert iid in invoke("instances", "--store", store).stdout
