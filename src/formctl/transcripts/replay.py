"""Replay a transcript: the regression test of a form definition.

Three ways, described in docs/transcripts.md ('Replaying'): **exact** (the default, offline:
the recorded model turns are played back and every tool result, tier-0 line and the end state
compared), **update** (rewrite the file from a new run, never writing one that contradicts
itself) and **live** (play the person turns against a model and grade on ``[expect]``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from formctl.errors import TranscriptError, UnknownFormError
from formctl.transcripts import changes as _changes
from formctl.transcripts import diff as _diff
from formctl.transcripts.compare import Divergence, ReplayResult, compare_end, compare_turn
from formctl.transcripts.format import Transcript, Turn, dump, dumps, leading_comments, load
from formctl.transcripts.play import ModelFactory, play, recorded_model, recorded_replies
from formctl.transcripts.record import OPENER, opens_conversation

if TYPE_CHECKING:
    from formctl.agent.models.base import ChatModel
    from formctl.forms.compile import CompiledForm
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner
    from formctl.transcripts.coverage import Coverage

GUIDED = "guided"  # the offline model's name: its turns can be made again, a real model's cannot
# registry.toml → (its forms folder's files as they were, the registry read from them); see find_registry.
_registries: dict[str, tuple[tuple[tuple[str, int, int], ...], FormRegistry]] = {}


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """How to replay (the module docstring's three ways) and what to collect on the way.

    ``model`` is the model a live replay plays to: one built already, one named as ``formctl run``
    takes it (``anthropic:NAME``), or None for the offline guided model. ``coverage`` gathers
    what each replay exercised of its form; ``accept_text`` lets ``update`` keep a real model's
    recorded words after the tool results they followed have changed.
    """

    update: bool = False
    live: bool = False
    model: ChatModel | str | None = None
    coverage: Coverage | None = None
    accept_text: bool = False

    @property
    def mode(self) -> str:
        return "live" if self.live else "exact"


# --------------------------------------------------------------------------- registry


PROJECT_MARKERS = (".git", "pyproject.toml")
"""What makes a folder a project root: the walk up from a transcript stops there."""


def registry_candidates(
    path: str | os.PathLike[str] | None = None, forms: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Where :func:`find_registry` looks, in order (docs/transcripts.md, "Which forms").

    ``forms`` or ``$FORMCTL_FORMS`` alone when given. Otherwise ``./forms``, as every command
    reads the project it runs in, and then, for a transcript replayed from outside its project,
    each ``forms/`` above the transcript's folder up to its project root (the nearest folder
    holding one of :data:`PROJECT_MARKERS`; the whole way up when there is none). The current
    folder comes first because a ``forms/`` that merely sits above a transcript (a temporary
    folder's, a colleague's experiment in ``/tmp/forms``) is not the project's, and picking it
    silently replays against forms nobody meant.
    """
    given = forms or os.environ.get("FORMCTL_FORMS")
    if given:
        return [Path(given)]
    candidates = [Path("forms")]
    if path is not None:
        for parent in Path(path).resolve().parents:
            candidates.append(parent / "forms")
            if any((parent / marker).exists() for marker in PROJECT_MARKERS):
                break
    return candidates


def find_registry(
    path: str | os.PathLike[str] | None = None, forms: str | os.PathLike[str] | None = None
) -> FormRegistry:
    """The forms registry for the transcript (or scenario) at ``path``: the first of
    :func:`registry_candidates` holding a ``registry.toml``.

    Cached per registry file, so a folder of transcripts compiles each form once; but only
    while no file in the forms folder has changed: a process that replays, lets the author edit
    a form, and replays again (a host, or two ``formctl replay`` commands run in one process)
    replays against the edited form, as a new process would."""
    from formctl.forms.registry import FormRegistry

    for folder in registry_candidates(path, forms):
        reg = folder if folder.suffix == ".toml" else folder / "registry.toml"
        if reg.is_file():
            key = str(reg.resolve())
            now = _files(reg.resolve().parent)
            cached = _registries.get(key)
            if cached is None or cached[0] != now:
                cached = _registries[key] = (now, FormRegistry.from_toml(reg))
            return cached[1]
    if forms or os.environ.get("FORMCTL_FORMS"):  # named, so only that one was looked at
        raise TranscriptError(f"no forms registry at {reg}")
    raise TranscriptError(
        "no forms registry found (looked for forms/registry.toml in the current folder and above the "
        "transcript, up to its project root); pass --forms DIR or set FORMCTL_FORMS",
        path=path,
    )


def _files(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """Each file directly in ``folder`` (the registry and the form modules) with its mtime and size."""
    try:
        with os.scandir(folder) as entries:
            found = []
            for entry in entries:
                if entry.is_file():
                    info = entry.stat()
                    found.append((entry.name, info.st_mtime_ns, info.st_size))
    except OSError:
        return ()
    return tuple(sorted(found))


# --------------------------------------------------------------------------- entry points


def replay_file(
    path: str | os.PathLike[str],
    options: ReplayOptions | None = None,
    *,
    registry: FormRegistry | None = None,
    forms: str | os.PathLike[str] | None = None,
) -> ReplayResult:
    """Replay one transcript file. Never raises for a bad file: that is a failed result naming the line.

    The forms are ``registry`` when given, else the one :func:`find_registry` finds for the
    file (``forms``: the folder to use)."""
    options = options or ReplayOptions()
    started = time.perf_counter()
    name = Path(path).stem
    try:
        transcript = load(path)
        if registry is None:
            registry = find_registry(path, forms)
        result = replay(transcript, registry, options)
    except TranscriptError as exc:
        result = ReplayResult(name, str(path), False, f"  {exc}", mode=options.mode)
    except Exception as exc:  # one broken transcript (or form) must not stop the rest of the run
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        result = ReplayResult(
            name,
            str(path),
            False,
            f"  replay failed: {type(exc).__name__}: {message}",
            mode=options.mode,
        )
    result.seconds = time.perf_counter() - started
    return result


def replay(transcript: Transcript, registry: FormRegistry, options: ReplayOptions | None = None) -> ReplayResult:
    """Replay a loaded transcript against ``registry`` (see the module docstring for the modes)."""
    options = options or ReplayOptions()
    path = transcript.path or transcript.name
    if transcript.program is not None:  # a goal program's walk (format 2): replayed exactly, as recorded
        from formctl.transcripts.program_replay import replay_program

        return replay_program(transcript, registry)
    if not transcript.recorded:  # nothing to play back: a hand-written scenario is played live
        options = replace(options, live=True)
    try:
        compiled = registry.load(transcript.form)
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc)
        folder = getattr(registry, "folder", None)
        if isinstance(exc, UnknownFormError) and folder is not None:
            # Which registry was asked: the lookup order decides it (docs/transcripts.md, "Which forms").
            message = f"{message.rstrip('.')} in {folder / 'registry.toml'}; pass --forms DIR for another forms folder."
        return ReplayResult(
            transcript.name,
            path,
            False,
            f"  cannot load form {transcript.form!r}: {message}",
            mode=options.mode,
        )
    if transcript.resumed and not options.live:
        return ReplayResult(
            transcript.name,
            path,
            False,
            "  recorded over an instance that already had answers (formctl resume); a replay starts from an "
            "empty store, so it cannot reproduce it. Record from the start with `formctl run FORM --record`.",
        )
    if options.live:
        return _live(transcript, registry, compiled, options)
    if options.update and transcript.model == GUIDED:
        return _regenerate(transcript, registry, compiled, options.coverage)
    return _exact(transcript, registry, compiled, options)


# --------------------------------------------------------------------------- exact


def _exact(
    transcript: Transcript, registry: FormRegistry, compiled: CompiledForm, options: ReplayOptions
) -> ReplayResult:
    path = transcript.path or transcript.name
    model = recorded_model(recorded_replies(transcript), transcript.model)
    watch = _Divergences(keep_going=options.update)
    make_model = _model_factory(model, transcript.form)
    rec, _, _ = play(transcript, registry, compiled, make_model, coverage=options.coverage, on_turn=watch)
    divergences = watch.found
    new_t = rec.transcript
    request_changed = _request_diff(transcript, new_t)
    if options.update:
        return _update_kept_words(transcript, rec.masked(), model.remaining, request_changed, options.accept_text)
    if request_changed and not divergences:
        divergences.insert(
            0, Divergence(1, transcript.turns[0].label() if transcript.turns else "start", request_changed)
        )
    end = None
    if not divergences:
        end = compare_end(transcript.expect, new_t.expect)
        if end is not None and model.remaining:
            end = f"    {model.remaining} recorded model call(s) were never played\n" + end
    played_all = model.remaining == 0
    text = "\n".join(d.render() for d in divergences[:1])
    if end:
        text = (text + "\n" if text else "") + "  the end state differs:\n" + end
    elif not divergences and not played_all:
        text = f"  {model.remaining} recorded model call(s) were never played"
    return ReplayResult(transcript.name, path, not text, text, "exact", len(transcript.turns))


class _Divergences:
    """Each played turn compared with its recording (``play``'s ``on_turn``): the divergences found,
    in order. An exact replay stops at the first (later ones are usually its echoes); an update
    (``keep_going``) plays the whole conversation."""

    def __init__(self, *, keep_going: bool) -> None:
        self.keep_going = keep_going
        self.found: list[Divergence] = []

    def __call__(self, n: int, old: Turn, new: Turn) -> bool:
        divergence = compare_turn(n, old, new)
        if divergence is None:
            return False
        self.found.append(divergence)
        return not self.keep_going


def _update_kept_words(
    old: Transcript, new: Transcript, unplayed: int, request: str | None, accept_text: bool
) -> ReplayResult:
    """``--update`` of a real model's transcript: its replies are kept as they were recorded.

    The tool results and ``[expect]`` are the new run's. A reply whose words were written
    after a tool result (or tier-0 line) that has now changed may say something the form no
    longer does: unless ``accept_text``, such a file is not written, and the replies are
    listed so the author can re-record the conversation or accept the words as they are.
    """
    path = old.path or old.name
    end = compare_end(old.expect, new.expect)
    text = _changes.describe(old, new, end=end, request=request)
    if unplayed:
        text = (text + "\n" if text else "") + f"  {unplayed} recorded model call(s) were never played"
    stale = _changes.stale_words(old, new)
    if stale and not accept_text:
        text = (text + "\n" if text else "") + (
            f"  {len(stale)} kept model repl{'y was' if len(stale) == 1 else 'ies were'} written after a tool "
            "result that has changed, so the words may no longer fit (not written):\n"
            + "\n".join(s.render() for s in stale)
            + "\n  re-record the conversation (formctl run FORM --record PATH), or keep the words as they are "
            "with --update --accept-text"
        )
        return ReplayResult(old.name, path, False, text, "exact", len(old.turns), stale_words=stale)
    written = _rewrite(old, new)  # sensitive values never reach the file
    return ReplayResult(
        old.name, path, True, text if written else "", "exact", len(old.turns), updated=written, stale_words=stale
    )


def _regenerate(
    transcript: Transcript, registry: FormRegistry, compiled: CompiledForm, coverage: Coverage | None
) -> ReplayResult:
    """``--update`` of a guided-model transcript: the guided model answers every turn again.

    Its replies follow from the form, so a changed form changes what it says; keeping the old
    words beside the new tool results would write a transcript that contradicts itself.
    """
    path = transcript.path or transcript.name
    rec, _, _ = play(transcript, registry, compiled, _model_factory(None, transcript.form), coverage=coverage)
    new_t = rec.masked()  # sensitive values never reach the file
    text = _changes.describe(
        transcript, new_t, end=compare_end(transcript.expect, new_t.expect), request=_request_diff(transcript, new_t)
    )
    written = _rewrite(transcript, new_t)
    return ReplayResult(
        transcript.name, path, True, text if written else "", GUIDED, len(transcript.turns), updated=written
    )


def _request_diff(old: Transcript, new: Transcript) -> str | None:
    parts = []
    if old.system is not None and new.system is not None and old.system != new.system:
        parts.append("    the system prompt changed:\n" + _diff.text_diff(old.system, new.system, indent="      "))
    if old.tools_digest and new.tools_digest and old.tools_digest != new.tools_digest:
        parts.append(
            f"    the tool definitions sent to the model changed ({old.tools_digest} → {new.tools_digest}); "
            "if that is intended, `formctl replay --update` records the new ones"
        )
    return "\n".join(parts) or None


def _rewrite(old: Transcript, new: Transcript) -> bool:
    """Write the replayed transcript over the old file; False when the file already said exactly that."""
    new.path = old.path
    new.model = old.model
    new.masked = old.masked or new.masked
    if not old.path:
        return False
    try:
        before = Path(old.path).read_text(encoding="utf-8")
    except OSError:
        before = ""
    header = leading_comments(before) or None
    if before == dumps(new, header=header):
        return False
    dump(new, old.path, header=header)
    return True


# --------------------------------------------------------------------------- live


def _live(
    transcript: Transcript, registry: FormRegistry, compiled: CompiledForm, options: ReplayOptions
) -> ReplayResult:
    path = transcript.path or transcript.name
    if not transcript.recorded and not opens_conversation(transcript.turns[0] if transcript.turns else None):
        # A hand-written scenario lists answers. `formctl run` opens every conversation with
        # the same first message, so the model speaks first and each line is an answer: so
        # does a live replay (and `--update` records that opening turn).
        transcript = replace(transcript, turns=[Turn("person", text=OPENER), *transcript.turns])
    make_model = _model_factory(options.model, transcript.form)
    rec, _, chat_model = play(transcript, registry, compiled, make_model, coverage=options.coverage)
    new_t = rec.transcript
    problems = [f"    turn {n} ({t.label()}): {t.error}" for n, t in enumerate(new_t.turns, 1) if t.error]
    end: str | None
    if transcript.expect is None:
        end = "    the transcript has no [expect] table to grade against"
    else:
        end = compare_end(transcript.expect, new_t.expect, exact=False)
    text = ""
    if end:
        text = "  the end state differs from [expect]:\n" + end
        if problems:
            text += "\n  the model reported:\n" + "\n".join(problems)
    passed = not text
    if options.update and new_t.expect is not None:
        from formctl.agent.models import model_label

        transcript.model = model_label(chat_model) or new_t.model
        written = _rewrite(transcript, rec.masked())  # sensitive values never reach the file
        return ReplayResult(transcript.name, path, passed, text, "live", len(transcript.turns), updated=written)
    return ReplayResult(transcript.name, path, passed, text, "live", len(transcript.turns))


def _model_factory(model: ChatModel | str | None, form_id: str) -> ModelFactory:
    """How to get the model for a replay's runner: one given, one named (``pick_model``), or guided."""
    if model is not None and not isinstance(model, str):
        given = model
        return lambda runner: given

    def build(runner: FormRunner) -> ChatModel:
        from formctl.agent.models import pick_model

        return pick_model(runner, model_name=model, offline=model is None, form_id=form_id)

    return build
