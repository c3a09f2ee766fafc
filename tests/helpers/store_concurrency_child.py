"""Concurrency-test helper: one of several processes filling the same instance.

    python store_concurrency_child.py STORE INSTANCE_ID WORKER FILLS

Prints ``ready``, waits for a line on stdin (so that every worker starts at once), then
fills field ``w<WORKER>`` FILLS times through ``FormRunner``. The runner retries a
conflict up to 5 attempts; a fill that still conflicts is simply tried again here and
counted. Prints one JSON summary line: the versions its commits were acknowledged at and
the conflict counters (the runner's ``conflict_retries`` and the adapter's ``conflicts``).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from race_form import Acknowledging, registry  # noqa: E402

from formctl import ConflictError, FormRunner, JsonFileAdapter  # noqa: E402


def main() -> None:
    store, instance_id, worker, fills = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    adapter = Acknowledging(JsonFileAdapter(store))
    forms = registry()
    forms.load("race")
    runner = FormRunner(adapter, registry=forms, subject="race", actor=f"worker-{worker}")
    print("ready", flush=True)
    sys.stdin.readline()
    exhausted = 0
    for i in range(fills):
        while True:
            try:
                runner.fill({f"w{worker}": f"{worker}-{i}"}, instance_id=instance_id)
                break
            except ConflictError:
                exhausted += 1  # five attempts all lost the race: try the fill again
    summary = {
        "worker": worker,
        "versions": adapter.versions,
        "attempts": adapter.attempts,
        "adapter_conflicts": adapter.inner.conflicts,
        "runner_conflict_retries": runner.conflict_retries,
        "exhausted": exhausted,
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
