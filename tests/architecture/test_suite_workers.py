"""``-n auto`` starts one xdist worker per core and one more when the e2e tests run (the
conftest's ``pytest_xdist_auto_num_workers``: those wait on processes about a quarter of a run),
one per core for ``-m "not e2e"``, unless xdist's own ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says
otherwise."""

from __future__ import annotations

import os

import pytest


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def auto_workers(config: pytest.Config) -> int:
    # The hook xdist asks for `-n auto` (first answer wins: the conftest's, before xdist's own).
    return config.hook.pytest_xdist_auto_num_workers(config=config)


@pytest.mark.parametrize(
    ("markexpr", "more"),
    [("", 1), ("e2e", 1), ("durable", 1), ("not e2e", 0), ("not  e2e and not durable", 0), ("not durable", 1)],
)
def test_auto_is_one_worker_per_core_and_one_more_when_the_e2e_tests_run(pytestconfig, monkeypatch, markexpr, more):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(pytestconfig.option, "markexpr", markexpr)
    assert auto_workers(pytestconfig) == cores() + more


def test_xdists_own_setting_still_decides(pytestconfig, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "1")
    assert auto_workers(pytestconfig) == 1
