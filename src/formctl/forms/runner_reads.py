"""The runner's read side: every read loads, compiles, evaluates and projects, and nothing else.

No read commits, runs an executor or migrates (docs/engine.md, "Reads and writes"); stale is
computed on read (:mod:`formctl.forms.lifecycle`). :class:`FormRunner` holds a :class:`Reads`
and answers its read methods with it; the writes are in :mod:`formctl.forms.runner` and
:mod:`formctl.forms.write`, which share the evaluations cached here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from formctl.errors import FormStaleError, InvalidArgumentError, NotFoundError, StoreError
from formctl.forms.adapter import DamageReport, FormAdapter, Maintainable
from formctl.forms.compile import CompiledForm
from formctl.forms.evaluate import Evaluation, evaluate
from formctl.forms.history import FieldHistory, field_history
from formctl.forms.instance import ABANDONED, COMPLETE, STALE, Instance
from formctl.forms.lifecycle import complete_flag, is_closed, is_continuable, is_stale, read_status
from formctl.forms.project import FormView, field_view, outline_view, step_view
from formctl.forms.project import tier0 as render_tier0
from formctl.forms.reading import (
    Continuation,
    DefaultInstance,
    InstanceSummary,
    InstanceView,
    Listing,
    Stamp,
    stamp_of,
    summarise,
)
from formctl.forms.registry import FormRegistry
from formctl.forms.write import Evaluations


class Reads:
    """Reads over one adapter and registry, for one subject (or one conversation's instance)."""

    def __init__(
        self,
        adapter: FormAdapter,
        registry: FormRegistry,
        subject: str | Callable[[], str],
        default: DefaultInstance | None,
        evaluations: Evaluations,
    ) -> None:
        self.adapter = adapter
        self.registry = registry
        self._subject = subject
        self.default = default
        self.evaluations = evaluations

    @property
    def subject(self) -> str:
        return self._subject() if callable(self._subject) else self._subject

    def forms(self) -> list[dict[str, str]]:
        """The registered forms, ``[{id, name, description}]``, without loading any of them."""
        return self.registry.list()

    def compiled(self, form_id: str) -> CompiledForm:
        """The registered (compiled) definition of ``form_id``; raises UnknownFormError."""
        return self.registry.load(form_id)

    def open_instance(self, instance_id: str | None = None) -> Instance | None:
        """The stored instance by id, or the subject's open form; None when there is none."""
        if instance_id is not None:
            return self.adapter.get_instance(instance_id)
        return self.find_open()

    def instances(self, listing: Listing, *, damaged: list[StoreError] | None = None) -> list[InstanceSummary]:
        """Stored instances, most recently updated first, with the status a reader sees (``stale`` included).

        ``listing.subject=None`` lists every subject's. ``listing.status`` filters on the status as
        read, so ``status="stale"`` finds stale instances without opening them. ``damaged``, when
        the store supports it, collects the errors of instances it had to leave out.
        """
        status, limit = listing.status, listing.limit
        # Abandoned and complete are never stale, and no status but stale is ever read differently
        # from the stored one unless the stored one is stale or the instance drifted: filter after reading.
        exact = status is None or status in (ABANDONED, COMPLETE)
        found = self.adapter.find_instances(
            subject=listing.subject,
            def_id=listing.def_id,
            status=status if exact else None,
            limit=limit if exact else None,
            damaged=damaged,
        )
        versions: dict[str, CompiledForm | None] = {}
        out: list[InstanceSummary] = []
        for instance in found:
            read = self._read_status(instance, versions)
            if status is not None and read != status:
                continue
            out.append(summarise(instance, read))
            if limit is not None and len(out) >= limit:
                break
        return out

    def view(self, instance_id: str | None = None) -> InstanceView:
        """A read-only view (registered form, stored instance, evaluation, status as read) of any instance.

        Unlike ``status``/``inspect`` it does not refuse a stale instance: it evaluates the stored
        answers against the registered form and says ``stale``. Raises NotFoundError, UnknownFormError.
        """
        compiled, instance = self.read(instance_id)
        status = read_status(compiled, instance)
        ev = self.evaluation_of(compiled, instance)
        return InstanceView(compiled, instance, ev, status, status == STALE, complete_flag(compiled, ev, instance))

    def status(self, instance_id: str | None = None) -> FormView:
        """Tier 1: the open step in full (or the last step of a finished form)."""
        compiled, instance = self.readable(instance_id)
        return step_view(compiled, self.evaluation_of(compiled, instance), instance)

    def inspect(self, scope: str = "outline", id: str | None = None, instance_id: str | None = None) -> FormView:
        """Tier 2: a step (by id or title), one field (by id or label), or the whole outline."""
        compiled, instance = self.readable(instance_id)
        ev = self.evaluation_of(compiled, instance)
        if scope == "outline":
            return outline_view(compiled, ev, instance)
        if scope == "step":
            return step_view(compiled, ev, instance, id)
        if scope == "field":
            if not id:
                raise InvalidArgumentError("scope=field needs an id.")
            return field_view(compiled, ev, instance, id)
        raise InvalidArgumentError(f'Unknown scope "{scope}": use outline, step or field.')

    def outline(self, form_id: str) -> FormView:
        """A registered form's outline as an instance not yet started would show it, without one
        being created: what a client is shown before anything is started (``formctl mcp``'s outline
        resource). The view has no instance id."""
        compiled = self.compiled(form_id)
        blank = Instance(id="", def_id=compiled.id, def_version=compiled.version, subject=self.subject)
        return outline_view(compiled, evaluate(compiled, blank), blank)

    def tier0(self, subject: str | None = None, instance_id: str | None = None) -> str:
        """The standing status line of an instance (by id, else the subject's open form); "" when
        there is none or it cannot load."""
        try:
            if instance_id is not None:
                instance = self.adapter.get_instance(instance_id)
            else:
                instance = self.find_open(subject)
            if instance is None:
                return ""
            compiled = self.load(instance)
            return render_tier0(compiled, self.evaluation_of(compiled, instance), instance)
        except Exception:
            return ""

    def history(self, field: str, instance_id: str | None = None) -> FieldHistory:
        """Every answer ever given to one field, oldest first."""
        compiled, instance = self.readable(instance_id)
        field_id = compiled.resolve_field(field)
        if field_id is None:
            if field in instance.entries:  # a field a later definition dropped: its log is still there
                return field_history(instance, field, field)
            raise NotFoundError(f'No field "{field}" on this form.')
        return field_history(instance, field_id, compiled.field_by_id[field_id].label)

    def evaluation(self, instance_id: str | None = None) -> tuple[CompiledForm, Instance, Evaluation]:
        """The compiled form, stored instance and its evaluation (for views the CLI renders itself)."""
        compiled, instance = self.readable(instance_id)
        return compiled, instance, self.evaluation_of(compiled, instance)

    def continuation(self, form_id: str) -> Continuation:
        """Which of the subject's instances of ``form_id`` a new conversation carries on with
        (docs/engine.md, "Completion and closing").

        The most recently updated one that is not closed decides: an open one (or a stale one,
        flagged ``stale``: the chat offers to migrate it) is continued; a complete one means a new
        instance starts, and ``complete_id`` names it. Closed instances are passed over. Raises the
        store's :class:`StoreError` when an instance it last saw open cannot be read: starting a
        new one beside it would hide the person's half-filled form (the caller says how to fix it).
        """
        compiled = self.registry.load(form_id)
        found = self.adapter.find_instances(subject=self.subject, def_id=compiled.id, strict=True)
        for instance in found:  # most recent first
            if is_continuable(instance):
                return Continuation(compiled.id, instance.id, stale=is_stale(compiled, instance))
            if instance.status == COMPLETE:
                return Continuation(compiled.id, None, complete_id=instance.id)
        return Continuation(compiled.id, None)

    def stamp(self, instance_id: str) -> Stamp | None:
        """The instance's change stamp (:data:`~formctl.forms.reading.Stamp`), or None when there
        is no such instance: a status bar polls this, and reads the views only when it moves."""
        instance = self.adapter.get_instance(instance_id)
        return stamp_of(instance) if instance is not None else None

    def damage(self, instance_id: str) -> DamageReport | None:
        """What the store lost of this instance, or None (always None for a store that cannot lose
        acknowledged commits). While there is damage, writes to it are refused; reads go on."""
        if isinstance(self.adapter, Maintainable):
            return self.adapter.damage(instance_id)
        return None

    def repairs(self, instance_id: str) -> tuple[dict[str, Any], ...]:
        """The losses ``formctl store repair`` accepted on this instance, oldest first (none for a
        store that cannot lose an acknowledged commit)."""
        if isinstance(self.adapter, Maintainable):
            return self.adapter.repairs(instance_id)
        return ()

    # ------------------------------------------------------------------ resolution

    def find_open(self, subject: str | None = None) -> Instance | None:
        """What ``instance_id=None`` means: the conversation's instance when the runner has a
        ``default`` (while it is not closed), else the subject's open form: its latest instance
        that is not closed, complete included (not :func:`~formctl.forms.lifecycle.is_open`)."""
        subject = subject or self.subject
        if self.default is None:
            return self.adapter.find_latest_unclosed(subject)
        if self.default.instance_id is None:
            return None
        instance = self.adapter.get_instance(self.default.instance_id)
        if instance is None or is_closed(instance) or instance.subject != subject:
            return None
        return instance

    def load(self, instance: Instance) -> CompiledForm:
        return self.registry.load(instance.def_id)

    def _read_status(self, instance: Instance, forms: dict[str, CompiledForm | None]) -> str:
        """The status a reader sees, loading each form once per listing; a form that cannot load reads as stored."""
        if instance.def_id not in forms:
            try:
                forms[instance.def_id] = self.load(instance)
            except Exception:
                forms[instance.def_id] = None
        compiled = forms[instance.def_id]
        return instance.status if compiled is None else read_status(compiled, instance)

    def read(self, instance_id: str | None = None) -> tuple[CompiledForm, Instance]:
        """The stored instance (by id, else the subject's open form) and its registered form. Writes nothing."""
        if instance_id is not None:
            instance = self.adapter.get_instance(instance_id)
            if instance is None:
                raise NotFoundError(f'No form instance "{instance_id}".')
        else:
            instance = self.find_open()
            if instance is None:
                raise NotFoundError(f'No open form instance for subject "{self.subject}".')
        return self.load(instance), instance

    def readable(self, instance_id: str | None) -> tuple[CompiledForm, Instance]:
        """For the views: the instance as stored, refused with FormStaleError when it is stale."""
        compiled, instance = self.read(instance_id)
        if is_stale(compiled, instance):
            raise FormStaleError(instance.def_version, compiled.version)
        return compiled, instance

    def evaluation_of(self, compiled: CompiledForm, instance: Instance) -> Evaluation:
        return self.evaluations.of(compiled, instance)
