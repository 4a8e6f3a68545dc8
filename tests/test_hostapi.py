"""The host layer's interface: the real ``_host.wasi`` and both fakes implement ``HostLayer``.

``_host.wasi`` imports componentize-py's runtime, which exists only inside a
component, so every implementation is read as source with ``ast``: the
same method names, parameter names, annotations and return annotations as
the Protocol, word for word. A fake that drifts from the real layer would
let logic tests pass against a host that does not exist.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fake_host import FakeHost

from wasinn._host import api as _hostapi
from wasinn._host import host as host_module

ROOT = Path(__file__).resolve().parent.parent
WASINN = ROOT / "guest" / "wasinn"
TESTS = ROOT / "tests"

Signature = tuple[tuple[tuple[str, str], ...], str]


def _signature(fn: ast.FunctionDef, method: bool) -> Signature:
    args = fn.args
    assert not (args.vararg or args.kwarg or args.kwonlyargs or args.defaults), (
        f"{fn.name}: the host layer takes plain positional parameters only"
    )
    params = args.posonlyargs + args.args
    if method:
        assert params and params[0].arg == "self", f"{fn.name} is not an instance method"
        params = params[1:]
    return (
        tuple((a.arg, ast.unparse(a.annotation) if a.annotation else "") for a in params),
        ast.unparse(fn.returns) if fn.returns else "",
    )


def signatures(path: Path, cls: str | None) -> dict[str, Signature]:
    """Public functions of a module (``cls=None``) or methods of one of its classes."""
    tree = ast.parse(path.read_text(), str(path))
    body: list[ast.stmt] = tree.body
    if cls is not None:
        found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
        assert found, f"{path.name} defines no class {cls}"
        body = found[0].body
    return {
        n.name: _signature(n, method=cls is not None)
        for n in body
        if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
    }


def protocol() -> dict[str, Signature]:
    return signatures(WASINN / "_host" / "api.py", "HostLayer")


def test_the_protocol_is_what_model_uses() -> None:
    assert set(protocol()) == {"load", "load_by_name", "init_context", "compute", "release"}
    # Everything the model and the Host object call on a host's layer is in the Protocol.
    called = set()
    for path in (WASINN / "_model" / "model.py", WASINN / "_host" / "host.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, (ast.Name, ast.Attribute))
                and (node.value.id if isinstance(node.value, ast.Name) else node.value.attr)
                == "layer"
            ):
                called.add(node.attr)
    assert called and called <= set(protocol()), called - set(protocol())


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        (WASINN / "_host" / "wasi.py", None),
        (TESTS / "fake_host.py", "FakeHost"),
        (TESTS / "ov_host.py", "OVHost"),
    ],
    ids=["wasinn._host.wasi", "FakeHost", "OVHost"],
)
def test_every_host_layer_matches_the_protocol(path: Path, cls: str | None) -> None:
    want = protocol()
    got = signatures(path, cls)
    missing = sorted(set(want) - set(got))
    assert not missing, f"{path.name} lacks {missing}"
    for name, signature in want.items():
        assert got[name] == signature, (
            f"{path.name}: {name}{got[name]} differs from HostLayer's {signature}"
        )


def test_the_signature_check_can_fail(tmp_path: Path) -> None:
    source = (TESTS / "fake_host.py").read_text()
    drifted = tmp_path / "drifted.py"
    drifted.write_text(
        source.replace("def release(self, resource: Handle)", "def release(self, handle: Handle)")
    )
    got = signatures(drifted, "FakeHost")
    assert got["release"] != protocol()["release"]


def test_the_fake_satisfies_the_protocol_at_run_time() -> None:
    host: _hostapi.HostLayer = FakeHost()
    previous = host_module.use_default(host)
    assert host_module.use_default(previous) is host, "wasinn took the fake as its host"
    for name in protocol():
        assert callable(getattr(host, name))
