"""Goal programs across processes, on the durable stores (JSON folder and PostgreSQL):

* hooks run exactly once per transition across a SIGKILL mid-effect: the killed run's
  receipt is taken over by ``resume_hooks()`` in a new process under the same idempotency
  key, and an effect that deduplicates on that key happens once;
* four processes updating disjoint items of one program lose nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

TESTS = Path(__file__).resolve().parents[1]

WORKER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import goal_programs as gp
from formctl import GoalRunner, GoalScope, Goal, Item, JsonFileAdapter, define_program

store, mode, folder = sys.argv[2], sys.argv[3], sys.argv[4]
if store.startswith("postgresql"):
    from formctl.store.postgres import PostgresAdapter
    open_store = PostgresAdapter
else:
    open_store = JsonFileAdapter
scope = GoalScope(subject="firm:1/matter:2", key="intake")
ledger = os.path.join(folder, "ledger.jsonl")

def write(row):
    with open(ledger, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())

def hook(event):
    write(["run", event.kind, event.goal.key, event.idempotency_key, event.attempt])
    if mode == "kill" and event.kind == "complete":
        open(os.path.join(folder, "ready"), "w").close()
        time.sleep(120)  # killed here, mid-effect
    done = set()
    with open(ledger) as f:
        done = {json.loads(line)[1] for line in f if json.loads(line)[0] == "effect"}
    if event.idempotency_key not in done:  # the external effect deduplicates on the key
        write(["effect", event.idempotency_key])

hooks = {"on_enter": hook, "on_complete": hook, "on_reopen": hook}

def new_runner():
    return GoalRunner(open_store(store), scope=scope, actor="worker", hooks=hooks)

if mode == "kill":
    runner = new_runner()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"], reason="verified")
elif mode == "resume":
    print(json.dumps([[o.kind, o.goal, o.status] for o in new_runner().resume_hooks()]))
elif mode.startswith("items:"):
    # One process forked per group of keys ("k00,k04|k01,k05|..."), from this one, through
    # helpers.forked: the workers race in the store, their Python start-up is not what is tested.
    # Each opens its own store, says "ready", and settles its keys once stdin closes (the go).
    from helpers.forked import run

    groups = [group.split(",") for group in mode.split(":", 1)[1].split("|")]

    def prepare(worker):
        runner, keys = new_runner(), groups[worker]

        def settle():
            for key in keys:
                runner.update(goal="many", completed=[key], reason=f"{os.getpid()} settles {key}")
            return {"settled": keys}

        return settle

    sys.exit(run(list(range(len(groups))), prepare))
"""


def worker(store: str, mode: str, folder: Path, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(TESTS), store, mode, str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


@pytest.fixture(params=["jsonfile", "postgres"])
def durable_store(request, tmp_path):
    if request.param == "jsonfile":
        return str(tmp_path / "store")
    return request.getfixturevalue("pg_dsn")


def adapter_for(store: str):
    if store.startswith("postgresql"):
        from formctl.store.postgres import PostgresAdapter

        return PostgresAdapter(store)
    from formctl import JsonFileAdapter

    return JsonFileAdapter(store)


def ledger_rows(folder: Path) -> list[list]:
    return [json.loads(line) for line in (folder / "ledger.jsonl").read_text().splitlines()]


def test_hooks_run_exactly_once_per_transition_across_a_sigkill_mid_effect(durable_store, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    killed = worker(durable_store, "kill", folder)
    deadline = time.monotonic() + 60
    while not (folder / "ready").exists():
        assert killed.poll() is None, killed.communicate()
        assert time.monotonic() < deadline, "the complete hook never started"
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)

    resumed = worker(durable_store, "resume", folder)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    # The killed complete hook is re-run, then the enter of the next goal that never ran.
    assert json.loads(out) == [["complete", "identity", "ok"], ["enter", "eligibility", "ok"]]

    rows = ledger_rows(folder)
    runs = [r for r in rows if r[0] == "run"]
    effects = [r[1] for r in rows if r[0] == "effect"]
    complete = [r for r in runs if r[1] == "complete"]
    assert [r[4] for r in complete] == [1, 2]  # the first attempt, killed, then the re-run
    assert complete[0][3] == complete[1][3]  # under the same idempotency key
    assert sorted(effects) == sorted(set(effects))  # every effect exactly once
    assert len(effects) == 3  # enter identity, complete identity, enter eligibility

    # Done receipts are skipped for good: a third runner, on a store of its own, finds nothing to
    # run. (In this process: the store is what it reads; a third child only started Python again.)
    from formctl import GoalRunner, GoalScope

    ran: list[object] = []
    hooks = {"on_enter": ran.append, "on_complete": ran.append, "on_reopen": ran.append}
    with closing(adapter_for(durable_store)) as adapter:
        scope = GoalScope(subject="firm:1/matter:2", key="intake")
        assert GoalRunner(adapter, scope=scope, actor="worker", hooks=hooks).resume_hooks() == []
    assert ran == []


def test_four_processes_updating_disjoint_items_lose_nothing(durable_store, tmp_path, request):
    from formctl import Goal, GoalRunner, GoalScope, Item, define_program

    folder = tmp_path / "run"
    folder.mkdir()
    keys = [f"k{n:02d}" for n in range(24)]
    program = define_program("many-items", goals=[Goal("many", title="Many", items=[Item(k, label=k) for k in keys])])
    scope = GoalScope(subject="firm:1/matter:2", key="intake")
    with closing(adapter_for(durable_store)) as adapter:
        GoalRunner(adapter, scope=scope, actor="host").start(program)
    groups = [keys[n::4] for n in range(4)]
    workers = worker(
        durable_store, "items:" + "|".join(",".join(group) for group in groups), folder, stdin=subprocess.PIPE
    )
    try:
        for _ in range(4):  # every one of the four set up and waiting for the go
            assert workers.stdout.readline().strip() == "ready", workers.communicate(timeout=60)
        out, err = workers.communicate(timeout=120)  # closes their stdin: the go, for all four at once
        assert workers.returncode == 0, err
    finally:
        if workers.poll() is None:
            workers.kill()

    reader = adapter_for(durable_store)
    request.addfinalizer(reader.close)
    fresh = GoalRunner(reader, scope=scope, actor="host")
    status = fresh.inspect()
    assert {i.key: i.disposition for i in status.goal("many").items} == dict.fromkeys(keys, "completed")
    assert status.version == 1 + len(keys) and status.complete
    history = fresh.history()
    assert [h.version for h in history] == list(range(1, len(keys) + 2))
    settled = [h.reason.split(" settles ")[1] for h in history[1:]]
    assert sorted(settled) == keys  # one version per update, none lost, none twice
    assert len({h.reason.split(" ")[0] for h in history[1:]}) == 4
    # every worker got the go and settled its own keys
    assert sorted(json.loads(line)["settled"] for line in out.splitlines()) == sorted(groups)
