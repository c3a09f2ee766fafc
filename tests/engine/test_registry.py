"""The registry: form ids mapped to lazy loaders, compiled once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from example_forms import basic, trio
from fixture_project import REGISTRY  # noqa: E402
from formctl import FormDefinitionError, FormError, FormRegistry, FormRunner, MemoryAdapter, UnknownFormError


class CountingLoader:
    def __init__(self, factory):
        self.factory = factory
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.factory()


def write_form_module(folder: Path, form_id: str = "toml-form") -> str:
    """A form module with a unique name (so no earlier test has imported it); returns the name."""
    name = f"regform_{uuid.uuid4().hex[:10]}"
    (folder / f"{name}.py").write_text(
        textwrap.dedent(
            f"""
            from formctl import define_form

            form = (
                define_form("{form_id}", version=1, name="From TOML")
                .step("s", title="S")
                .field("x", str, label="X")
                .build()
            )
            """
        )
    )
    return name


def write_registry(folder: Path, module: str, form_id: str = "toml-form") -> Path:
    path = folder / "registry.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [forms.{form_id}]
            name = "From TOML"
            description = "A form registered in a file."
            module = "{module}:form"
            """
        )
    )
    return path


# --------------------------------------------------------------------------- registering and listing


def test_register_chains_and_loads_nothing():
    first, second = CountingLoader(basic), CountingLoader(trio)

    registry = (
        FormRegistry()
        .register("basic", name="Basic", description="B.", load=first)
        .register("trio", name="Trio", load=second)
    )

    assert registry.has("basic") and registry.has("trio") and not registry.has("nope")
    assert registry.list() == [
        {"id": "basic", "name": "Basic", "description": "B."},
        {"id": "trio", "name": "Trio", "description": ""},
    ]
    assert (first.calls, second.calls) == (0, 0)


def test_the_runner_lists_forms_without_loading_them():
    loader = CountingLoader(basic)
    registry = FormRegistry().register("basic", name="Basic", description="B.", load=loader)

    listed = FormRunner(MemoryAdapter(), registry=registry, subject="s").list()

    assert listed == [{"id": "basic", "name": "Basic", "description": "B."}]
    assert loader.calls == 0


# --------------------------------------------------------------------------- loading


def test_load_compiles_once_and_caches_the_result():
    loader = CountingLoader(basic)
    registry = FormRegistry().register("basic", name="Basic", load=loader)

    first = registry.load("basic")
    second = registry.load("basic")

    assert first is second
    assert first.id == "basic"
    assert loader.calls == 1


