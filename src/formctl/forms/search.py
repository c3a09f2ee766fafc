"""Finding instances by what they hold: the subject and the values in force (``formctl find``).

One rule for every store, pure: a text is *folded* (accents taken off, case folded, runs of
spaces made one), a query is split into words, and an instance matches when every word is
part of its folded subject, or part of one field's folded value (so "maria lopez" finds
"María López" and ``maria.lopez@example.org`` alike; "lopez@exa" finds the email). Only the
revision in force counts, and only when it was accepted (a refused value, a retraction or
an answer undone away is not what the form holds).

A store keeps each instance's folded values as one *terms* text (:func:`terms_of`), written
with every commit, so a search reads no instance (docs/store.md, "The index"; the PostgreSQL
store's ``formctl_search`` table). Sensitive fields are left out when searching, never
matched nor shown: the caller says which fields of which forms are sensitive
(:class:`SearchQuery`), as only the definitions know.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.instance import Instance
    from formctl.forms.registry import FormRegistry

__all__ = [
    "FIELD_SEP",
    "TERM_SEP",
    "Found",
    "SearchHit",
    "SearchQuery",
    "fold",
    "hidden_fields",
    "hits_of",
    "matching",
    "query_for",
    "terms_of",
    "values_in_force",
]

FIELD_SEP = "\x1f"
"""Between a field id and its folded value in a terms text (no field id or folded value holds it)."""
TERM_SEP = "\x1e"
"""Between two fields' entries in a terms text."""

_MAX_VALUE = 512
"""Characters of one value kept for searching: a name, an email, a number fit many times over,
and a pasted essay does not bloat every index row."""


def fold(text: str) -> str:
    """``text`` as searched: compatibility-decomposed, combining marks dropped, case folded, and
    every run of white space and control characters one space."""
    if text.isascii():  # most names, emails and numbers: nothing to decompose
        return " ".join(text.translate(_CONTROLS).lower().split())
    decomposed = unicodedata.normalize("NFKD", text)
    # Control characters (the two separators, a NUL no database text holds) become spaces.
    bare = "".join(" " if ch < " " else ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(bare.casefold().split())


_CONTROLS = {n: " " for n in range(32)}


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, bool) or value is None:
        return
    else:
        yield str(value)


def terms_of(instance: Instance) -> str:
    """What a store keeps to search an instance: its folded subject, then its accepted values in
    force, each folded, as ``field\x1fvalue`` entries in the order the fields were first
    answered; all joined by ``\x1e``."""
    parts = [fold(instance.subject)]
    for field_id, log in instance.entries.items():
        entry = log.in_force
        if entry is None or entry.error:
            continue
        text = fold(" ".join(_leaves(entry.value)))[:_MAX_VALUE]
        if text:
            parts.append(f"{field_id}{FIELD_SEP}{text}")
    return TERM_SEP.join(parts)


def hidden_fields(compiled: CompiledForm) -> frozenset[str]:
    """The fields of a form that are never searched nor shown by a search: the sensitive ones."""
    return frozenset(f.id for f in compiled.fields if f.sensitive)


@dataclass(frozen=True)
class SearchQuery:
    """What ``find`` asks a store. ``words`` are folded; ``hidden`` maps a form id to the fields
    never matched; a form not in ``known`` (its definition cannot be read) is matched on its
    subject alone, since which of its fields are sensitive cannot be known."""

    words: tuple[str, ...]
    hidden: Mapping[str, frozenset[str]] = field(default_factory=dict)
    known: frozenset[str] = frozenset()
    def_id: str | None = None
    status: str | None = None
    limit: int = 50

    @classmethod
    def of(cls, text: str, **kwargs: Any) -> SearchQuery:
        return cls(tuple(fold(text).split()), **kwargs)

    def searchable(self, def_id: str, field_id: str) -> bool:
        return def_id in self.known and field_id not in self.hidden.get(def_id, frozenset())


@dataclass(frozen=True)
class SearchHit:
    """One instance found: the matching fields in its form's order of answering (``subject``
    True when the subject matched)."""

    instance_id: str
    def_id: str
    status: str
    subject: str
    updated_at: str
    subject_matched: bool
    fields: tuple[str, ...]
    values: dict[str, Any] | None = None  # the matched fields' values, when the store read them


def matching(query: SearchQuery, def_id: str, terms: str) -> tuple[bool, tuple[str, ...]] | None:
    """Whether the subject matches and which searchable fields do (``terms`` as
    :func:`terms_of` makes it); None when nothing does."""
    words = query.words
    if not all(w in terms for w in words):  # cheap test first: most rows fail here
        return None
    subject, *parts = terms.split(TERM_SEP)
    subject_hit = all(w in subject for w in words)
    fields: list[str] = []
    for part in parts:
        field_id, _, text = part.partition(FIELD_SEP)
        if all(w in text for w in words) and query.searchable(def_id, field_id):
            fields.append(field_id)
    if subject_hit or fields:
        return subject_hit, tuple(fields)
    return None


def hits_of(
    query: SearchQuery, rows: Iterable[tuple[str, str, str, str, str, str]], *, ordered: bool = False
) -> list[SearchHit]:
    """The hits among ``(id, def_id, status, subject, updated_at, terms)`` rows, most recent first
    (ties: id descending), at most ``query.limit``. ``ordered``: the rows come most recent first
    already, so the walk stops at the limit (a word every instance holds reads 50 rows, not all)."""
    found = []
    limit = query.limit
    for iid, def_id, status, subject, updated_at, terms in rows:
        if (query.def_id is not None and def_id != query.def_id) or (
            query.status is not None and status != query.status
        ):
            continue
        matched = matching(query, def_id, terms)
        if matched is not None:
            found.append(SearchHit(iid, def_id, status, subject, updated_at, matched[0], matched[1]))
            if ordered and len(found) >= limit:
                return found
    found.sort(key=lambda h: (h.updated_at, h.instance_id), reverse=True)
    return found[:limit]


def values_in_force(instance: Instance | None, fields: Iterable[str]) -> dict[str, Any]:
    """The values in force of ``fields`` (those the instance has), to show beside a hit."""
    values: dict[str, Any] = {}
    for field_id in fields:
        log = instance.entries.get(field_id) if instance is not None else None
        entry = log.in_force if log is not None else None
        if entry is not None:
            values[field_id] = entry.value
    return values


@dataclass(frozen=True)
class Found:
    """One instance ``find`` shows: the hit, and the value in force of each field that matched."""

    hit: SearchHit
    values: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        h = self.hit
        return {
            "instance_id": h.instance_id,
            "form": h.def_id,
            "status": h.status,
            "subject": h.subject,
            "updated_at": h.updated_at,
            "matched": (["subject"] if h.subject_matched else []) + list(h.fields),
            "values": self.values,
        }


def query_for(registry: FormRegistry, text: str, **kwargs: Any) -> SearchQuery:
    """A query over the registered forms: each one's sensitive fields hidden; a form whose
    definition cannot be loaded is searched by subject alone."""
    from formctl.errors import FormError

    hidden: dict[str, frozenset[str]] = {}
    for registration in registry.registrations():
        try:
            hidden[registration.id] = hidden_fields(registry.load(registration.id))
        except FormError:
            continue
    return SearchQuery.of(text, hidden=hidden, known=frozenset(hidden), **kwargs)
