"""The tiny form the store's crash and concurrency helpers fill: a few free-text fields.

``never`` is required and never filled, so the instance stays active however many
answers land, and every fill is exactly one commit (no hooks, no status change).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from formctl import FormRegistry, JsonFileAdapter, define_form

FIELDS = ("f0", "f1", "f2", "w0", "w1", "w2", "w3", "w4", "w5")

race = (
    define_form("race", version=1, name="Race", description="Fields filled by competing processes.")
    .step("only", title="Only step")
    .field("never", Annotated[str, Field(min_length=1)], label="Never filled")
)
for _field in FIELDS:
    race = race.field(_field, Annotated[str, Field(min_length=1)] | None, label=_field)
race = race.build()


def open_adapter(store: str, **options):
    """The store the test names: a PostgreSQL DSN, or a JSON store folder (``options`` go to it)."""
    if store.startswith(("postgresql://", "postgres://")):
        from formctl.store.postgres import PostgresAdapter

        return PostgresAdapter(store)
    return JsonFileAdapter(store, **options)


def registry() -> FormRegistry:
    return FormRegistry().register("race", name="Race", description="", load=lambda: race)


def warmed_registry(store: str) -> FormRegistry:
    """:func:`registry` with the form compiled, for a helper that forks its writers: what a first
    fill imports (the runner's modules, pydantic's plugin loader, the store's driver) is imported
    here, once, by a fill in memory, rather than by each writer between its start and its first
    commit (half a second for a PostgreSQL writer; the crash test forks sixty)."""
    from formctl import FormRunner, MemoryAdapter

    forms = registry()
    forms.load("race")
    warm = FormRunner(MemoryAdapter(), registry=forms, subject="warm-up")
    warm.fill({"f0": "warm"}, instance_id=warm.start("race").instance_id)
    if store.startswith(("postgresql://", "postgres://")):
        import formctl.store.postgres  # noqa: F401
    return forms


class Acknowledging:
    """Wraps an adapter and notes every version a commit acknowledged (and every attempt)."""

    def __init__(self, inner, on_ack=None) -> None:
        self.inner = inner
        self.identifier = inner.identifier
        self.versions: list[int] = []
        self.attempts = 0
        self._on_ack = on_ack

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def commit_instance(self, instance_id, commit, *, if_version, provenance):
        self.attempts += 1
        new = self.inner.commit_instance(instance_id, commit, if_version=if_version, provenance=provenance)
        self.versions.append(new.version)
        if self._on_ack is not None:
            self._on_ack(new)
        return new
