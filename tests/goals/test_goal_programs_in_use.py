"""Goal programs as support staff use them (issue 40), through the real ``formctl`` command:

- one rule finds a subject's program: a program started ``--key intake`` is the one ``run --program
  client-intake`` walks, ``show`` finds it without ``--key``, and ``run --program intake`` names it too;
  several are listed, never a second one started silently;
- a definition binding an item to a form that is not registered is refused before it is stored;
- a bound item settles with the write that completes its form (a host's fill, a plain chat), with no
  ``program sync`` in between, and an item reopened since stays open.
"""

from __future__ import annotations

import json

import pytest

from clitools import CLAIMANT_AND_TRIP
from fixture_project import CLAIMS_PROGRAM, forms_with_program

SUBJECT = "firm:1/matter:2"


@pytest.fixture(params=["folder", "postgres"])
def store(request, tmp_path) -> str:
    """Every test here runs on the folder store and on PostgreSQL (a throwaway server, tests/pg_server.py)."""
    if request.param == "folder":
        return str(tmp_path / "store")
    return str(request.getfixturevalue("pg_dsn"))


def start_instance(cli, seed, *, subject, form):
    """A new instance in the test's store, whichever it is (what a host's own code does); its id."""
    from formctl import FormRegistry, FormRunner
    from formctl.cli.workspace import open_store

    registry = FormRegistry.from_toml(cli.forms / "registry.toml")
    adapter = open_store(cli.store)
    try:
        return FormRunner(adapter, registry=registry, subject=subject).start(form, seed=seed).view.instance_id
    finally:
        getattr(adapter, "close", lambda: None)()


def items(status):
    return {(g["key"], i["key"]): i for g in status["goals"] for i in g["items"]}


def test_a_program_started_with_a_key_is_the_one_the_chat_walks(cli):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT, "--key", "intake")
    cli.ok("program", "update", "identity", "--completed", "client", "--subject", SUBJECT)

    walked = cli("run", "--program", "client-intake", "--subject", SUBJECT, "--offline", input="")

    assert walked.exit_code == 0, walked.stderr
    assert "started program" not in walked.stdout
    assert "Verify the client" not in walked.stdout  # settled under --key intake: not asked again
    listed = cli.json("program", "list")
    assert [r["scope"]["key"] for r in listed["running"]] == ["intake"]  # no second program
    status = cli.json("program", "show", "--subject", SUBJECT)  # the subject's one program, no --key
    assert status["scope"]["key"] == "intake" and items(status)[("identity", "client")]["disposition"] == "completed"
    by_scope_key = cli("run", "--program", "intake", "--subject", SUBJECT, "--offline", input="")
    assert by_scope_key.exit_code == 0, by_scope_key.stderr
    assert "runs program" not in by_scope_key.stderr


def test_program_start_without_a_key_never_starts_a_second_one(cli):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT, "--key", "intake")

    again = cli("program", "start", "client-intake", "--subject", SUBJECT)

    assert again.exit_code == 1
    assert again.stderr.count("\n") == 1 and "already runs program" in again.stderr and "--key intake" in again.stderr
    assert [r["scope"]["key"] for r in cli.json("program", "list")["running"]] == ["intake"]


def test_several_programs_are_listed_with_how_to_choose_by_every_command(cli):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT, "--key", "intake")
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT, "--key", "second")

    for args in (
        ("program", "show", "--subject", SUBJECT),
        ("program", "show", "--subject", SUBJECT, "--key", "client-intake"),
        ("run", "--program", "client-intake", "--subject", SUBJECT, "--offline"),
    ):
        result = cli(*args, input="")
        assert result.exit_code != 0, args
        assert "several goal programs" in result.stderr, (args, result.stderr)
        assert "--key intake" in result.stderr and "--key second" in result.stderr
    assert cli.json("program", "show", "--subject", SUBJECT, "--key", "second")["scope"]["key"] == "second"
    assert len(cli.json("program", "list")["running"]) == 2


def test_a_revision_binding_an_item_to_a_form_not_registered_is_refused(cli, tmp_path):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)
    status = cli.json("program", "show", "--subject", SUBJECT)
    definition = status["definition"]
    for goal in definition["goals"]:
        for item in goal["items"]:
            if item.get("form") == "client-intake":
                item["form"] = "client-intaek"
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(status))  # what show --json printed, its definition edited

    result = cli("program", "revise", "--from", str(path), "--if-version", "1", "--subject", SUBJECT)

    assert result.exit_code != 0
    assert result.stderr.count("\n") == 1 and '"client-intaek"' in result.stderr and "not registered" in result.stderr
    assert cli.json("program", "show", "--subject", SUBJECT)["version"] == 1  # nothing stored


