"""Shared fixtures for the engine tests.

* ``registry``: a FormRegistry with every form in ``example_forms.ALL_FORMS`` registered.
* ``adapter``: a fresh store, parametrised over the in-memory and the JSON-file adapter,
  so every runner test runs against both.
* ``runner``: a factory, ``runner(subject="s1", **kwargs)`` → FormRunner over the same
  ``adapter`` and ``registry`` (call it twice for two runners sharing one store).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import example_forms  # noqa: E402

from formctl import FormRegistry, FormRunner, MemoryAdapter  # noqa: E402


def make_registry() -> FormRegistry:
    registry = FormRegistry()
    for form_id, factory in example_forms.ALL_FORMS.items():
        registry.register(form_id, name=form_id, description=f"Example form {form_id}.", load=factory)
    return registry


@pytest.fixture
def registry() -> FormRegistry:
    return make_registry()


@pytest.fixture(params=["memory", "jsonfile"])
def adapter(request, tmp_path):
    if request.param == "memory":
        return MemoryAdapter()
    # Imported here, not at module level, so the memory half runs even while the
    # JSON-file store is being written.
    from formctl.store.jsonfile import JsonFileAdapter

    return JsonFileAdapter(tmp_path / "store")


@pytest.fixture
def runner(adapter, registry):
    def make(subject: str = "s1", **kwargs) -> FormRunner:
        return FormRunner(adapter, registry=kwargs.pop("registry", registry), subject=subject, **kwargs)

    return make
