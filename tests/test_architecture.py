"""The layers of ``guest/wasinn`` point one way: down, as ``docs/architecture.md`` declares.

The layer table in docs/architecture.md is the one declaration: every module
of the package sits in exactly one layer, and a module may import only from
its own layer or a lower one. Every import counts, at any depth of the code
(inside functions, under ``TYPE_CHECKING``), and the import graph must have
no cycle. The tests run on the source with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "guest" / "wasinn"
DOC = ROOT / "docs" / "architecture.md"

Graph = dict[str, set[str]]


def declared_layers(text: str) -> dict[str, int]:
    """Module name (dotted, under ``wasinn``) -> layer number, from the doc's table rows
    (``| 3 | `_formats.ir` `_formats.source` | ... |``)."""
    layers: dict[str, int] = {}
    for line in text.splitlines():
        row = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if not row:
            continue
        for module in re.findall(r"`([\w.]+)`", row.group(2)):
            assert module not in layers, f"{module} is in two layers of {DOC.name}"
            layers[module] = int(row.group(1))
    return layers


def modules() -> dict[str, Path]:
    """Every module of the package (``__init__`` files as their package), but the
    generated bindings; compiled modules by their ``.pyi`` stubs."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi") or "_bindings" in path.parts:
            continue
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"
        if path.suffix == ".pyi" and name in found:
            continue
        found[name] = path
    return found


def imports(name: str, path: Path, known: set[str], package: str | None = None) -> set[str]:
    """The package's modules that ``name`` (at ``path``, in ``package``: by
    default where the path lies) imports, anywhere in its code."""
    if package is None:
        package = ".".join(path.relative_to(PACKAGE).parent.parts)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("wasinn"):
                target = node.module.removeprefix("wasinn").lstrip(".")
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if sub in known else target or "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("wasinn."):
                    out.add(alias.name.removeprefix("wasinn."))
    out.discard(name)
    return {m for m in out if m in known or m.startswith("_bindings")} - {""}


def import_graph() -> Graph:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def upward(graph: Graph, layers: dict[str, int]) -> list[str]:
    """Imports from a lower layer to a higher one, as ``a (layer) -> b (layer)``."""
    found = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            if b.startswith("_bindings"):
                continue
            if layers[b] > layers[a]:
                found.append(f"{a} (layer {layers[a]}) imports {b} (layer {layers[b]})")
    return found


def test_every_module_is_in_exactly_one_layer() -> None:
    layers = declared_layers(DOC.read_text())
    found = set(modules())
    assert not found - set(layers), (
        f"not in {DOC.name}'s layer table: {sorted(found - set(layers))}"
    )
    assert not set(layers) - found, (
        f"in the table but not in the package: {sorted(set(layers) - found)}"
    )


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_no_import_points_up() -> None:
    assert upward(import_graph(), declared_layers(DOC.read_text())) == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    # A function-level import back up, as the graph core once made to load models.
    graph = import_graph()
    graph["_graph.core"] = graph["_graph.core"] | {"_model.model"}
    assert cycles(graph), "a cycle through a function-level import was not found"
    layers = declared_layers(DOC.read_text())
    assert upward(graph, layers) == [
        f"_graph.core (layer {layers['_graph.core']}) imports _model.model "
        f"(layer {layers['_model.model']})"
    ]
    source = PACKAGE / "_graph" / "core.py"
    text = source.read_text() + "\n\ndef f():\n    from .._model import model\n    return model\n"
    copy = tmp_path / "core.py"
    copy.write_text(text)
    assert "_model.model" in imports("_graph.core", copy, set(modules()), package="_graph")


@pytest.mark.parametrize("name", ["__init__", "_builder", "_model.model", "_formats.onnx_read"])
def test_the_graph_sees_real_imports(name: str) -> None:
    assert import_graph()[name], f"{name} imports nothing, so the parser is broken"


def test_formats_and_images_stay_apart() -> None:
    """The two layer-3 rows sit side by side: neither imports the other."""
    graph = import_graph()
    crossing = [
        f"{a} imports {b}"
        for a, targets in graph.items()
        for b in targets
        for mine, other in (("_formats", "_image"), ("_image", "_formats"))
        if a.split(".")[0] == mine and b.split(".")[0] == other
    ]
    assert crossing == []