def test_a_bound_item_settles_when_a_host_write_completes_the_form(cli):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)
    seed = {"client_type": "new", "age": 34, "full_name": "Jo Bloggs", "email": "jo@example.org"}
    iid = start_instance(cli, seed, subject=SUBJECT, form="client-intake")
    cli.ok("fill", iid, "referral=web", "needs=Housing disrepair: the landlord ignores letters.")
    assert items(cli.json("program", "show", "--subject", SUBJECT))[("intake", "form")]["disposition"] == "pending"

    cli.ok("submit", iid)  # the host's write that completes the form (it has a review step)

    settled = items(cli.json("program", "show", "--subject", SUBJECT))[("intake", "form")]
    assert settled["disposition"] == "completed" and settled["instance"] == iid  # no `program sync` ran
    history = cli.json("program", "history", "--subject", SUBJECT)["history"]
    assert history[-1]["change"] == "form"


def test_a_plain_chat_that_completes_the_claim_settles_its_item_and_a_reopening_sticks(cli, tmp_path):
    forms = forms_with_program(tmp_path / "forms", CLAIMS_PROGRAM, "claims", "claims_program:claims")
    desk = cli.at(forms=forms)
    desk.ok("program", "start", "claims", "--subject", "dana")

    lines = [*CLAIMANT_AND_TRIP, "rail", "TR-88231", "skip", "skip", "210", "yes"]
    desk.chat("run", "travel-claim", "--subject", "dana", lines=lines)  # a plain chat, not the program's

    claim = items(desk.json("program", "show", "--subject", "dana"))[("trip", "claim")]
    assert claim["disposition"] == "completed" and claim["instance"] == desk.only_instance()

    desk.ok("program", "update", "trip", "--reopened", "claim", "--subject", "dana", "--reason", "wrong trip")
    desk.ok("program", "sync", "--subject", "dana")  # the older completion does not settle it again
    assert items(desk.json("program", "show", "--subject", "dana"))[("trip", "claim")]["disposition"] == "pending"


def _desk_with(cli, tmp_path, module_text, key="claims", hooks=None):
    """A copy of the example forms with one more program module registered under ``key``, and
    its ``hooks`` (a module's text defining ``hooks``) registered beside it when given."""
    forms = forms_with_program(tmp_path / "forms", module_text, key, "more_program:program")
    if hooks is not None:
        (forms / "claims_hooks.py").write_text(hooks)
        registry = forms / "registry.toml"
        registry.write_text(registry.read_text() + 'hooks = "claims_hooks:hooks"\n')
    return cli.at(forms=forms)


# A program of one goal with one item: the smallest a hook can run for.
TRIP_PROGRAM = (
    'program = define_program("claims", goals=[Goal("trip", title="Trip", items=[Item("check", label="Check")])])\n'
)


def test_check_checks_the_program_registered_under_the_forms_key_too(cli):
    result = cli("check", "client-intake")

    assert result.exit_code == 0, result.stderr
    assert "program client-intake: ok, 3 goal(s), 3 item(s); bound to client-intake (registered)" in result.stdout
    assert "checkpoint" in result.stdout  # the form is still checked
    data = cli.json("check", "client-intake")
    assert data["ok"] is True and data["program"] == {
        "program": "client-intake",
        "ok": True,
        "goals": 3,
        "items": 3,
        "forms": ["client-intake"],
    }


def test_check_fails_a_program_bound_to_a_form_not_registered(cli, tmp_path):
    desk = _desk_with(
        cli,
        tmp_path,
        'program = define_program("client-intake", goals=[Goal("intake", title="Intake", '
        'items=[Item("form", label="Client intake form", form="client-intaek")])])\n',
        key="client-intake",
    )

    result = desk("check", "client-intake")

    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: program client-intake: ") and '"client-intaek"' in result.stderr
    assert "checkpoint" in result.stdout  # the form of the same key was checked as well
    data = json.loads(desk("check", "client-intake", "--json").stdout)
    assert data["ok"] is False and data["program"]["ok"] is False and "client-intaek" in data["program"]["error"]


