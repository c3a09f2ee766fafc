"""``formctl run`` on a damaged instance (its journal's last line cut): the chat says so when it
opens, never says "Saved" when nothing was, and exits non-zero because the person's answers
could not be written (docs/store.md, "Damage and repair")."""

from __future__ import annotations

from pathlib import Path

from clitools import FORMS, start
from formctl import FormRegistry, FormRunner, JsonFileAdapter


def _damaged_claim(store: str) -> str:
    instance_id = start(store)
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana"
    )
    runner.fill({"full_name": "Dana Reeve"}, instance_id=instance_id)
    runner.fill({"staff_id": "AB1234"}, instance_id=instance_id)
    journal = Path(store) / "instances" / f"{instance_id}.journal"
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:-1]))
    return instance_id


def test_a_chat_on_a_damaged_instance_says_so_first_never_says_saved_and_exits_1(cli, store):
    instance_id = _damaged_claim(store)

    result = cli("run", "travel-claim", "--subject", "dana", input="AB1234\n")

    lines = result.stdout.splitlines()
    assert result.exit_code == 1, result.output
    assert lines[1].startswith(f"· This form can't take answers now: instance {instance_id} is damaged")
    assert f"formctl store repair {instance_id}" in lines[1]
    assert "Saved" not in result.output
    assert lines[-1].startswith(f"Not saved: some of your answers could not be written to {instance_id}")


def test_after_the_repair_the_same_chat_saves_and_exits_0(cli, store):
    instance_id = _damaged_claim(store)
    cli.ok("store", "repair", instance_id, "--as", "Sam Jones")

    result = cli("run", "travel-claim", "--subject", "dana", input="AB1234\n")

    assert result.exit_code == 0, result.output
    assert "can't take answers" not in result.output
    assert result.stdout.splitlines()[-1] == f"Saved. Carry on with: formctl resume {instance_id}"
