"""No module imports another that imports it back, directly or through others (docs/engine.md,
"How the code is cut"): two modules in a circle are one concept cut in the wrong place. The graph is grimp's,
the one import-linter checks the layer contracts on, and it counts every import: those made
inside a function and those made only for the type checker too."""

from __future__ import annotations

import grimp


def _circles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    circles: set[tuple[str, ...]] = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                circle = (module, *back)  # module -> imported -> ... -> module
                start = circle.index(min(circle[:-1]))
                circles.add(circle[start:-1] + circle[:start] + (circle[start],))
    return sorted(circles)


def test_the_package_has_no_import_circle():
    graph = grimp.build_graph("formctl", cache_dir=None)

    assert _circles(graph) == []


def test_the_check_finds_a_circle_when_there_is_one(tmp_path, monkeypatch):
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circled import b\n")
    (package / "b.py").write_text("def f():\n    from circled import c\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    graph = grimp.build_graph("circled", cache_dir=None)

    assert _circles(graph) == [("circled.a", "circled.b", "circled.c", "circled.a")]
