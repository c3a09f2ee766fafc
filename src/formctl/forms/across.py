"""Reads across many instances, asked of whatever store holds them: ``find``, the facts behind
``stats`` and the stream behind ``export --form``.

Each asks the store for its own way first, a capability of :mod:`formctl.forms.adapter`
(:class:`~formctl.forms.adapter.Searchable`, :class:`~formctl.forms.adapter.Reporting`,
:class:`~formctl.forms.adapter.Streaming`: an index, SQL aggregates, pages), and otherwise
reads every instance by the same rules (:mod:`formctl.forms.search`, :mod:`formctl.forms.stats`),
so a host's own store answers the same. The rules themselves live in those modules, which
know nothing of stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from formctl.forms.adapter import FormAdapter, Reporting, Searchable, Streaming
from formctl.forms.search import Found, SearchQuery, hits_of, terms_of, values_in_force
from formctl.forms.stats import FactsBuilder, FormFacts, ModelOf

if TYPE_CHECKING:
    from formctl.forms.instance import Instance
    from formctl.forms.reading import Scope

__all__ = ["find", "form_facts", "stream"]


def find(adapter: FormAdapter, query: SearchQuery) -> list[Found]:
    """The instances ``query`` matches, with the value of each matched field: the store's own
    search when it has one (which may hand the values over too), else every instance read."""
    if isinstance(adapter, Searchable):
        hits = adapter.search(query)
    else:
        everything = adapter.find_instances(def_id=query.def_id, status=query.status)
        hits = hits_of(query, [(i.id, i.def_id, i.status, i.subject, i.updated_at, terms_of(i)) for i in everything])
    found = []
    for hit in hits:
        values = hit.values
        if values is None:
            values = values_in_force(adapter.get_instance(hit.instance_id), hit.fields) if hit.fields else {}
        found.append(Found(hit, values))
    return found


def form_facts(adapter: FormAdapter, scope: Scope, model_of: ModelOf | None = None) -> FormFacts:
    """The facts of ``scope``: the store's own (SQL, with the models its conversations name)
    when it reports them, else one pass over its instances, streamed (:func:`stream`), each
    one's model asked of ``model_of``."""
    if isinstance(adapter, Reporting):
        return adapter.form_facts(scope)
    builder = FactsBuilder()
    for instance in stream(adapter, scope):
        builder.add(instance, model_of(instance.id) if model_of is not None else None)
    return builder.done()


def stream(adapter: FormAdapter, scope: Scope) -> Iterator[Instance]:
    """The instances in ``scope``, oldest first, one at a time: the store's own stream when it has
    one, else a listing."""
    if isinstance(adapter, Streaming):
        yield from adapter.iter_instances(scope)
        return
    found = adapter.find_instances(def_id=scope.def_id, status=scope.status, damaged=scope.damaged)
    for instance in sorted(found, key=lambda i: (i.created_at, i.id)):
        if scope.admits(instance):
            yield instance
