"""Concurrency-test helper: processes filling the same instance.

    python store_concurrency_child.py STORE INSTANCE_ID WORKERS FILLS   (STORE: a folder or a DSN)

WORKERS: a worker's number (this process is that worker), or several separated by commas
(one process forked for each, from this one: ``forked.py``). Each worker prints ``ready``,
waits for a line or the end of stdin (so that every worker starts at once), then fills field
``w<WORKER>`` FILLS times through ``FormRunner``. Any error ends the worker (exit 1, and this
process's status is 1): every fill must succeed as it is. Each worker prints one JSON summary
line: the versions its commits were acknowledged at and the conflict counters (the runner's
``conflict_retries`` and the adapter's ``conflicts``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import forked  # noqa: E402
from race_form import Acknowledging, open_adapter, warmed_registry  # noqa: E402

from formctl import FormRunner  # noqa: E402


def main() -> None:
    store, instance_id, workers, fills = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    forms = warmed_registry(store)  # compiled, and what a fill imports imported, once, before any fork

    def prepare(worker: int) -> Callable[[], dict[str, Any]]:
        adapter = Acknowledging(open_adapter(store))
        runner = FormRunner(adapter, registry=forms, subject="race", actor=f"worker-{worker}")

        def work() -> dict[str, Any]:
            for i in range(fills):
                runner.fill({f"w{worker}": f"{worker}-{i}"}, instance_id=instance_id)
            return {
                "worker": worker,
                "versions": adapter.versions,
                "attempts": adapter.attempts,
                "adapter_conflicts": adapter.inner.conflicts,
                "runner_conflict_retries": runner.conflict_retries,
            }

        return work

    sys.exit(forked.run([int(w) for w in workers.split(",")], prepare))


if __name__ == "__main__":
    main()