def test_concurrent_first_loads_share_one_compile():
    import threading

    release = threading.Event()

    def slow():
        release.wait(5)
        return basic()

    loader = CountingLoader(slow)
    registry = FormRegistry().register("basic", name="Basic", load=loader)
    results = []
    threads = [threading.Thread(target=lambda: results.append(registry.load("basic"))) for _ in range(3)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(5)

    assert loader.calls == 1
    assert len(results) == 3 and all(r is results[0] for r in results)


def test_a_loader_may_return_a_builder_or_be_async():
    from formctl import define_form

    def builder():
        return define_form("built", name="Built").step("s", title="S").field("x", str, label="X")

    async def later():
        return trio()

    registry = FormRegistry().register("built", name="Built", load=builder).register("trio", name="Trio", load=later)

    assert registry.load("built").id == "built"
    assert registry.load("trio").id == "trio"


def test_loading_an_unregistered_id_raises_not_found():
    with pytest.raises(UnknownFormError) as err:
        FormRegistry().load("nope")

    assert err.value.code == "not_found"
    assert str(err.value) == 'No form registered as "nope".'


def test_a_form_whose_id_differs_from_its_registration_key_fails_to_load_and_is_not_cached():
    loader = CountingLoader(basic)
    registry = FormRegistry().register("not-basic", name="Mislabelled", load=loader)

    for _ in range(2):
        with pytest.raises(FormError) as err:
            registry.load("not-basic")
        assert str(err.value) == 'Form registered as "not-basic" defines itself as "basic".'

    assert loader.calls == 2


def test_a_failed_load_is_not_cached():
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("network share not mounted")
        return basic()

    registry = FormRegistry().register("basic", name="Basic", load=flaky)

    with pytest.raises(OSError):
        registry.load("basic")

    assert registry.load("basic").id == "basic"


def test_a_loader_returning_something_that_is_not_a_form_fails():
    registry = FormRegistry().register("basic", name="Basic", load=lambda: {"id": "basic"})

    with pytest.raises(FormDefinitionError):
        registry.load("basic")


def test_invalidate_drops_one_cached_compile_or_all_of_them():
    one, two = CountingLoader(basic), CountingLoader(trio)
    registry = FormRegistry().register("basic", name="B", load=one).register("trio", name="T", load=two)
    registry.load("basic")
    registry.load("trio")

    registry.invalidate("basic")
    registry.load("basic")
    registry.load("trio")
    assert (one.calls, two.calls) == (2, 1)

    registry.invalidate()
    registry.load("basic")
    registry.load("trio")
    assert (one.calls, two.calls) == (3, 2)


def test_registering_again_replaces_the_loader_and_drops_the_cached_compile():
    registry = FormRegistry().register("basic", name="B", load=basic)
    first = registry.load("basic")

    registry.register("basic", name="B", load=basic)

    assert registry.load("basic") is not first


# --------------------------------------------------------------------------- registry.toml


def test_from_toml_lists_without_importing_and_imports_on_first_load(tmp_path):
    module = write_form_module(tmp_path)
    registry = FormRegistry.from_toml(write_registry(tmp_path, module))

    assert registry.list() == [{"id": "toml-form", "name": "From TOML", "description": "A form registered in a file."}]
    assert module not in sys.modules

    compiled = registry.load("toml-form")

    assert compiled.id == "toml-form"
    assert module in sys.modules


def test_a_runner_starts_a_form_from_registry_toml(tmp_path):
    module = write_form_module(tmp_path)
    registry = FormRegistry.from_toml(write_registry(tmp_path, module))
    r = FormRunner(MemoryAdapter(), registry=registry, subject="s")

    result = r.start("toml-form", seed={"x": "hello"})

    assert result.captured == ["x"]
    assert result.view.status == "complete"


def test_a_toml_registration_whose_module_defines_another_id_fails_to_load(tmp_path):
    module = write_form_module(tmp_path, form_id="something-else")
    registry = FormRegistry.from_toml(write_registry(tmp_path, module))

    with pytest.raises(FormError) as err:
        registry.load("toml-form")

    assert str(err.value) == 'Form registered as "toml-form" defines itself as "something-else".'


def test_from_toml_reports_a_missing_file(tmp_path):
    with pytest.raises(FormError) as err:
        FormRegistry.from_toml(tmp_path / "registry.toml")

    assert str(tmp_path / "registry.toml") in str(err.value)


def test_from_toml_reports_an_entry_without_a_module(tmp_path):
    path = tmp_path / "registry.toml"
    path.write_text('[forms.x]\nname = "X"\n')

    with pytest.raises(FormError) as err:
        FormRegistry.from_toml(path)

    assert "module" in str(err.value)


@pytest.mark.parametrize(
    "text, says",
    [
        ("[forms\n", "is not valid TOML"),
        ('forms = "x"\nprograms = "x"\n', "must be a table of"),
        ('[forms.x]\nname = "X"\n[programs.x]\nname = "X"\n', 'needs module = "module:attribute"'),
    ],
)
def test_forms_and_programs_read_the_one_registry_file_with_the_same_errors(tmp_path, text, says):
    from formctl.goals.registry import ProgramRegistry

    path = tmp_path / "registry.toml"
    path.write_text(text)

    with pytest.raises(FormError) as forms_err:
        FormRegistry.from_toml(path)
    with pytest.raises(FormError) as programs_err:
        ProgramRegistry.from_toml(path)

    for err, table in ((forms_err, "forms"), (programs_err, "programs")):
        assert str(err.value).startswith(f"Form registry {path}"), str(err.value)
        assert says in str(err.value)
        if says != "is not valid TOML":
            assert f"[{table}" in str(err.value)


def test_a_program_module_that_cannot_be_imported_is_named_as_a_program(tmp_path):
    from formctl.goals.registry import ProgramRegistry

    path = tmp_path / "registry.toml"
    path.write_text('[programs.intake]\nname = "Intake"\nmodule = "no_such_program_module_x:program"\n')
    registry = ProgramRegistry.from_toml(path)

    assert [r.to_dict() for r in registry.list()] == [{"key": "intake", "name": "Intake", "description": ""}]
    with pytest.raises(FormError) as err:
        registry.load("intake")
    assert str(err.value).startswith('Cannot import program module "no_such_program_module_x" from ')


@pytest.mark.e2e
def test_listing_the_shipped_registry_imports_no_form_module():
    code = textwrap.dedent(
        f"""
        import json, sys
        from formctl import FormRegistry, FormRunner, MemoryAdapter
        registry = FormRegistry.from_toml({str(REGISTRY)!r})
        ids = [f["id"] for f in FormRunner(MemoryAdapter(), registry=registry, subject="s").list()]
        modules = [r.module.partition(":")[0] for r in registry.registrations()]
        print(json.dumps({{"ids": ids, "imported": [m for m in modules if m in sys.modules]}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    listing = json.loads(out)
    assert "travel-claim" in listing["ids"] and "client-intake" in listing["ids"]
    assert listing["imported"] == []
