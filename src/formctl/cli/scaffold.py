"""A form author's commands: ``formctl new FORM-ID`` and what ``formctl check`` adds to compiling.

``formctl new`` writes a starter form module and registers it; ``formctl new --example ID``
copies one of the example forms that ship inside the package (``formctl/examples/``: the travel
claim the README walks through, the client intake and its goal program) into the project and
registers it, so an installed formctl needs no clone to try them.

The new ``[forms.ID]`` table is rendered with tomli-w and *appended* to ``registry.toml``
rather than the whole file being re-serialised, so the comments and layout a person gave
the registry survive. The module compiles as written (``formctl check ID`` passes), so the
author starts from something that runs and edits towards their form.

``formctl check`` compiles a form, then lints it (:func:`lint_form`, the checks of
:mod:`formctl.forms.lint`, each a warning naming the definition's line; ``--strict``
makes them errors) and, with ``--coverage DIR``, replays the form's transcripts under DIR
and reports what of the form they never exercised (:func:`coverage_report`).
"""

from __future__ import annotations

import keyword
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from formctl.errors import AlreadyExistsError, InvalidArgumentError, RegistryError
from formctl.files import replace_text
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.lint import Finding
    from formctl.forms.registry import FormRegistry
    from formctl.transcripts.compare import ReplayResult
    from formctl.transcripts.coverage import Coverage

_FORM_ID = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")

REGISTRY_HEADER = (
    "# Forms formctl can run. Modules are imported from this folder on first start only,\n"
    "# so `formctl list` never imports them.\n"
)

TEMPLATE = '''\
"""{name}.

Scaffolded by `formctl new {form_id}`. Edit the steps and fields, then:

    formctl check {form_id}     # compile it and see each field's type as the model reads it
    formctl run {form_id}       # try it in the chat (offline with --offline)

A field is optional iff its schema accepts None (``str | None``); gates ``when=`` get the
live values and a state with ``step_complete(id)``; executors get ``ctx.values``.
``review=True``: once every required answer is in, the optional questions are offered and
every answer is read back; the form is sent (complete) only when the person says yes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import EmailStr, Field

from formctl import define_form

{attr} = (
    define_form(
        {form_id!r},
        version=1,
        review=True,
        name={name!r},
        description={description!r},
        conduct="Conversational: one or two questions at a time.",
    )
    .step("contact", title="Contact", preview="name, email")
    .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
    .field("email", EmailStr, label="Email")
    .step("details", title="Details", preview="what this is about",
          when=lambda v, s: s.step_complete("contact"))
    .field("topic", Literal["question", "request", "other"], label="Topic")
    .field("notes", Annotated[str, Field(min_length=3)] | None, label="Notes",
           ask="Anything else they want to add.")
    .build()
)
'''


def module_name(form_id: str) -> str:
    """The module for ``form_id``: dashes as underscores, with ``_form`` added when the plain
    name is already a module Python knows (``json``, ``email``, ``test``, an installed package).
    Python keeps one module per name, so a forms/json.py would take the standard library's
    json's place, or lose to it.

    The answer depends on the installation, never on what this process happens to have
    imported: a module of that name loaded from another project's forms folder (a host that
    serves several) is no reason, since the registry reads each folder's own file
    (docs/engine.md, "The registry file"). So installed modules are looked up on ``sys.path``
    (``PathFinder``), not through ``importlib.util.find_spec``, which answers from
    ``sys.modules`` first."""
    import importlib.machinery
    import sys

    name = form_id.replace("-", "_")
    try:
        taken = (
            name in sys.stdlib_module_names
            or name in sys.builtin_module_names
            or importlib.machinery.PathFinder.find_spec(name) is not None
        )
    except (ImportError, ValueError):
        taken = True
    return f"{name}_form" if taken else name


def scaffold(
    form_id: str, forms: str | os.PathLike[str] | None, *, name: str | None = None, description: str = ""
) -> tuple[Path, Path]:
    """Write ``<forms>/<module>.py`` and append its registration. Returns (module path, registry path)."""
    from formctl.cli.workspace import registry_path

    if not _FORM_ID.match(form_id):
        raise InvalidArgumentError(
            f'"{form_id}" is not a form id: use lower-case letters, digits and single hyphens, like expense-report.'
        )
    module = module_name(form_id)
    if keyword.iskeyword(module):
        raise InvalidArgumentError(f'"{form_id}" would make a module named after a Python keyword.')
    registry_file = registry_path(forms)
    folder = registry_file.parent
    existing, registered = _registered(registry_file)
    if form_id in registered.get("forms", {}):
        raise AlreadyExistsError(f'A form "{form_id}" is already registered in {registry_file}.')
    module_path = folder / f"{module}.py"
    if module_path.exists():
        raise AlreadyExistsError(f"{module_path} already exists; pick another id or remove it.")

    title = name or form_id.replace("-", " ").capitalize()
    folder.mkdir(parents=True, exist_ok=True)
    module_path.write_text(
        TEMPLATE.format(form_id=form_id, name=title, description=description, attr=module), encoding="utf-8"
    )
    entry = {"name": title, "description": description, "module": f"{module}:{module}"}
    _append(registry_file, existing, {"forms": {form_id: entry}})
    return module_path, registry_file


