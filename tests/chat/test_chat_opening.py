"""Opening a chat is when recovery happens: reads never re-run a hook, the chat does, once.

And the conversation's instance is an explicit default the chat hands its runners, not
whatever the subject touched last.
"""

from __future__ import annotations

import socket
import textwrap

import pytest

from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.cli.chat import ChatOptions, ChatSession
from formctl.forms.instance import DispatchState, Provenance, now_iso
from helpers.processes import dead_pid

WATCH_FORM = textwrap.dedent(
    """
    from formctl import Patch, define_form

    def _derive(ctx):
        return Patch({"derived": "from " + ctx.values["trigger"]})

    watch = (
        define_form("watch", version=1, name="Watch")
        .step("s", title="S")
        .field("trigger", str, label="Trigger", on_fill=_derive)
        .field("derived", str | None, label="Derived")
        .field("other", str, label="Other")
        .build()
    )
    other = define_form("other", version=1, name="Other").step("s", title="S").field("x", str, label="X").build()
    """
)


@pytest.fixture
def project(tmp_path):
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "watch_form.py").write_text(WATCH_FORM)
    (forms / "registry.toml").write_text(
        '[forms.watch]\nname = "Watch"\nmodule = "watch_form:watch"\n'
        '[forms.other]\nname = "Other"\nmodule = "watch_form:other"\n'
    )
    return forms, tmp_path / "store"


@pytest.mark.e2e
def test_the_chat_re_runs_a_hook_a_dead_process_left_running_when_it_opens(project):
    forms, store = project
    runner = FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(forms / "registry.toml"), subject="s1")
    iid = runner.start("watch", seed={"trigger": "t"}).instance_id
    runner.retract("derived")
    key = f"{iid}:field:trigger:1"
    runner.adapter.record_dispatch(
        iid,
        key,
        DispatchState("field:trigger", "running", 1, now_iso(), owner=f"{socket.gethostname()}:{dead_pid()}"),
        Provenance("test", "crashed-process", now_iso()),
    )
    runner.tier0()
    runner.status()
    assert "derived" not in runner.open_instance(iid).in_force_values()  # reads re-run nothing

    session = ChatSession.open(
        ChatOptions(form="watch", subject="s1", offline=True, store=str(store), forms=str(forms))
    )
    try:
        assert session.instance_id == iid
        stored = runner.open_instance(iid)
        assert stored.in_force_values()["derived"] == "from t"
        assert (stored.dispatches[key].status, stored.dispatches[key].attempts) == ("ok", 2)
    finally:
        session.close()


def test_the_chats_runners_act_on_the_conversations_instance_not_the_subjects_latest(project):
    forms, store = project
    registry = FormRegistry.from_toml(forms / "registry.toml")
    runner = FormRunner(JsonFileAdapter(store), registry=registry, subject="s1")
    first = runner.start("watch", seed={"trigger": "a"}).instance_id

    session = ChatSession.open(
        ChatOptions(form="watch", subject="s1", offline=True, store=str(store), forms=str(forms), instance_id=first)
    )
    try:
        runner.start("other", seed={"x": "b"})  # another instance, touched later
        assert runner.open_instance().id != first
        assert session.agent.open_instance().id == first
        assert session.person.status().instance_id == first
        assert session.status_lines()[0].startswith("[form: watch]")
        session.person.abandon("done", instance_id=first)
        assert session.agent.open_instance() is None  # the conversation's instance is closed
    finally:
        session.close()