def test_check_of_a_program_only_key_and_of_a_program_file(cli, tmp_path):
    desk = _desk_with(
        cli,
        tmp_path,
        'program = define_program("claims", goals=[Goal("trip", title="Trip"), Goal("trip", title="Again")])\n',
    )

    twice = desk("check", "claims")
    assert twice.exit_code == 1 and twice.stdout == ""
    assert twice.stderr == 'error: program claims: Program "claims" has two goals keyed "trip".\n'

    typo = tmp_path / "typo.toml"
    typo.write_text(
        'key = "claims"\n[[goals]]\nkey = "trip"\ntitle = "Trip"\nitems = [{ key = "c", label = "C", form = "travel-clam" }]\n'
    )
    result = desk("check", str(typo))
    assert result.exit_code == 1 and '"travel-clam"' in result.stderr and result.stderr.count("\n") == 1
    good = desk("check", str(cli.forms / "client_intake_follow_up.toml"))
    assert good.exit_code == 0 and ": ok, 2 goal(s), 3 item(s)" in good.stdout


def readme_story():
    """The README's returning-client story: its commands, as shell words."""
    import shlex

    from helpers.readme import blocks, section

    (commands,) = blocks(section("Goal programs: an intake across forms and visits"), "sh")
    return [shlex.split(line, comments=True)[1:] for line in commands.strip().splitlines()]


@pytest.mark.parametrize("keyed", [True, False], ids=["as-written", "no-key"])
def test_the_readme_story_with_its_deferred_work_settled_in_the_programs_chat(cli, keyed, tmp_path):
    story = readme_story()
    assert story[-2][:3] == ["program", "update", "updates"] and "--completed" in story[-2]
    for words in story[:-2]:  # up to the visit that settles the documents
        if not keyed and "--key" in words:
            at = words.index("--key")
            words = words[:at] + words[at + 2 :]
        cli.ok(*words)
    before = items(cli.json("program", "show", "--subject", SUBJECT))
    # Each disposition keeps its own reason: the deferral's why is not the completion's.
    assert before[("updates", "documents")]["reason"] == "Will send the documents tomorrow"
    assert "reason" not in before[("updates", "changes")]

    record = tmp_path / "visit.toml"
    walked = cli(
        "run", "--program", "client-intake", "--subject", SUBJECT, "--offline", "--record", str(record),
        input="The documents came in\n",
    )  # fmt: skip

    assert walked.exit_code == 0, walked.stderr
    assert "New documents (deferred: Will send the documents tomorrow): done, later, or not needed?" in walked.stdout
    assert walked.stdout.rstrip().endswith("Program client-intake is complete.")
    assert "started program" not in walked.stdout
    status = cli.json("program", "show", "--subject", SUBJECT)
    assert status["complete"] and status["follow_ups"] == []
    docs = items(status)[("updates", "documents")]
    assert docs["disposition"] == "completed" and docs["reason"] == "Said in the chat: The documents came in"
    last = cli.json("program", "history", "--subject", SUBJECT)["history"][-1]
    assert (last["version"], last["change"], last["source"]) == (5, "update", "chat")
    assert [r["scope"]["key"] for r in cli.json("program", "list")["running"]] == [
        "intake" if keyed else "client-intake"
    ]
    replayed = cli("replay", str(record))  # the walk, recorded whole, replays exactly
    assert replayed.exit_code == 0 and "1 passed, 0 failed" in replayed.stdout, replayed.stdout


def test_deferred_work_answered_later_stays_owed_and_is_asked_once(cli):
    for words in readme_story()[:4]:
        cli.ok(*words)

    later = cli("run", "--program", "intake", "--subject", SUBJECT, "--offline", input="later\n")

    assert later.exit_code == 0, later.stderr
    assert later.stdout.count("done, later, or not needed?") == 1
    assert "Still owed: New documents (Will send the documents tomorrow)." in later.stdout
    assert cli.json("program", "show", "--subject", SUBJECT)["version"] == 4  # nothing to write

    left = cli("run", "--program", "intake", "--subject", SUBJECT, "--offline", input="")
    assert left.exit_code == 0 and "Saved. Carry on with: formctl run --program intake" in left.stdout