def _append(registry_file: Path, existing: str, tables: JsonObject) -> None:
    """Append ``tables`` (rendered by tomli-w) to the registry whose text is ``existing``: its
    comments and layout stay as they were. A reader never sees half a registry."""
    import tomli_w

    table = tomli_w.dumps(tables)
    if not existing:
        text = REGISTRY_HEADER + "\n" + table
    else:
        text = existing + ("" if existing.endswith("\n") else "\n") + "\n" + table
    replace_text(registry_file, text)


# --------------------------------------------------------------------------- formctl new --example


def examples() -> JsonObject:
    """The packaged examples' registry: ``{"forms": {id: entry}, "programs": {key: entry}}``."""
    import tomllib
    from importlib.resources import files

    text = files("formctl").joinpath("examples", "registry.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def copy_example(example_id: str, forms: str | os.PathLike[str] | None) -> tuple[list[Path], Path]:
    """Copy the example form ``example_id`` (and the goal program of the same key, when there is
    one) into the forms folder and register it. Returns (the files written, the registry path).

    Nothing is written when anything is in the way: a form or program of that id already
    registered, or a module file of that name already in the folder."""
    from importlib.resources import files

    from formctl.cli.workspace import registry_path

    shipped = examples()
    if example_id not in shipped.get("forms", {}):
        names = ", ".join(shipped.get("forms", {}))
        raise InvalidArgumentError(f'No example "{example_id}": the examples are {names}.')
    tables = {
        kind: {example_id: shipped[kind][example_id]}
        for kind in ("forms", "programs")
        if example_id in shipped.get(kind, {})
    }
    registry_file = registry_path(forms)
    existing, registered = _registered(registry_file)
    for kind in tables:
        if example_id in registered.get(kind, {}):
            what = "form" if kind == "forms" else "program"
            raise AlreadyExistsError(f'A {what} "{example_id}" is already registered in {registry_file}.')
    sources = [entry["module"].partition(":")[0] + ".py" for entries in tables.values() for entry in entries.values()]
    written = [registry_file.parent / name for name in sources]
    in_the_way = next((path for path in written if path.exists()), None)
    if in_the_way is not None:
        raise AlreadyExistsError(f"{in_the_way} already exists; move it away to copy the example.")
    registry_file.parent.mkdir(parents=True, exist_ok=True)
    for name, path in zip(sources, written):
        path.write_bytes(files("formctl").joinpath("examples", name).read_bytes())
    _append(registry_file, existing, tables)
    return written, registry_file


def _registered(registry_file: Path) -> tuple[str, JsonObject]:
    """The registry's text ("" when there is none yet) and what it registers."""
    import tomllib

    existing = registry_file.read_text(encoding="utf-8") if registry_file.exists() else ""
    try:
        return existing, tomllib.loads(existing)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"Form registry {registry_file} is not valid TOML: {exc}") from None


# --------------------------------------------------------------------------- formctl check


def form_source(registry: FormRegistry, form_id: str) -> str | None:
    """The file a registered form's module was loaded from (None for a form registered in code)."""
    import sys

    registration = next((r for r in registry.registrations() if r.id == form_id), None)
    module = getattr(registration, "module", None)
    if not module:
        return None
    loaded = sys.modules.get(module.partition(":")[0])
    return getattr(loaded, "__file__", None)


def lint_form(registry: FormRegistry, form_id: str, compiled: CompiledForm) -> list[Finding]:
    """The lint findings of a compiled form, their paths relative to the working folder when inside it."""
    from formctl.forms.lint import Finding, lint

    path = form_source(registry, form_id)
    findings = lint(compiled, path=path)
    out = []
    for f in findings:
        shown = f.path
        if shown:
            try:
                shown = os.path.relpath(shown)
            except ValueError:
                pass
            if shown.startswith(".." + os.sep + ".."):
                shown = f.path
        out.append(Finding(f.code, f.message, shown, f.line))
    return out


def coverage_report(registry: FormRegistry, form_id: str, folders: list[str]) -> tuple[Coverage, list[ReplayResult]]:
    """Replay every transcript of ``form_id`` under ``folders`` with coverage on.

    Returns (the coverage, the replay results). Transcripts of other forms are skipped;
    a transcript that fails still counts for what it exercised before it diverged.
    """
    from formctl.errors import TranscriptError
    from formctl.transcripts.coverage import Coverage
    from formctl.transcripts.format import load
    from formctl.transcripts.paths import transcript_files
    from formctl.transcripts.pytest_plugin import is_transcript
    from formctl.transcripts.replay import ReplayOptions, replay_file

    missing = [f for f in folders if not Path(f).exists()]
    if missing:
        raise InvalidArgumentError(f"--coverage: no such file or folder: {missing[0]}")
    cov = Coverage()
    results = []
    for path in transcript_files([Path(f) for f in folders]):
        if not is_transcript(path):
            continue
        try:
            if load(path).form != form_id:
                continue
        except TranscriptError:
            continue
        results.append(replay_file(path, ReplayOptions(coverage=cov), registry=registry))
    return cov, results
