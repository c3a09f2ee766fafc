"""``formctl store init`` makes a folder a whole store: ``store check`` right after reads it
as fine (docs/store.md, "Layout"), and init leaves an existing store as it is."""

from __future__ import annotations

import json

from clitools import Cli, start


def test_store_check_right_after_store_init_says_the_store_is_fine(tmp_path):
    store = str(tmp_path / "new-store")
    made = Cli(store)("store", "init")
    assert made.exit_code == 0, made.output
    assert "folder created" in made.stdout

    checked = Cli(store)("store", "check")
    assert checked.exit_code == 0, checked.output
    assert "out of date" not in checked.output
    assert "missing" not in checked.output
    as_json = json.loads(Cli(store)("store", "check", "--json").stdout)
    assert as_json["ok"] is True


def test_store_init_on_a_store_in_use_leaves_it_as_it_is(tmp_path):
    store = str(tmp_path / "in-use")
    iid = start(store, {"full_name": "Dana"})
    again = Cli(store)("store", "init")
    assert again.exit_code == 0, again.output
    assert "already set up" in again.stdout
    assert Cli(store)("store", "check").exit_code == 0
    assert iid in Cli(store)("instances").stdout