def test_each_item_of_an_update_may_keep_its_own_reason(cli):
    for words in readme_story()[:3]:
        cli.ok(*words)

    cli.ok(
        "program", "update", "updates", "--subject", SUBJECT, "--reason", "Second visit",
        "--completed", "changes=Moved house, new landlord", "--deferred", "documents",
    )  # fmt: skip

    by = items(cli.json("program", "show", "--subject", SUBJECT))
    assert by[("updates", "changes")]["reason"] == "Moved house, new landlord"
    assert by[("updates", "documents")]["reason"] == "Second visit"
    assert cli.json("program", "history", "--subject", SUBJECT)["history"][-1]["reason"] == "Second visit"
    bad = cli("program", "update", "updates", "--subject", SUBJECT, "--declined", "documents=")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "ITEM=REASON" in bad.stderr


def test_resume_hooks_runs_the_registered_hooks_not_done_and_leaves_others(cli, tmp_path):
    flag, ledger = tmp_path / "crm-down", tmp_path / "ledger.txt"
    hooks = (
        "import os\n"
        "def on_complete(event):\n"
        f"    if os.path.exists({str(flag)!r}):\n"
        "        raise RuntimeError('the CRM is down')\n"
        f"    with open({str(ledger)!r}, 'a') as f:\n"
        "        f.write(event.idempotency_key + '\\n')\n"
        "hooks = {'on_complete': on_complete}\n"
    )
    desk = _desk_with(cli, tmp_path, TRIP_PROGRAM, hooks=hooks)
    flag.touch()
    desk.ok("program", "start", "claims", "--subject", "dana")
    update = desk("program", "update", "trip", "--completed", "check", "--subject", "dana")

    assert (
        update.exit_code == 0
        and "the complete hook of goal trip failed (RuntimeError: the CRM is down" in update.stderr
    )

    again = desk("program", "resume-hooks")
    assert again.exit_code == 1
    assert again.stdout == "dana / claims: 1 failed\n"
    assert again.stderr.count("\n") == 1
    assert again.stderr.startswith(
        "error: dana / claims: the complete hook of goal trip failed again (RuntimeError: the CRM is down"
    )

    flag.unlink()
    resumed = desk("program", "resume-hooks", "--subject", "dana", "--key", "claims")
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.stdout == "dana / claims: 1 ok\n"
    (ran,) = ledger.read_text().splitlines()
    assert ran.endswith(":2:trip:complete")  # the idempotency key of the one transition
    assert desk("program", "resume-hooks", "--subject", "dana").stdout == "dana / claims: no hooks to run\n"
    data = desk.json("program", "resume-hooks")
    assert data["scopes"][0]["program"] == "claims" and data["scopes"][0]["outcomes"] == []


def test_resume_hooks_leaves_the_hooks_of_a_program_that_registers_none(cli, request):
    from formctl import GoalRunner, GoalScope
    from formctl.cli.workspace import open_store

    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)

    def boom(event):
        raise RuntimeError("host down")

    adapter = open_store(cli.store)
    request.addfinalizer(getattr(adapter, "close", lambda: None))
    host = GoalRunner(adapter, scope=GoalScope(subject=SUBJECT, key="client-intake"), hooks={"on_complete": boom})
    host.update(goal="identity", completed=["client"])
    assert host.last_hooks[0].status == "failed"

    result = cli("program", "resume-hooks", "--subject", SUBJECT)

    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        f"{SUBJECT} / client-intake: 1 hook(s) not done, left: program client-intake registers no hooks\n"
    )
    assert [o.status for o in host.resume_hooks()] == ["failed"]  # still the host's to run
    bad = cli("program", "resume-hooks", "--key", "intake")
    assert bad.exit_code == 2 and bad.stderr == "error: --key needs --subject (whose program).\n"


def test_a_write_runs_the_hooks_of_the_forms_folder_named_by_the_flag(cli, tmp_path):
    """``program update --forms DIR`` runs the hooks DIR registers, as FORMCTL_FORMS would."""
    ledger = tmp_path / "ledger.txt"
    hooks = (
        "def on_complete(event):\n"
        f"    with open({str(ledger)!r}, 'a') as f:\n"
        "        f.write(event.idempotency_key + '\\n')\n"
        "hooks = {'on_complete': on_complete}\n"
    )
    desk = _desk_with(cli, tmp_path, TRIP_PROGRAM, hooks=hooks)
    elsewhere = {"FORMCTL_FORMS": str(cli.forms)}  # the environment names the plain example forms
    flag = ("--forms", str(desk.forms))
    cli.ok("program", "start", "claims", "--subject", "dana", *flag, env=elsewhere)

    cli.ok("program", "update", "trip", "--completed", "check", "--subject", "dana", *flag, env=elsewhere)

    (ran,) = ledger.read_text().splitlines()
    assert ran.endswith(":trip:complete")
