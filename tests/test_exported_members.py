"""wasinn's public surface: ``__all__`` is exactly what the package exports, and
every public name, method and property is documented."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import wasinn

PACKAGE = Path(wasinn.__file__).resolve().parent


def public_names() -> set[str]:
    return {n for n in vars(wasinn) if not n.startswith("_")}


def is_type_alias(obj: Any) -> bool:
    """A typing alias such as ``Feeds`` (documented by a ``#:`` comment, not a docstring)."""
    return typing.get_origin(obj) is typing.Union


def own_doc(obj: Any) -> str:
    """The object's own docstring (a class's, not one inherited from its base)."""
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__") or ""
    return inspect.getdoc(obj) if callable(obj) else ""


def test_all_is_exactly_the_public_names() -> None:
    assert len(wasinn.__all__) == len(set(wasinn.__all__)), "a name is listed twice"
    assert set(wasinn.__all__) == public_names()
    star: dict[str, Any] = {}
    exec("from wasinn import *", star)
    assert set(star) - {"__builtins__"} == set(wasinn.__all__)


def test_exported_classes_and_functions_are_wasinns_own() -> None:
    for name in wasinn.__all__:
        obj = getattr(wasinn, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__.startswith("wasinn."), f"{name} comes from {obj.__module__}"
            assert obj.__name__ == name, f"{name} is exported under another name ({obj.__name__})"


@pytest.mark.parametrize("name", sorted(wasinn.__all__))
def test_every_public_name_has_a_docstring(name: str) -> None:
    obj = getattr(wasinn, name)
    if inspect.ismodule(obj):  # a public submodule (wasinn.ops): its own docstring
        assert (obj.__doc__ or "").strip(), f"{name} has no module docstring"
    elif (inspect.isclass(obj) or callable(obj)) and not is_type_alias(obj):
        assert own_doc(obj).strip(), f"{name} has no docstring of its own"
    else:
        assert doc_comment(name), f"{name} has no '#:' comment where it is defined"


def doc_comment(name: str) -> str:
    """The ``#:`` comment above the module-level assignment that defines ``name``."""
    init = ast.parse((PACKAGE / "__init__.py").read_text())
    module = next(
        node.module
        for node in init.body
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names)
    )
    path = PACKAGE / f"{module}.py"
    lines = path.read_text().splitlines()
    for node in ast.parse("\n".join(lines)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            return above[2:].strip() if above.startswith("#:") else ""
    raise AssertionError(f"{name} is not assigned at the top of {path.name}")


def _public_members(cls: type) -> list[tuple[str, Any]]:
    members = []
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            members.append((attr, value))
    return members


@pytest.mark.parametrize(
    "name", sorted(n for n in wasinn.__all__ if inspect.isclass(getattr(wasinn, n)))
)
def test_every_public_method_and_property_has_a_docstring(name: str) -> None:
    cls = getattr(wasinn, name)
    undocumented = [
        attr for attr, value in _public_members(cls) if not (value.__doc__ or "").strip()
    ]
    assert not undocumented, f"{name}: {undocumented} have no docstring"


def _is_exception(obj: Any) -> bool:
    return inspect.isclass(obj) and issubclass(obj, BaseException)


# The error classes share WasiNNError's example; everything else shows its own use.
WITH_EXAMPLES = sorted(
    n
    for n in wasinn.__all__
    if callable(getattr(wasinn, n))
    and not is_type_alias(getattr(wasinn, n))
    and (not _is_exception(getattr(wasinn, n)) or n == "WasiNNError")
)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_public_classes_and_functions_show_an_example(name: str) -> None:
    doc = own_doc(getattr(wasinn, name))
    assert "Example::" in doc or ">>>" in doc, f"{name}'s docstring has no example"
