"""The model's tools, fuzzed through the chat loop (see ``tool_fuzz.py`` for what each call must
keep true). A few hundred examples here; ``benchmarks/fuzz.py`` runs ten thousand calls and
counts what it finds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fixture_project import REGISTRY
from tool_fuzz import OpenAIWire, Tally, play, play_mcp, turns

FUZZ_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


# The 200 examples of the main fuzz run as SHARDS tests of 200 / SHARDS each, so that xdist can
# spread them over its workers. Each shard draws its own examples (hypothesis seeds every test
# afresh), so together they are 200 examples as before; only a fixed --hypothesis-seed would make
# the shards draw the same ones.
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
@settings(FUZZ_SETTINGS, max_examples=200 // SHARDS)
@given(example=turns())
def test_no_tool_call_a_model_gets_wrong_crashes_loses_or_writes_what_it_should_not(shard, example):
    tally = Tally()
    play(example, REGISTRY, tally)
    assert not tally.findings, "\n".join(str(f) for f in tally.findings)


@pytest.fixture(scope="module")
def openai_wire():
    with OpenAIWire() as wire:
        yield wire


@settings(FUZZ_SETTINGS, max_examples=60)
@given(example=turns())
def test_the_same_calls_through_the_openai_sdk_crash_nothing_and_write_nothing_on_an_error(openai_wire, example):
    """The calls streamed by a loopback Chat Completions server through the real ``openai`` SDK
    (one in four with arguments that are not JSON): the same checks, on the adapter's path."""
    tally = Tally()
    play(example, REGISTRY, tally, through=openai_wire.through)
    assert not tally.findings, "\n".join(str(f) for f in tally.findings)


@settings(FUZZ_SETTINGS, max_examples=60)
@given(example=turns())
def test_the_same_calls_through_the_mcp_server_crash_nothing_write_nothing_on_an_error_and_stay_in_scope(example):
    """The calls made by the ``mcp`` SDK's client to ``formctl mcp``'s server: the same checks, and
    no success result holds another subject's instance or words."""
    tally = Tally()
    play_mcp(example, REGISTRY, tally)
    assert not tally.findings, "\n".join(str(f) for f in tally.findings)
