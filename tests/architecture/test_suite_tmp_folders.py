"""The suite's ``tmp_path`` (helpers/tmp_folders.py) keeps what pytest's promises: a new empty
folder per test, under the run's base temporary folder, named for the test, and pytest's
retention setting honoured. Each session below is pytest run in this process (pytester), once
with pytest's own ``tmp_path`` and once with the suite's: the same checks hold for both."""

from __future__ import annotations

import stat

import pytest

pytest_plugins = ["pytester"]

# pytest's tmp_path, then the suite's; the plugins these sessions need no more of left out.
WHOSE = pytest.mark.parametrize("plugin", [(), ("-p", "helpers.tmp_folders")], ids=["pytest", "suite"])
LEAN = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:xdist", "-p", "no:anyio")

TESTS = """
import pytest

SEEN = []

@pytest.mark.parametrize("n", range(3))
def test_a_name_longer_than_thirty_characters_is_cut(n, tmp_path):
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "note").write_text("x")
    SEEN.append(tmp_path)

def test_one(tmp_path_factory, tmp_path):
    SEEN.append(tmp_path)
    assert tmp_path_factory.mktemp("test_one").name == "test_one1"

def test_one_more(tmp_path_factory):
    made = tmp_path_factory.mktemp("test_one")
    SEEN.append(made)

@pytest.fixture
def made_first(tmp_path_factory):
    return tmp_path_factory.mktemp("test_two")

def test_two(made_first, tmp_path):
    assert (made_first.name, tmp_path.name) == ("test_two0", "test_two1")

def test_all_apart():
    assert [p.name for p in SEEN] == [
        "test_a_name_longer_than_thirty0",
        "test_a_name_longer_than_thirty1",
        "test_a_name_longer_than_thirty2",
        "test_one0",
        "test_one2",
    ]
    assert len({p.parent for p in SEEN}) == 1

def test_fails(tmp_path):
    (tmp_path / "note").write_text("x")
    assert False
"""


def test_a_tests_folder_is_new_empty_private_and_named_for_it_under_the_base(tmp_path, tmp_path_factory, request):
    assert request.config.pluginmanager.has_plugin("helpers.tmp_folders")
    assert tmp_path.parent == tmp_path_factory.getbasetemp()
    assert tmp_path.name.removeprefix(request.node.name[:30]).isdigit()
    assert list(tmp_path.iterdir()) == []
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700


@WHOSE
def test_every_tests_folder_is_its_own_numbered_as_pytest_numbers_them_and_kept(pytester, plugin):
    pytester.makepyfile(test_names=TESTS)
    base = pytester.path / "base"

    result = pytester.runpytest_inprocess(*plugin, *LEAN, f"--basetemp={base}")

    result.assert_outcomes(passed=7, failed=1)
    assert sorted(p.name for p in base.iterdir() if not p.is_symlink()) == [
        "test_a_name_longer_than_thirty0",
        "test_a_name_longer_than_thirty1",
        "test_a_name_longer_than_thirty2",
        "test_fails0",
        "test_one0",
        "test_one1",
        "test_one2",
        "test_two0",
        "test_two1",
    ]
    assert (base / "test_a_name_longer_than_thirty1" / "note").read_text() == "x"
    assert (base / "test_a_name_longer_than_thirtycurrent").resolve() == base / "test_a_name_longer_than_thirty2"


@WHOSE
def test_the_retention_policy_failed_keeps_only_the_folders_of_failed_tests(pytester, plugin):
    pytester.makepyfile(
        test_kept="""
        def test_passes(tmp_path):
            (tmp_path / "note").write_text("x")

        def test_fails(tmp_path):
            (tmp_path / "note").write_text("x")
            assert False

        def test_made(tmp_path_factory, tmp_path):
            tmp_path_factory.mktemp("test_made")
        """
    )
    base = pytester.path / "base"

    result = pytester.runpytest_inprocess(
        *plugin, *LEAN, f"--basetemp={base}", "-o", "tmp_path_retention_policy=failed"
    )

    result.assert_outcomes(passed=2, failed=1)
    # what tmp_path_factory.mktemp made is the test's to remove, under either fixture
    assert sorted(p.name for p in base.iterdir()) == [
        "test_fails0",
        "test_failscurrent",
        "test_made1",
        "test_madecurrent",
    ]
    assert (base / "test_failscurrent").resolve() == base / "test_fails0"


def test_the_compiled_modules_of_temporary_folders_are_dropped_but_a_checkouts_own_in_one(tmp_path):
    from conftest import _drop_all_but

    temporary = tmp_path / "pycache" / "tmp"
    for name in ("pytest-of-root/pytest-3/test_x0/forms/claim.pyc", "checkout/src/formctl/app.pyc", "other/m.pyc"):
        (temporary / name).parent.mkdir(parents=True, exist_ok=True)
        (temporary / name).write_bytes(b"")

    _drop_all_but(temporary, temporary / "checkout")

    assert [p.relative_to(temporary).as_posix() for p in sorted(temporary.rglob("*.pyc"))] == [
        "checkout/src/formctl/app.pyc"
    ]
    _drop_all_but(temporary, tmp_path / "elsewhere")
    assert not temporary.exists()
