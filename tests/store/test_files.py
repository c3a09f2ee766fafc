"""formctl.files.replace_text: the atomic whole-file write shared by conversations, transcripts and the registry."""

from __future__ import annotations

import os
import stat

import pytest

from formctl.files import replace_text


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "registry.toml"
    target.write_text("old\n", encoding="utf-8")
    replace_text(target, "new — ünïcode\n")
    assert target.read_text(encoding="utf-8") == "new — ünïcode\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["registry.toml"]


def test_a_failed_write_keeps_the_old_file_whole_and_removes_the_temporary_file(tmp_path):
    target = tmp_path / "conversation.json"
    target.write_text("the old conversation", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        replace_text(target, "half written \ud800 then it fails")  # a lone surrogate cannot be encoded
    assert target.read_text(encoding="utf-8") == "the old conversation"
    assert [p.name for p in tmp_path.iterdir()] == ["conversation.json"]


def test_private_files_are_0600_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        replace_text(tmp_path / "secret.json", "{}", private=True)
        replace_text(tmp_path / "shared.toml", "x = 1\n")
    finally:
        os.umask(old)
    assert mode(tmp_path / "secret.json") == 0o600
    assert mode(tmp_path / "shared.toml") == 0o644  # as any new file: the umask decides
