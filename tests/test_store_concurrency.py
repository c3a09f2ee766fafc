"""Concurrency test: four processes fill one instance 200 times each through FormRunner.

Each process (``helpers/store_concurrency_child.py``) owns one field and fills it 200
times; the runner retries compare-and-set conflicts. Afterwards no revision may be
lost, the versions the store acknowledged must be exactly one per commit with no two
commits at the same version, and every conflict must show up in the counters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from formctl.forms.instance import Provenance, now_iso
from formctl.store.jsonfile import JsonFileAdapter

pytestmark = pytest.mark.durable

HELPERS = os.path.join(os.path.dirname(__file__), "helpers")
WORKERS = 4
FILLS = 200


def test_four_processes_filling_one_instance_lose_no_revision(tmp_path):
    store = str(tmp_path / "store")
    setup = JsonFileAdapter(store)
    instance = setup.create_instance("race", 1, "race", Provenance("test", "setup", now_iso()))
    start_version = instance.version

    workers = [
        subprocess.Popen(
            [sys.executable, os.path.join(HELPERS, "store_concurrency_child.py"), store, instance.id, str(w), str(FILLS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"
        for worker in workers:  # all start together
            worker.stdin.write("go\n")
            worker.stdin.flush()
        summaries = []
        for worker in workers:
            out, _ = worker.communicate(timeout=300)
            assert worker.returncode == 0, out
            summaries.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()

    total = WORKERS * FILLS
    # Exactly one version per commit: every acknowledged version is distinct, and together
    # they are the unbroken run start+1 .. start+800.
    versions = sorted(v for s in summaries for v in s["versions"])
    assert versions == list(range(start_version + 1, start_version + total + 1))
    for s in summaries:
        assert len(s["versions"]) == FILLS
        assert s["versions"] == sorted(s["versions"])  # each process saw its versions grow

    stored = JsonFileAdapter(store).get_instance(instance.id)
    assert stored.version == start_version + total
    for w in range(WORKERS):
        log = stored.entries[f"w{w}"]
        assert [e.value for e in log.revisions] == [f"{w}-{i}" for i in range(FILLS)]  # none lost, in order
        assert log.cursor == FILLS - 1
    seqs = sorted(e.seq for log in stored.entries.values() for e in log.revisions)
    assert seqs == list(range(1, total + 1)) and stored.revision_seq == total

    # Every compare-and-set failure is counted: at the adapter, and (as retries, or as
    # fills that ran out of attempts and were tried again) at the runner.
    for s in summaries:
        assert s["attempts"] == FILLS + s["adapter_conflicts"]
        assert s["adapter_conflicts"] == s["runner_conflict_retries"] + s["exhausted"]
    conflicts = sum(s["adapter_conflicts"] for s in summaries)
    print(f"{total} fills by {WORKERS} processes; {conflicts} conflicts retried")
    assert JsonFileAdapter(store).check().ok
