"""JsonFileAdapter: the store contract over real files, and what happens when files or disks fail.

The contract tests run over all three adapters (``MemoryAdapter`` is the reference, and
``PostgresAdapter`` runs on a throwaway server, see ``pg_server.py``), so they cannot drift apart; the rest pin the durable store's own promises: its on-disk shape,
compare-and-set across adapters, private files, corrupt and truncated files, a full
disk, a read-only folder, and the index.
"""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest

from formctl.errors import ConflictError, NotFoundError, ProvenanceError, StoreDamagedError, StoreError
from formctl.forms.instance import (
    Commit,
    DispatchState,
    Entry,
    EntryCommit,
    FieldLog,
    Instance,
    Provenance,
    instance_to_json,
    now_iso,
)
from formctl.store import (
    _durable,
    postgres,  # noqa: F401  (imported before the clock fixture, which patches its now_iso)
)
from formctl.store.base import FormAdapter
from formctl.store.jsonfile import JsonFileAdapter, StoreReport, commit_from_json, commit_to_json
from formctl.store.memory import MemoryAdapter


def prov(note: str | None = None) -> Provenance:
    return Provenance("test", "tester", now_iso(), note)


def fill(adapter: FormAdapter, instance: Instance, field: str, value: object) -> Instance:
    """Commit one revision of ``field``, the way the runner does a one-field fill."""
    seq = instance.revision_seq + 1
    commit = Commit(entries={field: EntryCommit((Entry(seq, value, prov()),))}, revision_seq=seq)
    return adapter.commit_instance(instance.id, commit, if_version=instance.version, provenance=prov())


def values(instance: Instance) -> dict:
    return instance.in_force_values()


