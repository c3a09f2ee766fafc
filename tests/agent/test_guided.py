"""The guided model: the offline interviewer, driven by the real chat loop over the example forms.

Each conversation is a person's scripted replies sent through ``ChatLoop.send``; the
assertions are on what the person would read, on the tool calls in the transcript, and on
the answers stored.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from fixture_project import REGISTRY as REGISTRY_TOML  # noqa: E402
from formctl import FormRegistry, FormRunner, MemoryAdapter
from formctl.agent.loop import ChatLoop
from formctl.agent.models.base import ChatModel, ModelRequest
from formctl.agent.models.guided import GuidedModel, UnreadableAnswer, convert_answer
from helpers.guided_chat import Chat, ReadOnlyRunner


def claimant_done(chat: Chat) -> None:
    chat.say("hello")
    chat.say("Dana Reeve")
    chat.say("AB1234")
    chat.say("dana@example.org")


# What a person says to reach a question: the travel claim's read-back (its first lines reach
# each question before it), and the client intake's "Details changed — yes or no?".
AT_READ_BACK = ("hello", "Dana Reeve", "AB1234", "dana@example.org", "Leeds", "3 Nov 2026", "5 Nov 2026")
AT_READ_BACK += ("client workshop", "train", "TR-1234", "120", "30", "150")
AT_DETAILS_CHANGED = ("hello", "returning", "52", "Sam Lee", "sam@example.org", "skip", "C12345")


def chat_after(form_id: str, *lines: str) -> Chat:
    """A conversation on ``form_id`` after the person said ``lines``, in order."""
    chat = Chat(form_id)
    for line in lines:
        chat.say(line)
    return chat


# --------------------------------------------------------------------------- the interface


def test_guided_model_is_a_chat_model_named_guided():
    runner = FormRunner(MemoryAdapter(), registry=FormRegistry.from_toml(REGISTRY_TOML), subject="s")
    model = GuidedModel(runner, form_id="travel-claim")
    assert isinstance(model, ChatModel)
    assert model.name == "guided"


@pytest.mark.e2e
def test_importing_the_guided_model_loads_neither_anthropic_nor_prompt_toolkit():
    code = (
        "import sys, formctl.agent.models.guided, formctl.agent.models.scripted;"
        "print(sorted(m for m in ('anthropic', 'prompt_toolkit') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_first_turn_starts_the_form_with_a_tool_call_and_asks_the_first_field_by_label():
    chat = Chat("travel-claim")
    text = chat.say("hello")
    assert chat.tools == [("form_start", {"form": "travel-claim"})]
    assert chat.calls[0]["id"] == "toolu_guided_0001"
    assert "Step 1 of 4: Claimant." in text
    assert text.endswith("Full name? Their full legal name, as on their payslip.")


def test_an_open_instance_is_resumed_with_a_status_read_not_started_again():
    first = Chat("travel-claim")
    first.say("hello")
    first.say("Dana Reeve")
    again = GuidedModel(first.runner, form_id="travel-claim")
    loop = ChatLoop(first.runner, again, form_id="travel-claim")
    turn = loop.send("hi, I'm back")
    calls = [b["name"] for m in loop.messages for b in m["content"] if b["type"] == "tool_use"]
    assert calls == ["form_status"]
    assert "Welcome back to the Travel reimbursement claim" in turn.text
    assert turn.text.endswith("Staff ID? Two capital letters and four digits, like AB1234.")


def test_tool_use_ids_count_per_model_instance():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve")
    assert [c["id"] for c in chat.calls] == ["toolu_guided_0002"]


def test_reply_text_is_streamed_through_on_text():
    chat = Chat("travel-claim")
    chunks: list[str] = []
    request_messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    first = chat.model.respond(ModelRequest("", [], request_messages), on_text=chunks.append)
    assert first.tool_calls and chunks == []  # a tool-only turn says nothing yet
    envelope = chat.loop.tools.call(first.tool_calls[0]["name"], first.tool_calls[0]["input"])
    request_messages += [
        {"role": "assistant", "content": first.content},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": first.tool_calls[0]["id"],
                    "content": json.dumps(envelope),
                    "is_error": False,
                }
            ],
        },
    ]
    second = chat.model.respond(ModelRequest("", [], request_messages), on_text=chunks.append)
    assert chunks == [second.text] and "Full name?" in second.text


def test_the_tier0_line_is_not_taken_for_the_persons_words():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve")
    # The loop appended tier 0 ("[form: travel-claim] step 1/4 ...") after the words: only
    # the words were written.
    assert chat.tools == [("form_fill", {"values": {"full_name": "Dana Reeve"}})]


def test_the_same_conversation_gives_the_same_replies_and_tool_calls():
    script = [
        "hello",
        "Dana Reeve",
        "ab12",
        "AB1234",
        "undo",
        "Staff ID: CD5678",
        "dana@example.org",
        "what else",
        "Leeds; Mode: car",
        "status",
        "£1,200",
    ]

    def run() -> list[tuple[str, list[Any]]]:
        chat = Chat("travel-claim")
        out = []
        for line in script:
            text = chat.say(line)
            text = text.replace(chat.loop.instance_id or "", "ID")
            out.append((text, [(c["id"], c["name"], c["input"]) for c in chat.calls]))
        return out

    assert run() == run()


@pytest.mark.parametrize("said", ["ab1234", "my staff id is ab1234", "it's Ab1234 I think", "AB 1234", "ab-1234"])
def test_a_code_in_small_letters_or_in_parts_is_saved_as_its_pattern_takes_it(said):
    chat = chat_after("travel-claim", "hello", "Dana Reeve")

    text = chat.say(said)

    assert chat.values()["staff_id"] == "AB1234"
    assert "Staff ID: AB1234." in text and "wasn't accepted" not in text
    assert text.endswith("Work email?")


@pytest.mark.parametrize("said", ["dana", "ab12", "ab12345"])
def test_words_no_form_of_which_fits_the_pattern_are_sent_as_written_and_refused(said):
    chat = chat_after("travel-claim", "hello", "Dana Reeve")

    text = chat.say(said)

    assert "staff_id" not in chat.values()
    assert "That wasn't accepted. A Staff ID is two capital letters and four digits" in text


@pytest.mark.parametrize(
    "said",
    [
        "AB1234, no wait, CD5678",
        "AB1234 sorry I mean CD5678",
        "AB1234... actually it's CD5678",
        "it's AB1234 - no, CD5678",
    ],
)
def test_a_value_taken_back_in_the_same_line_gives_way_to_the_one_meant(said):
    chat = chat_after("travel-claim", "hello", "Dana Reeve")

    text = chat.say(said)

    assert chat.values()["staff_id"] == "CD5678"
    assert text == "Got it — Staff ID: CD5678.\nWork email?"


def test_an_email_taken_back_in_the_same_line_gives_way_to_the_one_meant():
    chat = chat_after("travel-claim", "hello", "Dana Reeve", "AB1234")

    chat.say("dana@example.org no wait it's dana.r@example.org")

    assert chat.values()["email"] == "dana.r@example.org"


@pytest.mark.parametrize(
    ("asked", "said", "field", "saved"),
    [
        (1, "Dana Reeve, sorry I mean Dana Rees", "full_name", "Dana Rees"),
        (1, "Sorry, I mean Dana Reeve", "full_name", "Dana Reeve"),
        (4, "Leeds, no wait, York", "destination", "York"),
    ],
)
def test_a_name_or_a_place_taken_back_in_the_same_line_gives_way_to_the_one_meant(asked, said, field, saved):
    chat = chat_after("travel-claim", *AT_READ_BACK[:asked])

    text = chat.say(said)

    assert chat.values()[field] == saved
    assert f": {saved}." in text and "wasn't sure" not in text


def test_two_values_for_one_field_without_words_taking_one_back_keep_the_first_and_say_the_other_back():
    chat = chat_after("travel-claim", "hello", "Dana Reeve")

    text = chat.say("AB1234 or CD5678")

    assert chat.values()["staff_id"] == "AB1234"
    assert 'I wasn\'t sure which question this answers: "CD5678"' in text


@pytest.mark.parametrize(("said", "client_type"), [("nope", "new"), ("yep", "returning")])
def test_a_plain_yes_or_no_answers_a_choice_the_form_asks_as_a_yes_no_question(said, client_type):
    chat = chat_after("client-intake", "hello")  # "Client type — new or returning? Have they used the service before?"

    text = chat.say(said)

    assert chat.values()["client_type"] == client_type
    assert f"Client type: {client_type}." in text and "required" not in text


@pytest.mark.parametrize("said", ["yes, new phone 07700 900555", "Yeah, my phone is 07700 900555 now"])
def test_a_yes_at_a_yes_no_question_answers_it_beside_the_value_the_line_gives(said):
    chat = chat_after("client-intake", *AT_DETAILS_CHANGED)

    text = chat.say(said)

    assert chat.values()["details_changed"] is True
    assert chat.values()["phone"] == "07700 900555"
    assert "Details changed: yes" in text and "yes or no?" not in text


@pytest.mark.parametrize(
    ("said", "back"),
    [
        ("I left on Monday 2 November 2026 and came back Wednesday", "2026-11-04"),
        ("went Monday 2 November 2026, back on the Friday", "2026-11-06"),
    ],
)
def test_a_return_said_as_a_weekday_beside_the_departure_is_read_from_it(said, back):
    chat = chat_after("travel-claim", *AT_READ_BACK[:5])

    text = chat.say(said)

    assert (chat.values()["departure_date"], chat.values()["return_date"]) == ("2026-11-02", back)
    assert "wasn't sure" not in text and text.endswith("Purpose of trip?")


@pytest.mark.parametrize(
    ("said", "field", "value"),
    [
        ("no, the meals were 25", "meals", 25),
        ("meals 25", "meals", 25),
        ("the destination was York", "destination", "York"),
    ],
)
def test_at_the_read_back_an_answer_named_in_everyday_words_is_a_correction(said, field, value):
    chat = chat_after("travel-claim", *AT_READ_BACK)

    text = chat.say(said)

    assert chat.tools == [
        ("form_revise", {"action": "set", "field": field, "value": value, "reason": "corrected by the person"})
    ]
    assert chat.values()[field] == value
    assert "Before I send it, please check your answers" in text  # read back again, as changed


@pytest.mark.parametrize(
    ("said", "changed"),
    [
        ("nothing's changed", False),
        ("same as before", False),
        ("it hasn't changed", False),
        ("yes I've moved", True),
        ("nothing's changed except my phone, it's 07700 900555", True),
    ],
)
def test_words_that_say_nothing_changed_are_a_no_though_they_say_changed(said, changed):
    chat = chat_after("client-intake", *AT_DETAILS_CHANGED)

    text = chat.say(said)

    assert chat.values()["details_changed"] is changed
    assert f"Details changed: {'yes' if changed else 'no'}" in text and "wasn't sure" not in text


# --------------------------------------------------------------------------- travel claim, end to end


def test_travel_claim_completes_through_corrections_a_rejection_a_skip_and_a_finance_wait():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve")

    text = chat.say("ab12")  # the pattern refuses it: said once, in the field's words, then asked again
    assert chat.tools == [("form_fill", {"values": {"staff_id": "ab12"}})]
    assert text == ("That wasn't accepted. A Staff ID is two capital letters and four digits, like AB1234.\nStaff ID?")

    chat.say("AB1234")
    text = chat.say("undo")
    assert chat.tools == [("form_revise", {"action": "undo", "field": "staff_id"})]
    # One answer back is the refused ab12: in force again as it was, and said to be not accepted.
    assert "Undone: Staff ID is back to ab12, which wasn't accepted." in text
    assert text.endswith("Staff ID? Two capital letters and four digits, like AB1234.")
    chat.say("AB1234")
    text = chat.say("Staff ID: CD5678")  # a labelled correction of an answer given: a revision
    assert chat.tools == [
        ("form_revise", {"action": "set", "field": "staff_id", "value": "CD5678", "reason": "corrected by the person"})
    ]
    assert "Got it — Staff ID: CD5678." in text and text.endswith("Work email?")

    text = chat.say("dana@example.org")
    assert "Step 2 of 4: Trip." in text and text.endswith("Destination?")

    text = chat.say("what else")
    assert chat.tools == [("form_inspect", {"scope": "outline"})]
    assert "After that: Travel (how they travelled, mileage or ticket); Costs (accommodation, meals, total)." in text
    assert text.endswith("Destination?")

    # A later step's field volunteered early is captured, and never asked for.
    text = chat.say("Leeds; Mode: car")
    assert chat.tools == [("form_fill", {"values": {"destination": "Leeds", "mode": "car"}})]
    assert "Got it — Destination: Leeds; Mode: car." in text

    chat.say("3 Nov 2026")
    text = chat.say("back")  # undo the departure date, then ask it again
    assert chat.tools == [("form_revise", {"action": "undo", "field": "departure_date"})]
    assert "Undone: Departure date is empty again." in text
    assert text.endswith("Departure date? A date, like 2026-11-03.")
    chat.say("4 November 2026")
    chat.say("2026-11-06")
    text = chat.say("Speaking at a conference")

    # Travel was answered early: the next question is the optional mileage the car opened.
    assert "Mode?" not in text
    assert text.endswith('Miles driven? Optional: say "skip" to leave it out.')
    chat.say("40 miles")
    assert chat.values()["mileage_cost"] == 18.0  # the form's own on_fill derived it

    text = chat.say("skip")
    assert "Skipped Accommodation cost." in text and text.endswith('Meals cost? Optional: say "skip" to leave it out.')
    chat.say("£45.50")

    text = chat.say("£1,200")  # over the 750 cap: Finance has to approve
    instance = chat.instance()
    assert instance.status == "awaiting"
    assert "Over the 750 cap: waiting for Finance to approve." in text
    assert f"`formctl resolve {instance.id}`" in text

    chat.runner.resolve_checkpoint(instance.id)  # the host (Finance) approves in another terminal
    text = chat.say("Has Finance approved it?")
    assert chat.tools == [("form_status", {})]
    assert "Before I send it, please check your answers:" in text  # approved: read back, not yet sent
    assert "- Total claimed: 1200" in text and "- Miles driven: 40" in text
    assert chat.instance().status == "ready"
    text = chat.say("send it")
    assert chat.tools == [("form_submit", {})] and "Sent." in text
    assert chat.instance().status == "complete"
    assert chat.values() == {
        "full_name": "Dana Reeve",
        "staff_id": "CD5678",
        "email": "dana@example.org",
        "destination": "Leeds",
        "departure_date": "2026-11-04",
        "return_date": "2026-11-06",
        "purpose": "Speaking at a conference",
        "mode": "car",
        "mileage": 40,
        "mileage_cost": 18.0,
        "meals": 45.5,
        "total": 1200.0,
    }


def test_while_finance_decides_answers_are_refused_with_the_wait_message():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Total claimed: 900")
    text = chat.say("Full name: Dana Reeve")
    assert chat.results[0]["status"] == "error" and chat.results[0]["data"]["code"] == "form_blocked"
    assert "I can't change anything while the form is waiting." in text
    assert "Over the 750 cap: waiting for Finance to approve." in text
    text = chat.say("undo")
    assert chat.tools == [("form_status", {})]  # no write is even tried
    assert "waiting for Finance" in text


def test_a_rejection_by_finance_is_explained_and_a_lower_total_completes_the_claim():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say(
        "Full name: Dana Reeve; Staff ID: AB1234; Work email: d@example.org; Destination: Leeds; "
        "Departure date: 2026-11-03; Return date: 2026-11-04; Purpose: talk; Mode: rail; "
        "Ticket reference: TK9999; Total: 900"
    )
    chat.runner.resolve_checkpoint(chat.loop.instance_id, fail="Over the limit: needs pre-approval.")
    text = chat.say("well?")
    assert 'The "policy-cap" check did not pass: Over the limit: needs pre-approval.' in text
    assert "complete" not in text
    text = chat.say("Total claimed: 700")
    assert chat.tools[0][0] == "form_revise"
    # Every required answer is in: the optional questions never asked are offered, one at a time.
    assert text.endswith('Accommodation cost? Optional: say "skip" to leave it out.')
    assert chat.instance().status == "ready"
    chat.say("skip")
    text = chat.say("none")
    assert "Before I send it, please check your answers:" in text and "- Total claimed: 700" in text
    assert "Left out: Accommodation cost, Meals cost." in text
    text = chat.say("yes")
    assert chat.tools == [("form_submit", {})]
    assert "Sent. The Travel reimbursement claim is complete" in text
    assert chat.instance().status == "complete"


def test_skip_is_refused_for_a_required_field():
    chat = Chat("travel-claim")
    chat.say("hello")
    text = chat.say("skip")
    assert chat.calls == []
    assert text.startswith("Full name is required, so I can't skip it.")
    assert text.endswith("Full name? Their full legal name, as on their payslip.")


def test_none_for_an_optional_question_leaves_it_out():
    chat = Chat("client-intake")
    chat.say("hi")
    chat.say("Client type: new; Age: 30; Full name: Sam Lee; Email: sam@example.org")
    text = chat.say("n/a")
    assert chat.tools == [("form_status", {})]
    assert "Left out Phone." in text and text.endswith("Referral source — web, friend, doctor or other?")
    assert "phone" not in chat.values()


def test_a_number_it_cannot_read_is_asked_again_without_writing_anything():
    chat = Chat("client-intake")
    chat.say("hi")
    chat.say("new")
    text = chat.say("forty or fifty")
    assert chat.calls == []
    assert (
        text
        == 'I couldn\'t use "forty or fifty" for Age: I need a single number (a whole number), like 40 or 1,200.\nAge?'
    )


def test_status_reads_back_the_step_and_what_is_pending():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve")
    text = chat.say("status")
    assert chat.tools == [("form_status", {})]
    assert "We're on step 1 of 4: Claimant. Answered: Full name. Still to answer: Staff ID, Work email." in text
    assert text.endswith("Staff ID? Two capital letters and four digits, like AB1234.")


def test_several_bare_answers_fill_the_open_steps_questions_in_order():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve\nAB1234\ndana@example.org")
    assert chat.tools == [
        ("form_fill", {"values": {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}})
    ]


def test_a_label_that_names_no_field_is_reported_with_a_suggestion():
    chat = Chat("travel-claim")
    chat.say("hello")
    text = chat.say("Ful name: Dana Reeve")
    assert chat.tools == [("form_fill", {"values": {"Ful name": "Dana Reeve"}})]
    assert 'There is no question called "Ful name" — did you mean Full name?' in text
    assert chat.values() == {}


def test_an_answer_that_does_not_apply_yet_is_kept_and_said_so():
    chat = Chat("travel-claim")
    chat.say("hello")
    text = chat.say("Miles driven: 40; Dana Reeve")
    assert chat.tools == [("form_fill", {"values": {"mileage": 40, "full_name": "Dana Reeve"}})]
    assert "I've kept Miles driven for now, but it doesn't apply given the answers so far." in text
    assert text.endswith("Staff ID? Two capital letters and four digits, like AB1234.")


def test_redo_puts_back_what_undo_took_away():
    chat = Chat("travel-claim")
    chat.say("hello")
    text = chat.say("redo")
    assert chat.calls == [] and text.startswith("There's nothing to redo.")
    chat.say("Dana Reeve")
    chat.say("undo")
    text = chat.say("redo")
    assert chat.tools == [("form_revise", {"action": "redo", "field": "full_name"})]
    assert "Redone: Full name is back to Dana Reeve." in text
    assert chat.values() == {"full_name": "Dana Reeve"}


def test_after_a_failed_model_call_the_newest_words_are_answered():
    chat = Chat("travel-claim")
    chat.say("hello")
    # What the loop sends after an unanswered turn: both messages joined, then tier 0.
    messages = [
        *chat.loop.messages,
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Dna"},
                {"type": "text", "text": "Dana Reeve"},
                {"type": "text", "text": chat.loop.tier0},
            ],
        },
    ]
    reply = chat.model.respond(ModelRequest("", [], messages))
    assert reply.tool_calls[0]["input"] == {
        "values": {"full_name": "Dana Reeve"},
        "quotes": {"full_name": "Dana Reeve"},
    }


def test_quit_says_how_to_resume_and_abandons_nothing():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve")
    text = chat.say("quit")
    assert chat.calls == []
    assert f"`formctl resume {chat.loop.instance_id}`" in text
    assert chat.instance().status == "active"


def test_without_a_form_id_it_lists_the_forms_and_starts_the_one_named():
    chat = Chat(None)
    text = chat.say("hello")
    assert chat.tools == [("form_list", {})]
    assert "- travel-claim: Travel reimbursement claim" in text
    chat.say("client intake")
    assert chat.tools == [("form_start", {"form": "client-intake"})]
    assert chat.instance().def_id == "client-intake"


def test_a_fresh_model_over_a_restored_conversation_carries_on_in_the_forms_order():
    chat = Chat("travel-claim")
    chat.say("hello")
    chat.say("Dana Reeve")
    restored = ChatLoop(
        chat.runner,
        GuidedModel(chat.runner, form_id="travel-claim"),
        form_id="travel-claim",
        messages=chat.loop.messages,
    )
    turn = restored.send("AB1234")
    assert turn.error is None
    assert "Got it — Staff ID: AB1234." in turn.text and turn.text.endswith("Work email?")


# --------------------------------------------------------------------------- client intake


def test_client_intake_new_client_completes_asking_the_optional_phone_it_would_otherwise_pass():
    chat = Chat("client-intake")
    text = chat.say("hi")
    assert text.endswith("Client type — new or returning? Have they used the service before?")
    chat.say("New")
    text = chat.say("34")
    assert "Step 2 of 4: Contact." in text
    chat.say("Sam Lee")
    text = chat.say("sam@example.org")
    # Contact is complete without the phone, and the route checkpoint jumped ahead: the
    # phone is still offered once.
    assert text.endswith('Phone? Optional: say "skip" to leave it out.')
    text = chat.say("skip")
    assert "Skipped Phone." in text and "Step 3 of 4: New client details." in text
    text = chat.say("what else")
    assert "Returning client" not in text  # its gate is off: not promised
    assert "In this step (New client details) I still need: Referral source, Needs." in text
    text = chat.say("fr")  # a unique prefix of "friend"
    assert chat.tools == [("form_fill", {"values": {"referral": "friend"}})]
    text = chat.say("Help finding housing")
    assert "Before I send it, please check your answers:" in text and "Left out: Phone." in text
    text = chat.say("yes")
    assert "Sent. The Client intake is complete" in text
    assert chat.values() == {
        "client_type": "new",
        "age": 34,
        "full_name": "Sam Lee",
        "email": "sam@example.org",
        "referral": "friend",
        "needs": "Help finding housing",
    }
    assert chat.instance().status == "complete"


def test_client_intake_under_18_stops_and_says_why():
    chat = Chat("client-intake")
    chat.say("hi")
    chat.say("new")
    text = chat.say("16")
    assert (
        "I'm sorry, we have to stop here: Under 18: not eligible for this service. "
        "A guardian must apply instead." in text
    )
    assert "?" not in text.split("stop here")[1]  # no further question
    assert chat.instance().status == "abandoned"
    text = chat.say("Full name: Sam Lee")  # nothing more is written, and nothing restarts
    assert chat.calls == []
    assert "stop here" in text
    assert chat.runner.open_instance() is None


def test_returning_client_with_changed_details_goes_back_over_contact():
    chat = Chat("client-intake")
    chat.say("hi")
    chat.say("Client type: returning; Age: 40")
    chat.say("Full name: Sam Lee; Email: sam@example.org; Phone: 0113 496 0000")
    chat.say("C12345")
    text = chat.say("yes")
    assert chat.tools == [("form_fill", {"values": {"details_changed": True}})]
    assert "We need to go back over Contact: please confirm or correct these answers." in text
    assert text.endswith('Full name? It is Sam Lee now; say "same" to keep it.')
    # Every field of Contact gets its question. A kept answer needs no new revision; a changed
    # answer is written as it is given (on every form), quoted with the line it came from, and
    # the rest of the step is still asked.
    text = chat.say("same")
    assert chat.tools == [] and text.startswith("Kept — Full name: Sam Lee.")
    assert text.endswith('Email? It is sam@example.org now; say "same" to keep it.')
    text = chat.say("sam.lee@example.org")
    assert [name for name, _ in chat.tools] == ["form_revise"]
    assert chat.tools[0][1]["value"] == "sam.lee@example.org"
    assert chat.quotes == {"email": "sam.lee@example.org"}
    assert chat.values()["email"] == "sam.lee@example.org"  # stored now: the chat said so
    assert text.startswith("Got it — Email: sam.lee@example.org.")
    assert text.endswith('Phone? It is 0113 496 0000 now; say "same" to keep it.')
    assert "complete" not in text
    text = chat.say("same")
    assert chat.tools == []  # nothing more changed
    assert "Before I send it, please check your answers:" in text
    assert chat.values()["email"] == "sam.lee@example.org"


def test_same_for_an_optional_question_gone_over_without_an_answer_leaves_it_empty():
    chat = Chat("client-intake")
    chat.say("hi")
    chat.say("Client type: returning; Age: 40")
    chat.say("Full name: Sam Lee; Email: sam@example.org")
    chat.say("skip")  # no phone
    chat.say("C12345")
    chat.say("yes")  # details changed: back over Contact
    chat.say("same")
    chat.say("same")
    text = chat.say("same")  # at "Phone? Optional"
    assert "wasn't accepted" not in text and "Left out Phone." in text
    assert all(values.get("values", {}).get("phone") is None for _, values in chat.tools)
    assert "Before I send it, please check your answers:" in text
    assert "phone" not in chat.values()


# --------------------------------------------------------------------------- reading replies


@pytest.mark.parametrize(
    ("schema", "text", "value"),
    [
        (int, "40 miles", 40),
        (int, "1,200", 1200),
        (int, "40.0", 40),
        (float, "£900", 900),
        (float, "£1,200.50", 1200.5),
        (bool, "yes", True),
        (bool, "Y", True),
        (bool, "nope", False),
        (bool, "false", False),
        (int, "forty-one", 41),
        ("choice", "Rail", "rail"),
        ("choice", "ai", "air"),
        ("choice", "by car", "car"),
        ("date", "2026-11-03", "2026-11-03"),
        ("date", "3 Nov 2026", "2026-11-03"),
        ("date", "3rd of November, 2026", "2026-11-03"),
        ("date", "November 3, 2026", "2026-11-03"),
        ("email", " <dana@example.org> ", "dana@example.org"),
        (str, '"Dana Reeve"', "Dana Reeve"),
    ],
)
def test_a_reply_is_converted_to_the_fields_type(schema, text, value):
    from datetime import date
    from typing import Literal

    from pydantic import EmailStr

    schema = {"choice": Literal["car", "rail", "air"], "date": date, "email": EmailStr}.get(schema, schema)
    converted = convert_answer(schema, text)
    assert converted == value and type(converted) is type(value)


@pytest.mark.parametrize(
    ("schema", "text", "reason"),
    [
        (int, "forty or fifty", "a single number"),
        (int, "AB1234", "a single number"),
        (int, "between 40 and 50", "a single number"),
        ("choice", "boat", "one of: car, rail or air"),
        (bool, "maybe", "a yes or a no"),
        ("date", "03/11/2026", "day/month or month/day"),
        ("date", "31 Feb 2026", "not a real date"),
        ("date", "tomorrow", "the date itself"),
    ],
)
def test_a_reply_that_cannot_be_read_says_what_is_needed(schema, text, reason):
    from datetime import date
    from typing import Literal

    schema = {"choice": Literal["car", "rail", "air"], "date": date}.get(schema, schema)
    with pytest.raises(UnreadableAnswer, match=re.escape(reason)):
        convert_answer(schema, text)


def test_optional_and_constrained_schemas_convert_like_their_base_type():
    from typing import Annotated

    from pydantic import Field

    assert convert_answer(Annotated[int, Field(ge=1)] | None, "12 miles") == 12
    assert convert_answer(Annotated[float, Field(ge=0)] | None, "£3") == 3


def test_after_an_undo_the_model_did_not_make_a_bare_answer_is_not_taken_for_another_question():
    # The model asked for Destination; the person then ran /undo at the keyboard (a write the
    # model did not make), which emptied Work email and reopened Claimant. A bare answer is only
    # taken for the question shown last: "Leeds" answered Destination, so it goes nowhere, and
    # the model says the form changed and asks the open question (Work email) first.
    chat = Chat("travel-claim")
    claimant_done(chat)
    person = FormRunner(chat.runner.adapter, registry=chat.runner.registry, subject="dana", actor="person")
    person.undo("email")
    reply = chat.say("Leeds")
    assert chat.calls == [] and "email" not in chat.values() and "destination" not in chat.values()
    assert 'The form changed since I asked that, so I haven\'t used "Leeds".' in reply
    assert reply.rstrip().endswith("Work email?")
    chat.say("dana.reeve@example.org")  # now asked: taken for it
    assert chat.values()["email"] == "dana.reeve@example.org"


def test_a_notice_from_the_chat_is_said_back_and_the_open_question_asked_again():
    from formctl.agent.notices import notice_message

    chat = Chat("travel-claim")
    claimant_done(chat)
    FormRunner(chat.runner.adapter, registry=chat.runner.registry, subject="dana", actor="person").undo("email")
    reply = chat.say(notice_message("You used /undo: Work email is empty again."))
    assert chat.calls == []
    assert reply.startswith("You used /undo: Work email is empty again.\nStep 1 of 4: Claimant.")
    assert reply.rstrip().endswith("Work email?")
    chat.say("dana.reeve@example.org")
    assert chat.values()["email"] == "dana.reeve@example.org"


def test_an_answer_to_the_question_just_asked_still_goes_to_it_when_nothing_changed_meanwhile():
    chat = Chat("travel-claim")
    claimant_done(chat)
    chat.say("Leeds")
    assert chat.values()["destination"] == "Leeds"


# --------------------------------------------------------------------------- provenance


def test_each_value_is_quoted_with_the_persons_line_so_it_is_said():
    chat = Chat("travel-claim")
    claimant_done(chat)
    assert chat.quotes == {"email": "dana@example.org"}
    kinds = {f: [r.kind for r in chat.runner.history(f).revisions] for f in ("full_name", "staff_id", "email")}
    assert kinds == {"full_name": ["said"], "staff_id": ["said"], "email": ["said"]}
    [row] = chat.runner.history("staff_id").revisions
    assert (row.quote, row.turn) == ("AB1234", 3)


def test_a_host_only_field_is_never_asked():
    from formctl import define_form

    form = (
        define_form("approval", name="Approval")
        .step("s", title="S")
        .field("approver", str, label="Approver", source="host")
        .field("reason", str, label="Reason")
        .build()
    )
    registry = FormRegistry()
    registry.register("approval", name="Approval", description="", load=lambda: form)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="s")
    model = GuidedModel(ReadOnlyRunner(runner), form_id="approval")
    loop = ChatLoop(runner, model, form_id="approval")
    text = loop.send("hello").text
    assert "Approver" not in text and "Reason" in text
    loop.send("it was urgent")
    assert runner.history("reason").revisions[0].kind == "said"
    assert runner.history("approver").revisions == ()


# --------------------------------------------------------------------------- natural answers


def test_a_natural_answer_is_placed_only_where_its_shape_fits_for_sure():
    from formctl.agent.models.guided.answers import Kind
    from formctl.agent.models.guided.natural import place, split_labels

    staff, email, text, date = (Kind("text", pattern=r"^[A-Z]{2}\d{4}$"), Kind("email"), Kind("text"), Kind("date"))
    kinds = {"staff_id": staff, "email": email, "destination": text}
    placed = place("AB1234, dana@example.com, going to Leeds", "staff_id", kinds)
    assert placed.values == {"staff_id": "AB1234", "email": "dana@example.com"}
    assert placed.leftover == ["going to Leeds"]  # never guessed as a Destination
    # The whole line is the answer: the usual path reads it (and the engine judges a near miss).
    assert place("AB1234", "staff_id", kinds) is None and place("ab1234", "staff_id", kinds) is None
    # Free text goes to the question asked, and only when nothing else answered it.
    assert place("Leeds, dana@example.com", "destination", kinds).values == {
        "email": "dana@example.com",
        "destination": "Leeds",
    }
    assert place("Conference in Leeds, with the team", "destination", kinds) is None  # commas in free text stay
    assert (
        place("£1,200 and dana@example.com", "total", {"total": text, "email": email}).values["email"]
        == "dana@example.com"
    )
    # Two open fields an email address fits: neither is guessed.
    two = place("x, a@b.org", "destination", {"destination": text, "email": email, "other": email})
    assert two.values == {"destination": "x"} and two.leftover == ["a@b.org"]
    assert place("2026-11-03, 2026-11-05", "departure", {"departure": date, "return": date}) is None
    names = {"work email": "email", "email": "email", "staff id": "staff_id"}
    assert split_labels("AB1234, Work email: dana@example.com", names) == ["AB1234", "Work email: dana@example.com"]
    assert split_labels("Staff ID: AB1234", names) == ["Staff ID: AB1234"]
    assert split_labels("re: my trip", names) == ["re: my trip"]
