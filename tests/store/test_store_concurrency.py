"""Concurrency test: four processes fill one instance 200 times each through FormRunner,
beside processes that keep every CPU busy.

Each process (``helpers/store_concurrency_child.py``) owns one field and fills it 200
times, and gives up on the first error: every fill must succeed on its own. The JSON
store serialises each read, stage and commit under its lock, so a writer waits instead
of failing: no compare-and-set conflict happens at all. Afterwards no revision may be
lost, and the versions the store acknowledged must be exactly one per commit, with no
two commits at the same version.
"""

from __future__ import annotations

import os

import pytest

from formctl.forms.instance import Provenance, now_iso

pytestmark = [pytest.mark.durable, pytest.mark.e2e]  # real fsyncs; every test here crosses a process boundary

HELPERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers")
WORKERS = 4
WORKER_NUMBERS = ",".join(str(w) for w in range(WORKERS))
FILLS = 200

from helpers.forked import race_beside_busy_cpus  # noqa: E402
from helpers.race_form import open_adapter  # noqa: E402


@pytest.fixture(params=["jsonfile", "postgres"])
def store(request, tmp_path) -> str:
    """A JSON store folder, or a DSN for a fresh schema on the test server."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_dsn")
    return str(tmp_path / "store")


def test_four_processes_filling_one_instance_lose_no_revision(store):
    setup = open_adapter(store)
    instance = setup.create_instance("race", 1, "race", Provenance("test", "setup", now_iso()))
    start_version = instance.version

    # Beside a machine busy with other work: as many spinning processes as there are CPUs.
    summaries = race_beside_busy_cpus(
        [os.path.join(HELPERS, "store_concurrency_child.py"), store, instance.id, WORKER_NUMBERS, str(FILLS)], WORKERS
    )

    total = WORKERS * FILLS
    # Exactly one version per commit: every acknowledged version is distinct, and together
    # they are the unbroken run start+1 .. start+800.
    versions = sorted(v for s in summaries for v in s["versions"])
    assert versions == list(range(start_version + 1, start_version + total + 1))
    for s in summaries:
        assert len(s["versions"]) == FILLS
        assert s["versions"] == sorted(s["versions"])  # each process saw its versions grow

    stored = open_adapter(store).get_instance(instance.id)
    assert stored.version == start_version + total
    for w in range(WORKERS):
        log = stored.entries[f"w{w}"]
        assert [e.value for e in log.revisions] == [f"{w}-{i}" for i in range(FILLS)]  # none lost, in order
        assert log.cursor == FILLS - 1
    seqs = sorted(e.seq for log in stored.entries.values() for e in log.revisions)
    assert seqs == list(range(1, total + 1)) and stored.revision_seq == total

    # Serialised under the store's lock: nobody ever lost a race, so nobody retried.
    for s in summaries:
        assert s["attempts"] == FILLS
        assert s["adapter_conflicts"] == 0 and s["runner_conflict_retries"] == 0
    print(f"{total} fills by {WORKERS} processes beside {os.cpu_count() or 2} CPU-bound ones; no conflict")
    assert open_adapter(store).check().ok
