"""``-n auto`` starts one xdist worker per core and one more (the conftest's
``pytest_xdist_auto_num_workers``: the whole suite waits on processes about a quarter of a run),
unless xdist's own ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says otherwise."""

from __future__ import annotations

import os

import pytest


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def test_auto_is_one_worker_per_core_and_one_more(pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    # The hook xdist asks for `-n auto` (first answer wins: the conftest's, before xdist's own).
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == cores() + 1


def test_xdists_own_setting_still_decides(pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "1")
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == 1
