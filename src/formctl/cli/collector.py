"""Python's cyclic garbage collector while ``formctl`` starts (docs/startup.md, "The garbage
collector waits for start-up").

Start-up makes tens of thousands of objects that live as long as the process: modules, classes
(60-80 dataclasses whose methods are compiled as they are made), functions, pydantic schemas,
the form. The collector runs every 700 new objects and walks every young one, twice (young,
then middle-aged) before it is old, and finds nothing to free among them: 10-20 ms of a
command's ~250 ms of CPU (benchmarks/startup.py). So the console script holds the collector
from its first line (:func:`hold`, in ``app.py``) and lets it go (:func:`settled`) when the
process may go on for long: before any command that is not a short one (the list in
``app.py``), and in a chat when it first waits for the person's next line. A short command
ends with the collector still held: the memory a collection would free is given back at
exit anyway. :func:`settled` freezes what start-up made first (``gc.freeze``), so no later
collection walks it again.

Only the console script holds it: a host that imports formctl, or a test that runs the app in
its own process, keeps its collector as it set it.
"""

from __future__ import annotations

import gc

__all__ = ["hold", "held", "settled"]

_held = False


def hold() -> None:
    """No cyclic collection until :func:`settled` (a no-op when the collector is already off)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def held() -> bool:
    """Whether :func:`hold` holds the collector now."""
    return _held


def settled() -> None:
    """Start-up is over and the process may run for long: freeze the objects made so far and
    turn the collector back on. Does nothing unless :func:`hold` held it."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
