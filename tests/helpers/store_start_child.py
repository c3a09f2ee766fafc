"""Start-race helper: one of several processes that each start the same form for the same
subject at once, then fill the subject's open instance.

    python store_start_child.py STORE WORKER FILLS   (STORE: a folder or a DSN)

Prints ``ready``, waits for a line on stdin (so every worker starts at once), then calls
``start("race")``: a start refused with ``form_open`` (another worker's start won) is
expected; any other error ends the process. Then it fills field ``w<WORKER>`` FILLS times with
no instance id, so each fill goes to the subject's open instance as ``open_instance()`` finds
it. Prints one JSON summary line: whether its start created the instance, the id it named,
and the id every fill landed in.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from race_form import open_adapter, registry  # noqa: E402

from formctl import FormError, FormRunner  # noqa: E402


def main() -> None:
    store, worker, fills = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    forms = registry()
    forms.load("race")
    runner = FormRunner(open_adapter(store), registry=forms, subject="race", actor=f"worker-{worker}")
    print("ready", flush=True)
    sys.stdin.readline()
    started = None
    refused = None
    try:
        started = runner.start("race").instance_id
    except FormError as exc:
        if exc.code != "form_open":
            raise
        refused = exc.message
    landed = sorted({runner.fill({f"w{worker}": f"{worker}-{i}"}).instance_id for i in range(fills)})
    print(json.dumps({"worker": worker, "started": started, "refused": refused, "landed": landed}), flush=True)


if __name__ == "__main__":
    main()
