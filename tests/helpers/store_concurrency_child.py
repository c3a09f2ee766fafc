"""Concurrency-test helper: one of several processes filling the same instance.

    python store_concurrency_child.py STORE INSTANCE_ID WORKER FILLS   (STORE: a folder or a DSN)

Prints ``ready``, waits for a line on stdin (so that every worker starts at once), then
fills field ``w<WORKER>`` FILLS times through ``FormRunner``. Any error ends the process
(exit 1): every fill must succeed as it is. Prints one JSON summary line: the versions its
commits were acknowledged at and the conflict counters (the runner's ``conflict_retries``
and the adapter's ``conflicts``).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from race_form import Acknowledging, open_adapter, registry  # noqa: E402

from formctl import FormRunner  # noqa: E402


def main() -> None:
    store, instance_id, worker, fills = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    adapter = Acknowledging(open_adapter(store))
    forms = registry()
    forms.load("race")
    runner = FormRunner(adapter, registry=forms, subject="race", actor=f"worker-{worker}")
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(fills):
        runner.fill({f"w{worker}": f"{worker}-{i}"}, instance_id=instance_id)
    summary = {
        "worker": worker,
        "versions": adapter.versions,
        "attempts": adapter.attempts,
        "adapter_conflicts": adapter.inner.conflicts,
        "runner_conflict_retries": runner.conflict_retries,
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