def _bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def files_of(store) -> dict[str, bytes]:
    folder = os.path.join(store, "instances")
    return {name: _bytes(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}


# Every write one second after the last, so "most recent first" never rests on a tie.
pytestmark = pytest.mark.usefixtures("clock")


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def adapter(request, tmp_path):
    """The contract's three adapters (the runner tests elsewhere use conftest's two)."""
    if request.param == "memory":
        return MemoryAdapter()
    if request.param == "postgres":  # a fresh schema on the session's server (tests/pg_server.py)
        return request.getfixturevalue("pg_adapter")
    return JsonFileAdapter(tmp_path / "store")


# --------------------------------------------------------------------------- the contract, over both adapters


def test_both_adapters_implement_the_protocol(adapter):
    assert isinstance(adapter, FormAdapter)
    assert isinstance(adapter.identifier, str) and adapter.identifier


def test_a_new_instance_starts_at_version_1_with_the_highest_seq_given(adapter):
    p = prov()
    entries = {"name": FieldLog((Entry(3, "Ada", p), Entry(7, "Ada L", p)), 1)}
    created = adapter.create_instance("travel", 2, "alice", p, entries=entries, status="active")
    assert (created.version, created.revision_seq, created.def_version) == (1, 7, 2)
    assert created.created_at == created.updated_at
    assert created.occurrences == {} and created.dispatches == {}
    assert adapter.get_instance(created.id) == created


def test_a_commit_appends_revisions_and_bumps_the_version(adapter):
    inst = adapter.create_instance("travel", 1, "alice", prov())
    inst = fill(adapter, inst, "name", "Ada")
    inst = fill(adapter, inst, "name", "Ada Lovelace")
    stored = adapter.get_instance(inst.id)
    assert stored.version == 3
    assert [e.value for e in stored.entries["name"].revisions] == ["Ada", "Ada Lovelace"]
    assert stored.entries["name"].cursor == 1
    assert stored.revision_seq == 2


def test_a_cursor_move_keeps_every_revision(adapter):
    inst = adapter.create_instance("travel", 1, "alice", prov())
    inst = fill(adapter, inst, "name", "Ada")
    inst = fill(adapter, inst, "name", "Bob")
    undo = Commit(entries={"name": EntryCommit((), cursor=0)})
    inst = adapter.commit_instance(inst.id, undo, if_version=inst.version, provenance=prov())
    stored = adapter.get_instance(inst.id)
    assert len(stored.entries["name"].revisions) == 2
    assert values(stored) == {"name": "Ada"}


def test_a_stale_version_is_refused_and_changes_nothing(adapter):
    inst = adapter.create_instance("travel", 1, "alice", prov())
    fill(adapter, inst, "name", "Ada")
    with pytest.raises(ConflictError) as caught:
        fill(adapter, inst, "name", "Bob")  # still holds version 1
    assert (caught.value.expected, caught.value.actual) == (1, 2)
    assert values(adapter.get_instance(inst.id)) == {"name": "Ada"}


def test_a_commit_lands_all_its_parts_together(adapter):
    inst = adapter.create_instance("travel", 1, "alice", prov())
    state = DispatchState("policy-cap", "ok", 1, now_iso())
    commit = Commit(
        entries={"a": EntryCommit((Entry(1, 1, prov()),)), "b": EntryCommit((Entry(2, "x", prov(), error="bad"),))},
        revision_seq=2,
        occurrences={"policy-cap": 1},
        dispatches={"k": state},
        status="awaiting",
        blocked_on="policy-cap",
        open_step_override="travel",
    )
    new = adapter.commit_instance(inst.id, commit, if_version=1, provenance=prov())
    stored = adapter.get_instance(inst.id)
    assert stored == new
    assert (stored.status, stored.blocked_on, stored.open_step_override) == ("awaiting", "policy-cap", "travel")
    assert stored.occurrences == {"policy-cap": 1} and stored.dispatches == {"k": state}
    assert stored.entries["b"].revisions[0].error == "bad"
    cleared = adapter.commit_instance(
        inst.id, Commit(blocked_on=None, status="active"), if_version=2, provenance=prov()
    )
    assert cleared.blocked_on is None and adapter.get_instance(inst.id).blocked_on is None


def test_reads_return_copies(adapter):
    inst = adapter.create_instance("travel", 1, "alice", prov())
    inst = fill(adapter, inst, "name", "Ada")
    got = adapter.get_instance(inst.id)
    got.entries["name"] = FieldLog()
    got.occurrences["x"] = 9
    got.status = "abandoned"
    inst.entries.clear()
    again = adapter.get_instance(inst.id)
    assert values(again) == {"name": "Ada"} and again.occurrences == {} and again.status == "active"
    listed = adapter.find_instances(subject="alice")[0]
    listed.entries.clear()
    assert values(adapter.find_latest_unclosed("alice")) == {"name": "Ada"}


def test_record_dispatch_does_not_bump_the_version_or_break_a_commit(adapter):
    inst = adapter.create_instance("travel", 1, "alice", prov())
    adapter.record_dispatch(inst.id, "i:h:1", DispatchState("h", "running", 1, now_iso(), owner="host:1"), prov())
    stored = adapter.get_instance(inst.id)
    assert stored.version == 1 and stored.dispatches["i:h:1"].status == "running"
    fill(adapter, inst, "name", "Ada")  # if_version=1 still holds
    adapter.record_dispatch(inst.id, "i:h:1", DispatchState("h", "ok", 1, now_iso()), prov())
    stored = adapter.get_instance(inst.id)
    assert stored.version == 2 and stored.dispatches["i:h:1"].status == "ok" and values(stored) == {"name": "Ada"}


def test_unknown_and_malformed_ids_are_not_found(adapter):
    for bad in ("form_zzzzzzzz_zzzzzz", "../../etc/passwd", "form_1_abc/../x", "", "FORM_1_ABCDEF"):
        assert adapter.get_instance(bad) is None
        with pytest.raises(NotFoundError):
            adapter.commit_instance(bad, Commit(status="active"), if_version=1, provenance=prov())
        with pytest.raises(NotFoundError):
            adapter.record_dispatch(bad, "k", DispatchState("h", "ok", 1, now_iso()), prov())


def test_writes_without_provenance_are_refused(adapter):
    with pytest.raises(ProvenanceError):
        adapter.create_instance("travel", 1, "alice", None)  # type: ignore[arg-type]
    inst = adapter.create_instance("travel", 1, "alice", prov())
    with pytest.raises(ProvenanceError):
        adapter.commit_instance(inst.id, Commit(status="active"), if_version=1, provenance="me")  # type: ignore[arg-type]


def test_find_filters_orders_most_recent_first_and_limits_last(adapter):
    a1 = adapter.create_instance("travel", 1, "alice", prov())
    b1 = adapter.create_instance("intake", 1, "bob", prov())
    a2 = adapter.create_instance("intake", 1, "alice", prov())
    a1 = fill(adapter, a1, "name", "Ada")  # now the most recently updated
    adapter.commit_instance(b1.id, Commit(status="abandoned"), if_version=1, provenance=prov())
    ids = lambda rows: [i.id for i in rows]  # noqa: E731
    assert ids(adapter.find_instances(subject="alice")) == [a1.id, a2.id]
    assert ids(adapter.find_instances(def_id="intake")) == [b1.id, a2.id]
    assert ids(adapter.find_instances(status="abandoned")) == [b1.id]
    assert ids(adapter.find_instances(subject="alice", def_id="intake")) == [a2.id]
    assert ids(adapter.find_instances(limit=2)) == [b1.id, a1.id]
    assert len(adapter.find_instances()) == 3 and len(adapter.find_instances(limit=0)) == 3
    assert adapter.find_instances(subject="nobody") == []


def test_the_open_form_is_the_most_recent_one_not_abandoned(adapter):
    first = adapter.create_instance("travel", 1, "alice", prov())
    second = adapter.create_instance("travel", 1, "alice", prov())
    assert adapter.find_latest_unclosed("alice").id == second.id
    adapter.commit_instance(second.id, Commit(status="abandoned"), if_version=1, provenance=prov())
    assert adapter.find_latest_unclosed("alice").id == first.id
    adapter.commit_instance(first.id, Commit(status="complete"), if_version=1, provenance=prov())
    assert adapter.find_latest_unclosed("alice").id == first.id  # complete is not abandoned
    adapter.commit_instance(first.id, Commit(status="abandoned"), if_version=2, provenance=prov())
    assert adapter.find_latest_unclosed("alice") is None
    assert adapter.find_latest_unclosed("bob") is None


# --------------------------------------------------------------------------- the durable store itself


def test_instances_survive_a_new_adapter_exactly(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    for n in range(5):
        inst = fill(a, inst, f"f{n % 2}", {"n": n, "text": "ünïcode\nline"})
    a.record_dispatch(inst.id, "k", DispatchState("h", "failed", 2, now_iso(), error="boom"), prov())
    reopened = JsonFileAdapter(store).get_instance(inst.id)
    assert instance_to_json(reopened) == instance_to_json(a.get_instance(inst.id))
    assert reopened.version == 6 and reopened.dispatches["k"].error == "boom"


def test_the_instance_file_has_the_documented_shape(store):
    a = JsonFileAdapter(store, compact_after=2)
    inst = a.create_instance("travel", 1, "alice", prov())
    path = os.path.join(store, "instances", f"{inst.id}.json")
    doc = json.loads(_bytes(path))
    assert doc["format"] == 1 and doc["version"] == 1 and doc["updated_at"] == inst.updated_at
    assert doc["instance"]["id"] == inst.id
    inst = fill(a, inst, "name", "Ada")
    inst = fill(a, inst, "name", "Bob")  # the second journal record folds into a new snapshot
    doc = json.loads(_bytes(path))
    assert doc["version"] == 3 and doc["instance"]["version"] == 3
    assert not os.path.exists(os.path.join(store, "instances", f"{inst.id}.journal"))


def test_files_and_folders_are_private(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    fill(a, inst, "name", "Ada")
    paths = [store]
    for folder, dirs, files in os.walk(store):
        paths += [os.path.join(folder, d) for d in dirs] + [os.path.join(folder, f) for f in files]
    for path in paths:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == (0o700 if os.path.isdir(path) else 0o600), (path, oct(mode))


def test_compare_and_set_holds_between_two_adapters(store):
    mine, theirs = JsonFileAdapter(store), JsonFileAdapter(store)
    inst = mine.create_instance("travel", 1, "alice", prov())
    seen_by_them = theirs.get_instance(inst.id)
    fill(mine, inst, "name", "Ada")
    with pytest.raises(ConflictError):
        fill(theirs, seen_by_them, "name", "Bob")
    assert theirs.conflicts == 1 and mine.conflicts == 0
    fresh = theirs.get_instance(inst.id)
    assert values(fresh) == {"name": "Ada"} and fresh.version == 2
    fill(theirs, fresh, "name", "Bob")
    assert values(mine.get_instance(inst.id)) == {"name": "Bob"}


def test_a_reader_sees_other_adapters_commits_and_compactions(store):
    writer, reader = JsonFileAdapter(store, compact_after=3), JsonFileAdapter(store)
    inst = writer.create_instance("travel", 1, "alice", prov())
    for n in range(10):
        inst = fill(writer, inst, "n", n)
        seen = reader.get_instance(inst.id)
        assert seen.version == inst.version and values(seen) == {"n": n}
        assert len(seen.entries["n"].revisions) == n + 1
    assert reader.find_latest_unclosed("alice").version == 11


def test_the_commit_codec_round_trips():
    p, q = prov("why"), Provenance("cli", "finance", now_iso())
    commit = Commit(
        entries={
            "a": EntryCommit((Entry(1, {"x": [1, 2]}, p), Entry(2, None, q, retracted=True)), cursor=0),
            "b": EntryCommit((Entry(3, "zz", p, error="too short"),)),
        },
        revision_seq=3,
        occurrences={"step:one": 2},
        dispatches={"k": DispatchState("h", "running", 1, now_iso(), owner="host:9")},
        blocked_on=None,
        completed_at="2026-01-01T00:00:00.000Z",
        forced_complete=True,
    )
    back = commit_from_json(json.loads(json.dumps(commit_to_json(commit))))
    assert back == commit


# --------------------------------------------------------------------------- damaged files


def _instance_files(store, inst):
    base = os.path.join(store, "instances", inst.id)
    return base + ".json", base + ".journal"


def test_a_truncated_instance_file_is_reported_by_name_and_left_alone(store):
    a = JsonFileAdapter(store)
    good = a.create_instance("travel", 1, "bob", prov())
    bad = a.create_instance("travel", 1, "alice", prov())
    snapshot, _ = _instance_files(store, bad)
    data = _bytes(snapshot)
    with open(snapshot, "wb") as f:
        f.write(data[: len(data) // 2])
    before = files_of(store)

    fresh = JsonFileAdapter(store)
    with pytest.raises(StoreError) as caught:
        fresh.get_instance(bad.id)
    assert snapshot in caught.value.message and "not valid JSON" in caught.value.message
    assert caught.value.code == "store_error"
    with pytest.raises(StoreError):
        fill(fresh, bad, "name", "Ada")
    with pytest.raises(StoreError):
        fresh.find_latest_unclosed("alice")  # never answers with an older form, or none
    # Other instances keep working, and listings leave the damaged one out.
    assert values(fill(fresh, good, "name", "Bob")) == {"name": "Bob"}
    assert [i.id for i in fresh.find_instances()] == [good.id]
    after = files_of(store)
    assert after[f"{bad.id}.json"] == before[f"{bad.id}.json"]  # never overwritten
    report = fresh.check()
    assert not report.ok and [p.path for p in report.problems] == [snapshot]
    assert "truncated or corrupt" in report.problems[0].message


def test_an_empty_or_foreign_file_is_reported(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    snapshot, _ = _instance_files(store, inst)
    open(snapshot, "wb").close()
    with pytest.raises(StoreError, match="empty"):
        JsonFileAdapter(store).get_instance(inst.id)
    with open(snapshot, "w") as f:
        json.dump({"format": 1, "version": 1, "instance": {"id": inst.id}}, f)
    with pytest.raises(StoreError, match="malformed"):
        JsonFileAdapter(store).get_instance(inst.id)


def test_an_unknown_format_is_refused_with_a_clear_message(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    snapshot, _ = _instance_files(store, inst)
    doc = json.loads(_bytes(snapshot))
    doc["format"] = 2
    with open(snapshot, "w") as f:
        json.dump(doc, f)
    with pytest.raises(StoreError) as caught:
        JsonFileAdapter(store).get_instance(inst.id)
    message = caught.value.message
    assert snapshot in message and "format 2" in message and "format 1 only" in message


def test_a_torn_last_journal_line_is_ignored_and_cut_off_by_the_next_commit(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    inst = fill(a, inst, "name", "Ada")
    _, journal = _instance_files(store, inst)
    with open(journal, "ab") as f:
        f.write(b'0badc0de {"s":2,"v":3,"at":"x","c":{"entr')  # power lost mid-append
    fresh = JsonFileAdapter(store)
    assert fresh.get_instance(inst.id).version == 2
    assert fresh.check().ok
    inst = fill(fresh, fresh.get_instance(inst.id), "name", "Bob")
    assert inst.version == 3
    assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Bob"}
    lines = _bytes(journal).splitlines()
    assert len(lines) == 3 and b"0badc0de" not in b"".join(lines)  # header, Ada, Bob: the torn bytes are gone


def test_zero_bytes_at_the_journal_tail_are_a_torn_append(store):
    a = JsonFileAdapter(store)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    _, journal = _instance_files(store, inst)
    with open(journal, "ab") as f:
        f.write(b"\0" * 300)
    assert JsonFileAdapter(store).get_instance(inst.id).version == 2


def test_a_damaged_journal_line_before_a_good_one_is_corruption(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    for value in ("Ada", "Bob", "Cy"):
        inst = fill(a, inst, "name", value)
    _, journal = _instance_files(store, inst)
    lines = _bytes(journal).splitlines(keepends=True)
    lines[2] = lines[2].replace(b"Bob", b"Rob")  # the checksum no longer matches
    with open(journal, "wb") as f:
        f.write(b"".join(lines))
    damaged = _bytes(journal)
    fresh = JsonFileAdapter(store)
    # Reads still work, as of the record before the damage, and say what is wrong.
    read = fresh.get_instance(inst.id)
    assert read.version == 2 and values(read) == {"name": "Ada"}
    damage = fresh.damage(inst.id)
    assert damage.path == journal and "line 3" in damage.reason and "checksum" in damage.reason
    assert damage.lost == (3, 4)
    with pytest.raises(StoreDamagedError) as caught:
        fill(fresh, read, "name", "Dee")
    assert caught.value.code == "store_damaged" and inst.id in caught.value.message and "3-4" in caught.value.message
    assert _bytes(journal) == damaged
    assert [p.path for p in fresh.check().problems] == [journal]


def test_a_missing_journal_record_is_corruption(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    for value in ("Ada", "Bob", "Cy"):
        inst = fill(a, inst, "name", value)
    _, journal = _instance_files(store, inst)
    lines = _bytes(journal).splitlines(keepends=True)
    with open(journal, "wb") as f:
        f.write(b"".join(lines[:2] + lines[3:]))
    fresh = JsonFileAdapter(store)
    assert values(fresh.get_instance(inst.id)) == {"name": "Ada"}
    assert "a record is missing" in fresh.damage(inst.id).reason
    assert fresh.damage(inst.id).lost == (3, 4)


def _three_answers(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    for value in ("Ada", "Bob", "Cy"):
        inst = fill(a, inst, "name", value)
    a.close()
    return inst


def _cut_last_line(journal):
    lines = _bytes(journal).splitlines(keepends=True)
    with open(journal, "wb") as f:
        f.write(b"".join(lines[:-1]))


def _empty(journal):
    open(journal, "wb").close()


def _corrupt_last_record(journal):
    data = bytearray(_bytes(journal))
    data[-5] ^= 0x20  # a bit flipped inside the last record's JSON
    _write(journal, bytes(data))


@pytest.mark.parametrize("harm, holds", [(_cut_last_line, 3), (_empty, 1), (_corrupt_last_record, 3)])
def test_acknowledged_versions_gone_from_the_journal_are_damage_until_repaired(store, harm, holds):
    inst = _three_answers(store)
    snapshot, journal = _instance_files(store, inst)
    harm(journal)
    harmed = {p: _bytes(p) for p in (snapshot, journal)}
    a = JsonFileAdapter(store)
    read = a.get_instance(inst.id)
    assert read.version == holds
    damage = a.damage(inst.id)
    assert damage is not None and damage.lost == (holds + 1, 4) and damage.holds_version == holds
    assert damage.to_dict()["missing_versions"] == {"from": holds + 1, "to": 4}
    with pytest.raises(StoreDamagedError):
        fill(a, read, "name", "Dee")
    with pytest.raises(StoreDamagedError):
        a.record_dispatch(inst.id, "k", DispatchState("h", "ok", 1, now_iso()), prov())
    assert {p: _bytes(p) for p in (snapshot, journal)} == harmed  # the evidence is untouched
    assert not a.check().ok and a.reindex().problems  # reindex keeps the evidence too
    assert JsonFileAdapter(store).damage(inst.id).lost == (holds + 1, 4)

    done = a.repair(inst.id, by="sam")
    assert done.lost == (holds + 1, 4) and done.by == "sam" and done.version == 5
    kept = os.path.join(store, done.kept)
    assert _bytes(os.path.join(kept, os.path.basename(snapshot))) == harmed[snapshot]
    assert _bytes(os.path.join(kept, os.path.basename(journal))) == harmed[journal]
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o700
    assert a.damage(inst.id) is None and a.repair(inst.id, by="sam") is None
    fresh = JsonFileAdapter(store)
    assert fresh.check().ok and fresh.damage(inst.id) is None
    [record] = fresh.repairs(inst.id)
    assert record["by"] == "sam" and record["lost"] == [holds + 1, 4] and record["at"]
    after = fill(fresh, fresh.get_instance(inst.id), "name", "Dee")
    assert after.version == 6 and values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Dee"}
    assert JsonFileAdapter(store).check().ok
    assert JsonFileAdapter(store, compact_after=1).repairs(inst.id) == (record,)


def test_a_repair_survives_compaction(store):
    inst = _three_answers(store)
    _, journal = _instance_files(store, inst)
    _cut_last_line(journal)
    a = JsonFileAdapter(store, compact_after=2)
    a.repair(inst.id, by="sam")
    current = a.get_instance(inst.id)
    for value in ("x", "y", "z"):
        current = fill(a, current, "name", value)
    assert [r["by"] for r in JsonFileAdapter(store).repairs(inst.id)] == ["sam"]
    assert JsonFileAdapter(store).check().ok


def test_a_torn_unacknowledged_last_record_is_not_damage(store):
    a = JsonFileAdapter(store)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    _, journal = _instance_files(store, inst)
    with open(journal, "ab") as f:  # a whole record whose writer died before its index row
        f.write(b'0badc0de {"s":2,"v":3,"at":"x","c":{}}\n')
    assert JsonFileAdapter(store).damage(inst.id) is None
    assert fill(JsonFileAdapter(store), inst, "name", "Bob").version == 3


# --------------------------------------------------------------------------- failing disks


def _fail_writes(monkeypatch, err: int, *, after_bytes: int = 0):
    """Make every write fail with ``err``, after writing ``after_bytes`` of it (a partial write)."""
    real = _durable.write_all

    def failing(fd, data):
        if after_bytes:
            real(fd, data[:after_bytes])
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(_durable, "write_all", failing)
    return real


def test_a_full_disk_during_a_commit_keeps_the_previous_version(store, monkeypatch):
    a = JsonFileAdapter(store)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    _, journal = _instance_files(store, inst)
    size = os.path.getsize(journal)
    real = _durable.write_all
    calls = []

    def full_on_journal(fd, data):
        if b'"Bob"' in data:  # the journal record (the index marker before it goes through)
            calls.append(data)
            real(fd, data[:20])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(_durable, "write_all", full_on_journal)
    with pytest.raises(StoreError) as caught:
        fill(a, inst, "name", "Bob")
    assert calls and "disk is full" in caught.value.message and journal in caught.value.message
    assert "previous version is intact" in caught.value.message
    assert os.path.getsize(journal) == size  # the partial record was taken back
    assert values(a.get_instance(inst.id)) == {"name": "Ada"}
    assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Ada"}
    monkeypatch.setattr(_durable, "write_all", real)
    assert fill(a, a.get_instance(inst.id), "name", "Bob").version == 3
    assert JsonFileAdapter(store).check().ok


def test_an_fsync_error_during_a_commit_keeps_the_previous_version(store, monkeypatch):
    a = JsonFileAdapter(store)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")

    def eio(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(_durable, "sync_data", eio)
    with pytest.raises(StoreError, match="Input/output error"):
        fill(a, inst, "name", "Bob")
    monkeypatch.undo()
    assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Ada"}
    assert a.get_instance(inst.id).version == 2
    assert JsonFileAdapter(store).find_latest_unclosed("alice").version == 2


def test_a_full_disk_while_creating_leaves_no_instance(store, monkeypatch):
    a = JsonFileAdapter(store)
    a.create_instance("travel", 1, "bob", prov())
    before = files_of(store)
    real = _durable.write_all

    def full_on_snapshot(fd, data):
        if b'"format":1,"version"' in data:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(_durable, "write_all", full_on_snapshot)
    with pytest.raises(StoreError, match="disk is full"):
        a.create_instance("travel", 1, "alice", prov())
    monkeypatch.undo()
    assert files_of(store) == before  # no half-written instance, no temporary file
    assert a.find_latest_unclosed("alice") is None
    assert JsonFileAdapter(store).find_latest_unclosed("alice") is None
    assert JsonFileAdapter(store).check().ok


def test_a_failed_compaction_does_not_fail_the_commit(store, monkeypatch):
    a = JsonFileAdapter(store, compact_after=2)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")

    def full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_durable, "replace_atomically", full)
    inst = fill(a, inst, "name", "Bob")  # would compact now
    monkeypatch.undo()
    assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Bob"}
    inst = fill(a, inst, "name", "Cy")  # compacts this time
    _, journal = _instance_files(store, inst)
    assert not os.path.exists(journal)
    assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Cy"}


def test_a_value_that_is_not_json_is_refused_before_anything_is_written(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    with pytest.raises(StoreError, match="cannot be stored as JSON"):
        fill(a, inst, "when", object())
    assert a.get_instance(inst.id).version == 1
    assert fill(a, inst, "when", "today").version == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_a_read_only_store_folder_gives_a_clear_error(store):
    a = JsonFileAdapter(store)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    folder = os.path.join(store, "instances")
    os.chmod(folder, 0o500)
    os.chmod(store, 0o500)
    try:
        with pytest.raises(StoreError, match="read-only"):
            a.create_instance("travel", 1, "bob", prov())
        assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Ada"}
    finally:
        os.chmod(store, 0o700)
        os.chmod(folder, 0o700)


def test_a_read_only_store_gives_a_clear_error_and_still_reads(store, monkeypatch):
    a = JsonFileAdapter(store)
    inst = fill(a, a.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    os.unlink(os.path.join(store, "lock"))
    real_open = _durable.open_private

    def read_only(path, flags):  # what a read-only mount answers (root ignores chmod)
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, flags)

    monkeypatch.setattr(_durable, "open_private", read_only)
    fresh = JsonFileAdapter(store)
    assert values(fresh.get_instance(inst.id)) == {"name": "Ada"}
    assert fresh.find_latest_unclosed("alice").id == inst.id
    for write in (
        lambda: fresh.create_instance("travel", 1, "bob", prov()),
        lambda: fill(fresh, inst, "name", "Bob"),
        lambda: fresh.reindex(),
    ):
        with pytest.raises(StoreError) as caught:
            write()
        assert "read-only" in caught.value.message and "\n" not in caught.value.message
    monkeypatch.undo()
    assert values(JsonFileAdapter(store).get_instance(inst.id)) == {"name": "Ada"}


def test_a_store_folder_that_does_not_exist_reads_as_empty_and_is_created_on_first_write(tmp_path):
    store = tmp_path / "a" / "b"
    a = JsonFileAdapter(store)
    assert a.get_instance("form_1_abcdef") is None
    assert a.find_instances() == [] and a.find_latest_unclosed("alice") is None
    assert not store.exists()
    a.create_instance("travel", 1, "alice", prov())
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o700


# --------------------------------------------------------------------------- the index


def _populate(store, n=6):
    a = JsonFileAdapter(store)
    made = []
    for k in range(n):
        inst = a.create_instance("travel" if k % 2 else "intake", 1, f"s{k % 3}", prov())
        made.append(fill(a, inst, "name", f"v{k}"))
    a.commit_instance(made[0].id, Commit(status="abandoned"), if_version=2, provenance=prov())
    return a, made


def _index(store):
    return os.path.join(store, "index.jsonl")


def _answers(a):
    return (
        [i.id for i in a.find_instances()],
        [i.id for i in a.find_instances(status="abandoned")],
        {s: getattr(a.find_latest_unclosed(s), "id", None) for s in ("s0", "s1", "s2", "s9")},
    )


def test_a_deleted_index_is_rebuilt_from_the_instance_files(store):
    a, _ = _populate(store)
    expected = _answers(a)
    os.remove(_index(store))
    assert _answers(JsonFileAdapter(store)) == expected
    assert _answers(a) == expected
    assert JsonFileAdapter(store).check().ok


def test_an_index_from_before_a_restart_is_rebuilt(store):
    a, _ = _populate(store)
    expected = _answers(a)
    # A machine crash loses unsynced appends: drop the rows, and mark the header.
    path = _index(store)
    lines = _bytes(path).splitlines(keepends=True)
    header = json.loads(lines[0])
    header["boot"] = "another-boot"
    with open(path, "wb") as f:
        f.write(json.dumps(header).encode() + b"\n")
    fresh = JsonFileAdapter(store)
    assert fresh.check().index_ok is False
    assert _answers(fresh) == expected
    assert JsonFileAdapter(store).check().ok


def test_a_writer_that_died_between_commit_and_index_row_is_repaired(store):
    a, made = _populate(store)
    victim = made[1]
    # Simulate the crash: the commit landed, the index holds only the marker.
    index_path = _index(store)
    before = _bytes(index_path)
    a.commit_instance(victim.id, Commit(status="abandoned"), if_version=2, provenance=prov())
    with open(index_path, "wb") as f:
        f.write(before + json.dumps([victim.id, victim.subject]).encode() + b"\n")
    report = JsonFileAdapter(store).check()
    assert "await repair" in " ".join(report.notes) and report.ok
    reader = JsonFileAdapter(store)
    assert victim.id in [i.id for i in reader.find_instances(status="abandoned")]
    assert victim.id not in [i.id for i in JsonFileAdapter(store).find_instances(status="active")]
    assert JsonFileAdapter(store).find_latest_unclosed(victim.subject).id == made[4].id
    fill(reader, reader.get_instance(made[2].id), "name", "x")  # the next write, to any instance, repairs it
    repaired = json.loads(_bytes(index_path).splitlines()[-3])
    assert repaired[0] == victim.id and repaired[3] == "abandoned"
    assert JsonFileAdapter(store).check().ok


def test_check_reports_an_index_that_disagrees_and_reindex_repairs_it(store):
    a, made = _populate(store)
    index_path = _index(store)
    with open(index_path, "ab") as f:  # a row that lies about one instance
        f.write(json.dumps([made[2].id, "s2", "intake", "abandoned", "9999", 2, "9999", ""]).encode() + b"\n")
    open(os.path.join(store, "instances", "form_1_abcdef.json.123-ab.tmp"), "wb").close()
    report = JsonFileAdapter(store).check()
    assert isinstance(report, StoreReport) and not report.ok and not report.index_ok and not report.index_rebuilt
    assert any(made[2].id in note for note in report.notes)
    assert any(".tmp" in note for note in report.notes)
    rebuilt = JsonFileAdapter(store).reindex()
    assert rebuilt.index_rebuilt and rebuilt.files_checked == 12 and rebuilt.instances == 6
    assert rebuilt.to_dict()["problems"] == []
    again = JsonFileAdapter(store).check()
    assert again.ok and again.notes == ()
    assert json.loads(json.dumps(again.to_dict())) == {
        "directory": os.path.abspath(store),
        "ok": True,
        "files_checked": 12,
        "instances": 6,
        "problems": [],
        "notes": [],
        "index_ok": True,
        "index_rebuilt": False,
    }


def test_reindex_lists_corrupt_files_and_indexes_the_rest(store):
    a, made = _populate(store)
    snapshot, _ = _instance_files(store, made[3])
    with open(snapshot, "wb") as f:
        f.write(b'{"format": 1, "vers')
    report = JsonFileAdapter(store).reindex()
    assert report.instances == 5 and [p.path for p in report.problems] == [snapshot]
    assert _bytes(snapshot) == b'{"format": 1, "vers'
    assert made[3].id not in [i.id for i in JsonFileAdapter(store).find_instances()]


def test_the_index_log_is_compacted_as_it_grows(store):
    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())
    for n in range(700):
        inst = fill(a, inst, "n", n)
    lines = _bytes(_index(store)).count(b"\n")
    assert lines < 600
    assert JsonFileAdapter(store).find_latest_unclosed("alice").version == 701


def test_threads_sharing_one_adapter_lose_no_revision(store):
    import threading

    a = JsonFileAdapter(store)
    inst = a.create_instance("travel", 1, "alice", prov())

    def worker(n: int) -> None:
        for i in range(25):
            while True:
                current = a.get_instance(inst.id)
                try:
                    fill(a, current, f"t{n}", i)
                    break
                except ConflictError:
                    continue

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = JsonFileAdapter(store).get_instance(inst.id)
    assert stored.version == 101
    assert all([e.value for e in stored.entries[f"t{n}"].revisions] == list(range(25)) for n in range(4))


def test_one_start_in_a_new_store_creates_at_most_four_files(tmp_path):
    from fixture_project import FORMS
    from formctl import FormRegistry, FormRunner

    store = tmp_path / "store"
    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    runner = FormRunner(JsonFileAdapter(store), registry=registry, subject="dana")
    runner.start("travel-claim", seed={"full_name": "Dana Reeve"})
    made = sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file())
    assert len(made) <= 4, made
    assert "index.jsonl" in made and "lock" in made


def test_a_damaged_index_line_is_rebuilt_from_the_instance_files(store):
    a, _ = _populate(store)
    expected = _answers(a)
    with open(_index(store), "ab") as f:
        f.write(b'["form_1_abcdef", "s1", oops\n')
    assert _answers(JsonFileAdapter(store)) == expected
    assert JsonFileAdapter(store).check().ok


def test_the_next_write_settles_the_marker_a_dead_writer_left(store):
    a, made = _populate(store)
    victim = made[2]  # subject s2, the open form of s2
    index_path = _index(store)
    before = _bytes(index_path)
    a.commit_instance(victim.id, Commit(status="abandoned"), if_version=2, provenance=prov())
    # The victim's writer died after its marker; the next write (to another instance) settles it.
    later = JsonFileAdapter(store).get_instance(made[1].id)
    with open(index_path, "wb") as f:
        f.write(before + json.dumps([victim.id, "s2"]).encode() + b"\n")
    fill(JsonFileAdapter(store), later, "name", "later")
    fresh = JsonFileAdapter(store)
    assert fresh.find_latest_unclosed("s2").id == made[5].id
    assert victim.id in [i.id for i in fresh.find_instances(status="abandoned")]
    assert victim.id in [i.id for i in fresh.find_instances(subject="s2", status="abandoned")]


def test_reindex_removes_the_old_folder_of_index_shards(store):
    a, _ = _populate(store)
    expected = _answers(a)
    old = os.path.join(store, "index")
    os.mkdir(old)
    for n in range(64):
        open(os.path.join(old, f"{n:02x}.jsonl"), "wb").close()
    report = JsonFileAdapter(store).reindex()
    assert not os.path.exists(old) and any("old index folder" in note for note in report.notes)
    assert _answers(JsonFileAdapter(store)) == expected


def test_a_new_process_finds_each_subjects_open_form_whatever_the_subject_holds(store):
    subjects = ["ann", 'ann"', "x,ann", "ann,", "ännä ✓", '["ann"]', "ann]"]
    a = JsonFileAdapter(store)
    made = {s: a.create_instance("travel", 1, s, prov()).id for s in subjects}
    for s in subjects:  # a fresh adapter per lookup: the byte search over the index, not a parsed copy
        assert JsonFileAdapter(store).find_latest_unclosed(s).id == made[s]
        assert [i.id for i in JsonFileAdapter(store).find_instances(subject=s)] == [made[s]]
    made.update({f"p{n}": a.create_instance("travel", 1, f"p{n}", prov()).id for n in range(20)})
    many = JsonFileAdapter(store)  # one adapter asked about many subjects parses the index instead
    for _ in range(2):
        assert {s: many.find_latest_unclosed(s).id for s in made} == made
    assert many.index._parsed is not None
