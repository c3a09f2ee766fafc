"""Where things live for the CLI: the forms registry and the store, and how a command opens them.

Defaults are chosen so a fresh clone works with no configuration: forms come from
``./forms/registry.toml`` and answers go to ``./.formctl/``, both relative to the current
directory (like ``git`` or ``uv``, the tool acts on the project you are standing in).

* forms: ``--forms PATH`` > ``FORMCTL_FORMS`` > ``./forms``. ``PATH`` may name the folder
  holding ``registry.toml`` or the TOML file itself.
* store: ``--store DIR`` > ``FORMCTL_STORE`` > ``./.formctl``. A ``postgresql://`` (or
  ``postgres://``) DSN instead of a folder selects the team store on PostgreSQL.

Typer reads the environment variables into the options, so by the time a path reaches
this module it is either what the user gave or ``None`` for "the default".

Nothing heavy is imported at module level: ``formctl list`` opens only the registry
(``tomllib``), and the store and engine load when a command first needs them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from formctl.forms.adapter import FormAdapter, Maintainable
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner
    from formctl.store._pgconversations import PostgresConversations
    from formctl.store.conversations import ConversationStore
    from formctl.store.copy import CopyReport as CopyReport  # what store copy reports, for the command to print
    from formctl.store.copy import Tally as Tally

DEFAULT_FORMS = "forms"
DEFAULT_STORE = ".formctl"
REGISTRY_FILE = "registry.toml"

HOST_SOURCE = "cli"
"""``source`` on every revision the CLI writes (the runner's provenance)."""


def registry_path(forms: str | os.PathLike[str] | None) -> Path:
    """The registry file for ``--forms``: a TOML file as given, or ``registry.toml`` inside a folder."""
    base = Path(forms) if forms else Path(DEFAULT_FORMS)
    if base.suffix == ".toml" or base.is_file():
        return base
    return base / REGISTRY_FILE


def store_path(store: str | os.PathLike[str] | None) -> Path:
    return Path(store) if store else Path(DEFAULT_STORE)


def local_folder(store: str | os.PathLike[str] | None) -> Path:
    """Where a chat keeps what is one person's own (the input history, and the conversation
    with the model in a folder store): the store folder, or ``./.formctl`` when the store is a
    shared database."""
    return Path(DEFAULT_STORE) if is_database(store) else store_path(store)


def open_conversations(
    store: str | os.PathLike[str] | None, adapter: FormAdapter, subject: str
) -> ConversationStore | PostgresConversations:
    """Where a chat keeps its conversations: beside the instances in a database store (the
    subject's alone; a colleague who resumes an instance continues its chat), else in the
    store folder's ``conversations/`` (docs/store-postgres.md, "Conversations")."""
    from formctl.forms.adapter import SharesConversations

    if is_database(store) and isinstance(adapter, SharesConversations):
        shared: PostgresConversations = adapter.conversation_store(subject)  # a DSN opens a PostgresAdapter
        return shared
    from formctl.store.conversations import ConversationStore

    return ConversationStore(local_folder(store))


def conversation_models(store: str | os.PathLike[str] | None) -> Callable[[str], str | None] | None:
    """Which model an instance's chat was with, for ``formctl stats`` on a folder store (read from
    its ``conversations/``); None for a database, whose own queries read its conversations."""
    if is_database(store):
        return None
    from formctl.store.conversations import ConversationStore

    return ConversationStore(local_folder(store)).model


def store_name(store: str | os.PathLike[str] | None) -> str:
    """The store as it may be printed: a folder, or a DSN with its password masked."""
    from formctl.store._pgconn import mask_dsn

    return mask_dsn(str(store)) if is_database(store) else str(store_path(store))


def open_registry(forms: str | os.PathLike[str] | None) -> FormRegistry:
    from formctl.errors import RegistryError
    from formctl.forms.registry import FormRegistry

    path = registry_path(forms)
    if not path.exists():
        # What to do, in the same line: a new user in an empty folder has no forms yet.
        hint = (
            ""
            if forms
            else ": start one here with formctl new FORM-ID (or formctl new --example travel-claim), "
            "or run from your project's folder, or pass --forms DIR"
        )
        raise RegistryError(f"No form registry at {path}{hint}.")
    return FormRegistry.from_toml(path)


# The stores the running command opened, closed when it ends (closing_stores).
_opened: ContextVar[ExitStack | None] = ContextVar("formctl_opened_stores", default=None)


@contextmanager
def closing_stores() -> Iterator[None]:
    """Close every store :func:`open_store` opens inside the block when the block ends, however
    it ends. Every command runs inside one (``base._Group.invoke``): a host that runs formctl's
    commands in its own process keeps no database session or file open per command, and a
    command cannot forget to close what it opened (docs/store-postgres.md, "Connections")."""
    with ExitStack() as opened:
        token = _opened.set(opened)
        try:
            yield
        finally:
            _opened.reset(token)


def is_database(store: str | os.PathLike[str] | None) -> bool:
    """True when the store is a PostgreSQL DSN rather than a folder."""
    from formctl.store._pgconn import is_dsn

    return is_dsn(store)


def open_store(store: str | os.PathLike[str] | None) -> FormAdapter:
    """The store behind ``--store``/``FORMCTL_STORE``: a PostgreSQL DSN or a folder of JSON files.
    This is where the CLI opens the store; everything else asks the runner. Inside
    :func:`closing_stores` (every command) the store is closed when the command ends."""
    adapter: FormAdapter
    if is_database(store):
        from formctl.store.postgres import PostgresAdapter

        adapter = PostgresAdapter(str(store))
    else:
        from formctl.store.jsonfile import JsonFileAdapter

        adapter = JsonFileAdapter(store_path(store))
    opened = _opened.get()
    if opened is not None:
        opened.callback(adapter.close)
    return adapter


def is_instance_id(text: str) -> bool:
    """True iff ``text`` has the shape of an instance id the stores generate."""
    from formctl.store.ids import is_instance_id as shaped

    return shaped(text)


def versions_text(lost: tuple[int, int] | list[int] | None, verb: str = "is") -> str:
    """``version 5 is`` / ``versions 5-8 are``: the versions a damaged store lost, in words."""
    from formctl.store.damage import versions_text as said

    return said(lost, verb)


def copy_store(
    source: FormAdapter,
    target: FormAdapter,
    *,
    source_name: str,
    target_name: str,
    progress: Callable[[int, int], None] | None = None,
) -> CopyReport:
    """``formctl store copy``: every instance of ``source`` into ``target`` (formctl.store.copy)."""
    from formctl.store.copy import copy_store as copy

    return copy(source, target, source_name=source_name, target_name=target_name, progress=progress)


def init_store(store: str | os.PathLike[str] | None) -> tuple[int | None, int | None]:
    """``formctl store init``: the store made ready to use. For a database, its schema version
    before and after (tables created or upgraded); for a folder, ``(None, None)``."""
    adapter = open_store(store)
    try:
        if is_database(store):
            from formctl.store.postgres import PostgresAdapter

            assert isinstance(adapter, PostgresAdapter)
            return adapter.init()
        from formctl.store.jsonfile import JsonFileAdapter

        assert isinstance(adapter, JsonFileAdapter)
        adapter.init()
        return None, None
    finally:
        adapter.close()


def open_maintained_store(store: str | os.PathLike[str] | None) -> Maintainable:
    """The store, for ``formctl store check/reindex/repair``: one that can be checked and repaired."""
    from formctl.errors import StoreError
    from formctl.forms.adapter import Maintainable

    adapter = open_store(store)
    if not isinstance(adapter, Maintainable):  # both stores formctl ships are; a host's own may not be
        raise StoreError(f"The store {store_name(store)} cannot be checked or repaired.")
    return adapter


def open_runner(
    store: str | os.PathLike[str] | None,
    forms: str | os.PathLike[str] | None,
    *,
    subject: str = "default",
    actor: str = "host",
    adapter: FormAdapter | None = None,
    registry: FormRegistry | None = None,
) -> FormRunner:
    """A runner over the store and registry. Host commands write as ``actor="host"``."""
    from formctl.forms.runner import FormRunner

    return FormRunner(
        adapter if adapter is not None else open_store(store),
        registry=registry if registry is not None else open_registry(forms),
        subject=subject,
        actor=actor,
        source=HOST_SOURCE,
    )


def default_subject() -> str:
    """Who the chat is with when ``--subject`` is not given: ``FORMCTL_SUBJECT``, else the login name.

    One person at one terminal is the common case, so their login name keeps their
    instances apart from a colleague's in a shared store without any flag.
    """
    import getpass

    try:
        return getpass.getuser() or "default"
    except Exception:  # no login name (some containers)
        return "default"
