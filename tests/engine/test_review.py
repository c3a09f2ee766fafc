"""A review before sending (docs/engine.md, "Review before sending"): a form declared with
``review=True`` is ``ready`` when its answers are in, and ``complete`` only once it is sent."""

from __future__ import annotations

import pytest

from example_forms import register, reviewed
from formctl import NotReadyError
from formctl.agent.tools import FormTools

ANSWERS = {"name": "Dana", "leave": "2026-03-02", "back": "2026-03-04"}


@pytest.fixture
def review_runner(runner, registry, log):
    register(registry, reviewed(log))
    r = runner()
    r.start("reviewed")
    return r


def test_a_reviewed_form_with_every_required_answer_is_ready_not_complete(review_runner, log):
    result = review_runner.fill(ANSWERS)

    assert result.view.status == "ready" and result.view.complete is False
    assert "form" not in log.hook_ids  # not sent: on_complete has not fired
    assert review_runner.tier0().startswith("[form: reviewed] ready to send · optional, unanswered: Note")
    assert "form_submit" in review_runner.tier0()


def test_submit_completes_the_form_and_fires_on_complete_once(review_runner, log):
    review_runner.fill(ANSWERS)

    result = review_runner.submit()

    assert result.view.status == "complete" and result.view.complete is True
    assert log.keys.count("form:1") == 1 and "form:2" not in log.keys
    assert review_runner.tier0() == ""
    with pytest.raises(NotReadyError, match="already sent"):
        review_runner.submit()


def test_submit_before_ready_says_what_is_missing_and_writes_nothing(review_runner, log):
    review_runner.fill({"name": "Dana"})
    version = review_runner.view().instance.version

    with pytest.raises(NotReadyError, match="still needed: Leave, Back") as caught:
        review_runner.submit()

    assert caught.value.code == "form_not_ready"
    assert review_runner.view().instance.version == version and "form" not in log.hook_ids


def test_a_change_after_sending_needs_sending_again(review_runner, log):
    review_runner.fill(ANSWERS)
    review_runner.submit()

    assert review_runner.fill({"note": "window seat"}).view.status == "ready"
    assert review_runner.submit().view.status == "complete"
    assert log.keys.count("form:1") == 1 and log.keys.count("form:2") == 1


@pytest.mark.parametrize("change", ["retract", "undo"])
def test_taking_a_required_answer_away_from_a_ready_form_makes_it_active(review_runner, change):
    review_runner.fill(ANSWERS)

    result = review_runner.retract("back") if change == "retract" else review_runner.undo("back")

    assert result.view.status == "active"
    with pytest.raises(NotReadyError):
        review_runner.submit()


def test_a_failed_step_check_keeps_the_form_from_ready_until_the_answer_is_fixed(review_runner, log):
    result = review_runner.fill({**ANSWERS, "back": "2026-03-01"})

    assert result.view.status == "active"
    assert [f.message for f in result.failures] == ["The return date is before the departure date."]
    with pytest.raises(NotReadyError, match="check"):
        review_runner.submit()

    fixed = review_runner.fill({"back": "2026-03-05"})  # the step stays complete: its check runs again

    assert log.keys.count("step:trip:2") == 1
    assert fixed.view.status == "ready" and fixed.failures == []


def test_a_hook_patch_after_sending_keeps_the_form_sent(runner, registry):
    from formctl import Patch, define_form

    form = (
        define_form("stamped", name="Stamped", review=True)
        .step("s", title="S")
        .field("x", str, label="X")
        .field("ref", str | None, label="Reference")
        .on_complete(lambda ctx: Patch({"ref": "R-1"}))
        .build()
    )
    register(registry, form)
    r = runner()
    r.start("stamped")
    r.fill({"x": "1"})

    result = r.submit()

    assert result.view.status == "complete"
    assert r.view().evaluation.values["ref"] == "R-1"


def test_without_review_a_form_completes_on_its_last_required_answer_and_submit_refuses(runner, log, registry):
    from example_forms import lab

    register(registry, lab(log))
    r = runner()
    r.start("lab")
    assert r.fill({"trigger": "x", "extra": "ok"}).view.status == "complete"
    assert "form" in log.hook_ids
    with pytest.raises(NotReadyError, match="no review"):
        r.submit()


def test_the_ready_status_is_stored_and_read_back(review_runner, adapter):
    review_runner.fill(ANSWERS)

    instance = adapter.get_instance(review_runner.view().instance.id)

    assert instance.status == "ready"
    assert [i.id for i in adapter.find_instances(status="ready")] == [instance.id]


def test_postgres_stores_the_ready_status_and_sending_it(pg_adapter, registry):
    from formctl import FormRunner

    register(registry, reviewed())
    r = FormRunner(pg_adapter, registry=registry, subject="s1")
    instance_id = r.start("reviewed", seed=ANSWERS).view.instance_id
    assert pg_adapter.get_instance(instance_id).status == "ready"

    r.submit()

    assert pg_adapter.get_instance(instance_id).status == "complete"


def test_form_submit_sends_a_ready_form_and_refuses_one_that_is_not(review_runner):
    tools = FormTools(review_runner)

    refused = tools.call("form_submit", {})
    assert refused["status"] == "error" and refused["data"]["code"] == "form_not_ready"

    review_runner.fill(ANSWERS)
    sent = tools.call("form_submit", {})

    assert sent["status"] == "success" and sent["data"]["status"] == "complete" and sent["data"]["complete"] is True


def test_form_start_refuses_while_the_same_form_is_ready(review_runner):
    review_runner.fill(ANSWERS)

    started = FormTools(review_runner).call("form_start", {"form": "reviewed"})

    assert started["status"] == "error" and started["data"]["code"] == "form_open"


def test_the_guided_yes_after_a_change_elsewhere_reads_back_again_and_sends_only_the_next_yes():
    from helpers.guided_chat import Chat

    chat = Chat("travel-claim")
    chat.say("hello")
    text = chat.say(
        "Full name: Dana Reeve; Staff ID: AB1234; Work email: d@example.org; Destination: Leeds; "
        "Departure date: 2026-03-02; Return date: 2026-03-04; Purpose: talk; Mode: rail; "
        "Ticket reference: TK9999; Accommodation cost: 80; Meals cost: 20; Total: 100"
    )
    assert "Before I send it, please check your answers:" in text and "- Meals cost: 20" in text

    chat.runner.fill({"meals": 12}, instance_id=chat.loop.instance_id)  # a host, in another terminal
    text = chat.say("yes")

    assert chat.tools == []  # nothing is sent that the person did not see
    assert "The answers changed since I read them back" in text and "- Meals cost: 12" in text
    assert chat.instance().status == "ready"
    text = chat.say("yes")
    assert chat.tools == [("form_submit", {})] and "Sent." in text
    assert chat.instance().status == "complete"
