"""Start-race helper: processes that each start the same form for the same subject at once,
then fill the subject's open instance.

    python store_start_child.py STORE WORKERS FILLS   (STORE: a folder or a DSN)

WORKERS: worker numbers separated by commas, one process forked for each from this one
(``forked.py``). Each worker prints ``ready``, waits for a line or the end of stdin (so every
worker starts at once), then calls ``start("race")``: a start refused with ``form_open``
(another worker's start won) is expected; any other error ends the worker (exit 1, and this
process's status is 1). Then it fills field ``w<WORKER>`` FILLS times with no instance id, so
each fill goes to the subject's open instance as ``open_instance()`` finds it. Each worker
prints one JSON summary line: whether its start created the instance, the id it named, and
the id every fill landed in.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import forked  # noqa: E402
from race_form import open_adapter, warmed_registry  # noqa: E402

from formctl import FormError, FormRunner  # noqa: E402


def main() -> None:
    store, workers, fills = sys.argv[1], sys.argv[2], int(sys.argv[3])
    forms = warmed_registry(store)  # compiled, and what a fill imports imported, once, before any fork

    def prepare(worker: int) -> Callable[[], dict[str, Any]]:
        runner = FormRunner(open_adapter(store), registry=forms, subject="race", actor=f"worker-{worker}")

        def work() -> dict[str, Any]:
            started = None
            refused = None
            try:
                started = runner.start("race").instance_id
            except FormError as exc:
                if exc.code != "form_open":
                    raise
                refused = exc.message
            landed = sorted({runner.fill({f"w{worker}": f"{worker}-{i}"}).instance_id for i in range(fills)})
            return {"worker": worker, "started": started, "refused": refused, "landed": landed}

        return work

    sys.exit(forked.run([int(w) for w in workers.split(",")], prepare))


if __name__ == "__main__":
    main()
