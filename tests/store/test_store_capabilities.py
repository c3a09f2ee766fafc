"""What only some stores do is a capability, asked with isinstance (docs/engine.md, "The store
contract"): a forwarding wrapper offers what the adapter it wraps offers, whatever its class."""

from __future__ import annotations

from conftest import make_registry
from formctl import FormRunner, JsonFileAdapter, MemoryAdapter
from formctl.forms.adapter import FormAdapter, Importing, Maintainable, Serialising, SharesConversations, Watchable


class Forwarding:
    """A host's wrapper (logging, metrics): every attribute is the wrapped adapter's."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_the_stores_declare_what_they_do(tmp_path):
    memory, files = MemoryAdapter(), JsonFileAdapter(tmp_path / "store")

    assert isinstance(memory, FormAdapter) and isinstance(files, FormAdapter)
    assert isinstance(memory, Serialising)  # threads sharing it: docs/store.md, "Two starts at once"
    assert not isinstance(memory, (Maintainable, Watchable, Importing, SharesConversations))
    assert isinstance(files, Serialising) and isinstance(files, Maintainable) and isinstance(files, Importing)
    assert not isinstance(files, (Watchable, SharesConversations))  # a chat keeps them in the folder


def test_one_wrapper_class_over_two_kinds_of_store_writes_through_each(tmp_path):
    # Asked per adapter object: a cache per class would answer for the in-memory store what
    # was found for the file store once the first had been seen.
    registry = make_registry()
    over_files = FormRunner(Forwarding(JsonFileAdapter(tmp_path / "store")), registry=registry, subject="a")
    over_memory = FormRunner(Forwarding(MemoryAdapter()), registry=registry, subject="b")

    over_files.start("basic", seed={"name": "Dana"})
    result = over_memory.start("basic", seed={"name": "Robin"})

    assert result.captured == ["name"]
    assert over_memory.fill({"age": 40}).captured == ["age"]


def test_the_postgresql_store_declares_what_it_does_without_connecting():
    from formctl.forms.adapter import Interruptible
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter("postgresql://ann@127.0.0.1:1/forms", connect_timeout=1)  # nothing listens there

    assert isinstance(adapter, FormAdapter) and isinstance(adapter, Serialising) and isinstance(adapter, Maintainable)
    assert isinstance(adapter, Watchable) and isinstance(adapter, Importing) and isinstance(adapter, Interruptible)
    assert isinstance(adapter, SharesConversations)  # a colleague who resumes an instance continues its chat
