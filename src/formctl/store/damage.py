"""Damage: an instance whose files hold less than the store acknowledged.

Two kinds, one answer. The index (the store's record of the last version it acknowledged
for each instance) says version 8 but the files hold 5: a journal was cut short, emptied
or deleted, or an old snapshot was restored. Or a record inside the journal is corrupt
although records were written after it, so nothing from it on can be applied.

Either way reads still work (they show what the files hold, and say it is damaged), and
every write to the instance is refused with :class:`StoreDamagedError`: a write would
cut the damaged tail off and bury the evidence. ``formctl store repair ID`` accepts the
loss (``JsonFileAdapter.repair``). A torn *last* record is not damage: its writer was
killed before the commit was acknowledged, so nothing acknowledged was lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from formctl.errors import StoreDamagedError
from formctl.store.files import Loaded

__all__ = ["Damage", "assess", "versions_text"]


def versions_text(lost: tuple[int, int] | list[int] | None, verb: str = "is") -> str:
    """``version 5 is`` / ``versions 5-8 are`` (``verb`` in the singular: "is" or "was")."""
    if not lost:
        return f"a record that changes no version {verb}"
    plural = {"is": "are", "was": "were"}[verb]
    return f"version {lost[0]} {verb}" if lost[0] == lost[1] else f"versions {lost[0]}-{lost[1]} {plural}"


@dataclass(frozen=True, slots=True)
class Damage:
    instance_id: str
    path: str  # the file that lost something (the journal, or the snapshot when there is none)
    reason: str  # what is wrong, in a few words
    holds_version: int  # the version reads show
    lost_to: int  # the highest version known to have been reached (<= holds_version: only
    # records that do not bump the version, such as executor bookkeeping, were lost)

    @property
    def lost(self) -> tuple[int, int] | None:
        """The versions missing, first and last, or None."""
        return (self.holds_version + 1, self.lost_to) if self.lost_to > self.holds_version else None

    def describe(self) -> str:
        """One line, for a warning or an error."""
        what = f"{versions_text(self.lost)} missing"
        return f"instance {self.instance_id} is damaged: {what} from its files ({self.reason}); reads show version {self.holds_version}"

    def to_dict(self) -> dict[str, Any]:
        lost = self.lost
        return {
            "instance_id": self.instance_id,
            "path": self.path,
            "reason": self.reason,
            "holds_version": self.holds_version,
            "missing_versions": {"from": lost[0], "to": lost[1]} if lost else None,
            "repair": f"formctl store repair {self.instance_id}",
        }

    def error(self) -> StoreDamagedError:
        return StoreDamagedError(
            f"{self.describe()}. Nothing was written: run `formctl store repair {self.instance_id}` "
            "to accept the loss before writing to it again.",
            self.to_dict(),
        )


def assess(iid: str, loaded: Loaded, acknowledged: int | None, snapshot_path: str, journal_path: str) -> Damage | None:
    """The damage of an instance as read (``acknowledged``: the version the index last recorded)."""
    held = loaded.instance.version
    corrupt = loaded.corrupt
    acknowledged = acknowledged or 0
    if corrupt is None and acknowledged <= held:
        return None
    if corrupt is not None:
        return Damage(iid, corrupt.path, corrupt.reason, held, max(acknowledged, corrupt.last_version))
    path = journal_path if loaded.jour_ino is not None else snapshot_path
    return Damage(iid, path, f"the store had acknowledged version {acknowledged}", held, acknowledged)
