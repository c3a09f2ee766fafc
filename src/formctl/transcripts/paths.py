"""Which files a command reads when it is given paths: ``formctl replay`` its transcripts,
``formctl eval`` its scenarios. Each path given is a file as it is, or a folder searched for
``*.toml`` files (hidden ones left out); a file reached twice is read once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["toml_files", "transcript_files"]


def toml_files(paths: Iterable[Path], keep: Callable[[Path], bool] | None = None) -> list[Path]:
    """Files as given, folders searched recursively for ``*.toml`` (sorted, only those ``keep``
    accepts), each once: the first time it is reached, however its path is spelled."""
    out: list[Path] = []
    seen: set[str] = set()
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.toml") if not q.name.startswith(".") and (keep is None or keep(q)))
        else:
            found = [p]
        for q in found:
            key = str(q.resolve())
            if key not in seen:
                seen.add(key)
                out.append(q)
    return out


def transcript_files(paths: list[Path]) -> list[Path]:
    """Files as given, folders searched recursively for ``*.toml`` (sorted), without duplicates."""
    return toml_files(paths)
