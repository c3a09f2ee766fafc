"""A registry reads its own folder's form modules, as they are now, in a process that has read
others: Python keeps one module per name, so two folders that both hold ``intake.py`` (two
projects served by one host, two ``formctl`` commands run in one process) must not share
whichever was imported first, and a form edited since its first import is read again."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

from formctl import FormRegistry

FORM = """
from formctl import define_form

form = (
    define_form("intake", version=1, name="Intake")
    .step("s", title="S")
    .field("x", str, label="{label}")
    .build()
)
"""


def project(folder: Path, module: str, label: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(FORM.format(label=label))
    (folder / "registry.toml").write_text(
        textwrap.dedent(f"""\
        [forms.intake]
        name = "Intake"
        module = "{module}:form"
        """)
    )
    return folder / "registry.toml"


def label(registry: FormRegistry) -> str:
    return registry.load("intake").field_by_id["x"].label


def test_two_folders_with_a_module_of_the_same_name_each_get_their_own(tmp_path):
    module = f"intake_{uuid.uuid4().hex[:10]}"
    first = project(tmp_path / "one", module, "First")
    second = project(tmp_path / "two", module, "Second")

    assert label(FormRegistry.from_toml(first)) == "First"
    assert label(FormRegistry.from_toml(second)) == "Second"
    assert label(FormRegistry.from_toml(first)) == "First"  # the first folder again, though it is later on sys.path


def test_a_form_edited_after_its_first_import_is_read_again_by_a_new_registry(tmp_path):
    module = f"intake_{uuid.uuid4().hex[:10]}"
    path = project(tmp_path, module, "Before")
    registry = FormRegistry.from_toml(path)
    assert label(registry) == "Before"

    (tmp_path / f"{module}.py").write_text(FORM.format(label="After, edited"))

    assert label(FormRegistry.from_toml(path)) == "After, edited"
    assert label(registry) == "Before"  # a registry keeps the compile it made


def test_an_unchanged_module_is_imported_once(tmp_path):
    module = f"intake_{uuid.uuid4().hex[:10]}"
    path = project(tmp_path, module, "Same")
    FormRegistry.from_toml(path).load("intake")
    imported = sys.modules[module]

    FormRegistry.from_toml(path).load("intake")

    assert sys.modules[module] is imported


def test_a_module_written_after_the_folder_was_first_read_is_found(tmp_path):
    path = project(tmp_path, f"intake_{uuid.uuid4().hex[:10]}", "Old")
    FormRegistry.from_toml(path).load("intake")
    module = f"intake_{uuid.uuid4().hex[:10]}"

    project(tmp_path, module, "New")  # a new module beside it, and the registry pointed at it

    assert label(FormRegistry.from_toml(path)) == "New"


def test_two_in_process_commands_read_two_projects_forms(cli, tmp_path):
    module = f"intake_{uuid.uuid4().hex[:10]}"
    one = project(tmp_path / "one", module, "First label").parent
    two = project(tmp_path / "two", module, "Second label").parent

    assert "First label" in cli.at(forms=one).ok("check", "intake").stdout
    assert "Second label" in cli.at(forms=two).ok("check", "intake").stdout


def test_loading_forms_from_many_folders_leaves_sys_path_as_it_was(tmp_path):
    # A host that opens many projects in one process must not collect their folders on sys.path.
    before = list(sys.path)
    for n in range(3):
        path = project(tmp_path / f"p{n}", f"intake_{uuid.uuid4().hex[:10]}", f"Project {n}")
        assert label(FormRegistry.from_toml(path)) == f"Project {n}"
    assert sys.path == before


def test_a_form_module_imports_a_module_beside_it(tmp_path):
    helper = f"labels_{uuid.uuid4().hex[:10]}"
    module = f"intake_{uuid.uuid4().hex[:10]}"
    path = project(tmp_path, module, "unused")
    (tmp_path / f"{helper}.py").write_text('LABEL = "From the helper"\n')
    source = FORM.replace('label="{label}"', f"label={helper}.LABEL")
    (tmp_path / f"{module}.py").write_text(f"import {helper}\n" + source)
    assert label(FormRegistry.from_toml(path)) == "From the helper"
