"""now_iso: the wall clock as every record stamps it (docs/engine.md, "The instance": microseconds, UTC)."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta

from formctl.forms import instance as instance_module
from formctl.forms.instance import now_iso


def test_the_stamp_is_the_wall_clock_in_utc_with_microseconds():
    before = datetime.now(UTC)
    stamp = now_iso()
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamp)
    assert before <= datetime.fromisoformat(stamp.replace("Z", "+00:00")) <= after


def test_each_second_is_formatted_anew(monkeypatch):
    # The date and time up to the second are formatted once a second: a stamp either side of a
    # second's turn (and of a day's, a year's) must still read as the clock.
    for ns in (
        1_764_633_599_999_999_000,  # 2025-12-01T23:59:59.999999Z
        1_764_633_600_000_000_000,  # the next day
        1_767_225_599_500_000_000,  # the last half second of 2025
        1_767_225_600_000_001_000,  # 2026 has begun
        1_764_633_599_999_999_000,  # and back (a clock set back)
    ):
        monkeypatch.setattr(instance_module, "time_ns", lambda ns=ns: ns)
        at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)  # exact, no float
        want = at.isoformat(timespec="microseconds").replace("+00:00", "Z")
        assert now_iso() == want


def test_threads_stamping_at_once_never_mix_two_seconds():
    seen: list[str] = []

    def stamp() -> None:
        for _ in range(2000):
            seen.append(now_iso())

    threads = [threading.Thread(target=stamp) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    now = datetime.now(UTC)
    for s in seen:
        at = datetime.fromisoformat(s.replace("Z", "+00:00"))
        assert 0 <= (now - at).total_seconds() < 60
