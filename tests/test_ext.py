"""C extension modules (tools/build_ext.py): wasinn's compiled kernels natively
and inside a component, the build's freshness stamps, the guest-ABI check, an
app's own C module (tests/otsu_app) and the package that ships the wasm build.

The unit tests build small C modules into folders made here, with a cache of
their own (stamps) seeded with the guest ABI that ``./build.sh setup`` probed.
The integration tests build components with ``./build.sh build``.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, build_app, run_component

from wasinn import DTYPES, _kernels

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "kernels_app"))
import build_ext  # noqa: E402
import kernels_cases  # noqa: E402
import sjlj_splice  # noqa: E402
import wasmtime_flags  # noqa: E402

TOOL = ROOT / "tools" / "build_ext.py"
GUEST_SUFFIX = ".cpython-314-wasm32-wasi.so"
REAL_SUFFIX = ".sjlj.wasm"  # a setjmp/longjmp module's real code (tools/sjlj_splice.py)
SJLJ_APP = ROOT / "tests" / "sjlj_app"
NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "u8": np.uint8,
      "i32": np.int32, "i64": np.int64}  # fmt: skip


# ---------------------------------------------------------------- wasinn's kernels, natively


def test_wasinn_runs_the_native_build_of_its_current_source() -> None:
    """The module the tests import is the .abi3.so built from ext/_kernels.c as it is now."""
    assert Path(_kernels.__file__) == ROOT / "guest" / "wasinn" / "_kernels.abi3.so"
    done = subprocess.run(
        [sys.executable, str(TOOL), str(ROOT / "guest" / "wasinn")], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), (
        "the compiled kernels are stale: run ./build.sh setup\n" + done.stderr
    )


def test_kernels_refuse_misuse() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'f8'"):
        _kernels.argmax(b"\0", "f8")
    with pytest.raises(ValueError, match="3 bytes is not a whole number of f32 elements"):
        _kernels.topk(b"abc", "f32", 1)
    with pytest.raises(ValueError, match="argmax of no elements"):
        _kernels.argmax(b"", "u8")
    with pytest.raises(ValueError, match="6 elements do not make lines of length 4"):
        _kernels.argmax_along(bytes(6), "u8", 4, 1)
    with pytest.raises(ValueError, match="k >= 0"):
        _kernels.topk(b"\0", "u8", -1)
    with pytest.raises(ValueError, match="not a whole number of f32"):
        _kernels.bf16_from_f32(b"abc")
    with pytest.raises(TypeError):
        _kernels.argmax(bytearray(4), "f32")  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64", "u8", "i32", "i64"])
def test_argmax_along_every_axis_matches_numpy(dtype: str) -> None:
    """Lines of every length and stride, with ties, NaNs (floats) and signed zeros."""
    rng = np.random.default_rng(17)
    shape = (3, 5, 1, 7)
    if dtype in ("u8", "i32", "i64"):
        arr = rng.integers(0, 4, shape).astype(NP[dtype])
        raw, wide = arr.tobytes(), arr
    else:
        wide = rng.choice([0.0, -0.0, 1.5, -2.0, np.inf, np.nan], shape)
        wide[0] = rng.choice([0.0, -0.0, 1.5], shape[1:])  # a block without NaN
        if dtype == "bf16":
            raw = _kernels.bf16_from_f32(wide.astype(np.float32).tobytes())
        else:
            raw = wide.astype(NP[dtype]).tobytes()
    for axis in range(len(shape)):
        inner = int(np.prod(shape[axis + 1 :]))
        got = _kernels.argmax_along(raw, dtype, shape[axis], inner)
        assert got == np.argmax(wide, axis=axis).ravel().tolist(), axis
    assert _kernels.argmax(raw, dtype) == int(np.argmax(wide))


def test_bf16_rounds_to_nearest_even_and_keeps_nan() -> None:
    import ml_dtypes

    special = [0.0, -0.0, 1.0, 1.00390625, 1.01171875, 3.4e38, -3.4e38, 1e-40, np.inf, -np.inf]
    values = np.array(special + list(np.random.default_rng(3).normal(0, 1e3, 5000)), np.float32)
    got = np.frombuffer(_kernels.bf16_from_f32(values.tobytes()), np.uint16)
    assert got.tolist() == values.astype(ml_dtypes.bfloat16).view(np.uint16).tolist()
    nans = np.array([0x7FC00000, 0x7F800001, 0xFF80FFFF], np.uint32).view(np.float32)
    halves = np.frombuffer(_kernels.bf16_from_f32(nans.tobytes()), np.uint16)
    assert all(h & 0x7F80 == 0x7F80 and h & 0x7F for h in halves.tolist())  # NaN, not inf
    back = np.frombuffer(_kernels.f32_from_bf16(got.tobytes()), np.float32)
    assert back.tobytes() == got.astype(np.uint32).__lshift__(16).tobytes()


# ---------------------------------------------------------------- wasinn's kernels, in a component


def _kernel_cases() -> list[dict[str, Any]]:
    """Tensors of every dtype with the values that make ordering hard."""
    rng = np.random.default_rng(23)
    cases: list[dict[str, Any]] = []
    floats = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 6e-8, 65504.0, 1e-30]
    for dtype in DTYPES:
        for shape in [(), (1,), (7,), (4, 6), (2, 3, 5), (3, 0), (1, 700)]:
            n = int(np.prod(shape))
            if dtype in ("u8", "i32", "i64"):
                info = np.iinfo(NP[dtype])
                pool = np.array([info.min, info.max, 0, 1, 2, 2, 3], dtype=NP[dtype])
                raw = rng.choice(pool, n).astype(NP[dtype]).tobytes()
            else:
                values = rng.choice(np.array(floats), n)
                if n > 20:  # mostly distinct values, the special ones among them
                    common = rng.random(n) < 0.9
                    values[common] = rng.normal(0, 3, int(common.sum()))
                if dtype == "bf16":
                    raw = _kernels.bf16_from_f32(values.astype(np.float32).tobytes())
                else:
                    with np.errstate(over="ignore"):
                        raw = values.astype(NP[dtype]).tobytes()
            for k in (0, 1, 3, n + 2):
                cases.append({"dtype": dtype, "shape": list(shape), "hex": raw.hex(), "k": k})
    cases.append({"dtype": "f32", "shape": [3], "hex": "00", "k": 1})  # refused: 1 byte
    return cases


@pytest.mark.integration
def test_kernels_in_a_component_match_native_and_numpy(tmp_path: Path) -> None:
    """The same Tensor calls in the guest (wasm build) and natively (.abi3.so):
    the same answers, and numpy's argmax and ranking."""
    app = build_app(ROOT / "tests" / "kernels_app")
    cases = _kernel_cases()
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = run_component(app, "cases.json", cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(cases)
    for case, line in zip(cases, lines, strict=True):
        native = kernels_cases.results(case)
        assert line == json.dumps(native), case  # floats and NaNs as text: exact
        if "error" in native or native["argmax"] is None:  # refused, or no elements
            continue
        flat = np.array(native["tolist"], dtype=np.float64).ravel()
        assert native["argmax"] == int(np.argmax(flat))
        ranked = sorted(range(flat.size), key=lambda i: (0, 0.0, i) if flat[i] != flat[i]
                        else (1, -flat[i], i))  # fmt: skip
        assert [i for i, _ in native["topk"]] == ranked[: case["k"]]
    assert json.loads(lines[-1])["error"] == "ValidationError"


# ---------------------------------------------------------------- build_ext: freshness


@pytest.fixture
def ext_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with one module (ext/_probe.c + a header), and a cache of its own
    that already knows the guest's ABI (probed by ./build.sh setup)."""
    folder = tmp_path / "app"
    (folder / "ext").mkdir(parents=True)
    (folder / "ext" / "scale.h").write_text("#define SCALE 2\n")
    (folder / "ext" / "_probe.c").write_text(textwrap.dedent("""\
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>
        #include "scale.h"
        #ifndef EXTRA
        #define EXTRA 0
        #endif
        static PyObject *value(PyObject *self, PyObject *noargs) {
            (void)self; (void)noargs;
            return PyLong_FromLong(21 * SCALE + EXTRA);
        }
        static PyMethodDef methods[] = {{"value", value, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_probe", NULL, -1, methods,
                                         NULL, NULL, NULL, NULL};
        PyMODINIT_FUNC PyInit__probe(void) { return PyModule_Create(&mod); }
        """))  # fmt: skip
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(build_ext.DEFAULT_CACHE / "guest-abi.json", cache / "guest-abi.json")
    return folder, cache


def run_tool(folder: Path, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != build_ext.EXTRA_FLAGS_ENV}
    return subprocess.run(
        [sys.executable, str(TOOL), str(folder), "--cache", str(cache)],
        capture_output=True, text=True, env={**environ, **env},
    )  # fmt: skip


def native_value(folder: Path) -> int:
    """What the native build returns, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", "import _probe; print(_probe.value())"],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(done.stdout)


def identities(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("_probe.*so")}


def test_ext_rebuilds_when_and_only_when_an_input_changes(ext_folder: tuple[Path, Path]) -> None:
    folder, cache = ext_folder
    first = run_tool(folder, cache)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("not built yet") == 2
    outputs = identities(folder)
    assert sorted(outputs) == ["_probe.abi3.so", "_probe" + GUEST_SUFFIX]
    assert (folder / ("_probe" + GUEST_SUFFIX)).read_bytes()[:4] == b"\0asm"
    assert native_value(folder) == 42
    # Reproducible: the same C in another folder gives the same bytes.
    elsewhere = Path(shutil.copytree(folder / "ext", folder.parent / "other" / "deep" / "ext"))
    assert run_tool(elsewhere.parent, cache).returncode == 0
    for name in outputs:
        assert (elsewhere.parent / name).read_bytes() == (folder / name).read_bytes(), name

    def rebuilt(why: str, **env: str) -> None:
        done = run_tool(folder, cache, **env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("build_ext: compiling") == 2 and why in done.stderr, done.stderr

    def unchanged(**env: str) -> None:
        before = identities(folder)
        done = run_tool(folder, cache, **env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert identities(folder) == before

    unchanged()
    source = folder / "ext" / "_probe.c"
    os.utime(source, (1e9, 1e9))  # a touch is not a change
    unchanged()
    source.write_text(source.read_text().replace("21 * SCALE", "20 * SCALE"))
    rebuilt("source _probe.c changed")
    assert native_value(folder) == 40
    (folder / "ext" / "scale.h").write_text("#define SCALE 3\n")
    rebuilt("/ext/scale.h changed")
    assert native_value(folder) == 60
    rebuilt("setting flags", WASINN_EXT_CFLAGS="-DEXTRA=1")
    assert native_value(folder) == 61
    unchanged(WASINN_EXT_CFLAGS="-DEXTRA=1")
    rebuilt("setting flags")
    (folder / "_probe.abi3.so").write_bytes(b"not the build")
    done = run_tool(folder, cache)
    assert done.stderr.count("compiling") == 1 and "_probe.abi3.so is missing or was changed" in (
        done.stderr
    )
    unchanged()


def test_a_failed_or_deleted_module_leaves_no_output(ext_folder: tuple[Path, Path]) -> None:
    folder, cache = ext_folder
    assert run_tool(folder, cache).returncode == 0
    source = folder / "ext" / "_probe.c"
    good = source.read_text()
    source.write_text(good + "int broken(void) { return undefined_name; }\n")
    failed = run_tool(folder, cache)
    assert failed.returncode == 1
    assert "undefined_name" in failed.stderr  # clang's own message
    assert "build_ext: could not compile" in failed.stderr and "_probe.c" in failed.stderr
    assert not list(folder.glob("*.so")) and not list(folder.glob(".*tmp"))
    source.write_text(good)
    assert run_tool(folder, cache).returncode == 0 and native_value(folder) == 42
    source.unlink()
    done = run_tool(folder, cache)
    assert (done.returncode, done.stderr) == (0, "")
    assert not list(folder.glob("*.so"))


def test_a_misspelt_directive_is_refused_and_leaves_no_output(
    ext_folder: tuple[Path, Path],
) -> None:
    """``/* build_ext: lnk zlib */`` would otherwise build a module without zlib."""
    folder, cache = ext_folder
    assert run_tool(folder, cache).returncode == 0
    source = folder / "ext" / "_probe.c"
    source.write_text("/* build_ext: lnk zlib */\n" + source.read_text())
    failed = run_tool(folder, cache)
    assert failed.returncode == 1
    assert "unknown /* build_ext: lnk */ (known: link: " in failed.stderr
    assert not list(folder.glob("*.so"))


def test_a_missing_toolchain_is_named_for_setup_to_install(
    ext_folder: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Status 3 and the Debian packages on stdout: what ./build.sh setup installs with apt-get."""
    folder, cache = ext_folder
    monkeypatch.setitem(build_ext.PACKAGES, "wasi-libc", Path("/nonexistent/stdlib.h"))
    assert build_ext.main([str(folder), "--cache", str(cache)]) == 3
    out, err = capsys.readouterr()
    assert out == "wasi-libc\n"
    assert "./build.sh setup installs it (by hand: apt-get install --no-install-recommends " \
        "wasi-libc)" in err
    assert not list(folder.glob("*.so"))
    # A folder without C needs no toolchain.
    assert build_ext.main([str(folder.parent), "--cache", str(cache)]) == 0


# ---------------------------------------------------------------- build_ext: the guest's ABI


def _abi(**changes: Any) -> dict[str, Any]:
    abi: dict[str, Any] = json.loads((build_ext.DEFAULT_CACHE / "guest-abi.json").read_text())
    abi.update(changes)
    return abi


def test_the_probed_guest_is_the_one_the_build_knows() -> None:
    abi = _abi()
    assert (abi["soabi"], abi["ext_suffix"]) == ("cpython-314-wasm32-wasi", GUEST_SUFFIX)
    build_ext.check_guest_abi(abi)  # no exception


@pytest.mark.parametrize("changes, message", [
    ({"soabi": "cpython-315-wasm32-wasi", "ext_suffix": ".cpython-315-wasm32-wasi.so"},
     "componentize-py 0.25.1's guest CPython has SOABI cpython-315-wasm32-wasi (extension "
     "suffix .cpython-315-wasm32-wasi.so), but C extension modules are built and checked for "
     "cpython-314-wasm32-wasi"),
    ({"gil_disabled": True}, "does not load stable-ABI extension modules"),
    ({"sizes": {"SIZEOF_LONG": 8}}, "tools/wasm32-wasi/pyconfig.h does not describe "
     "componentize-py 0.25.1's guest CPython: SIZEOF_LONG 4 (guest: 8)"),
])  # fmt: skip
def test_another_guest_abi_is_refused(changes: dict[str, Any], message: str) -> None:
    abi = _abi(**changes)
    if "sizes" in changes:
        abi["sizes"] = {**_abi()["sizes"], **changes["sizes"]}
    with pytest.raises(build_ext.ExtError) as caught:
        build_ext.check_guest_abi(abi)
    assert message in str(caught.value)


def test_a_soabi_change_stops_the_build_with_a_clear_message(
    ext_folder: tuple[Path, Path],
) -> None:
    """As after a componentize-py upgrade whose guest is CPython 3.15 (its probe cached)."""
    folder, cache = ext_folder
    abi = _abi(soabi="cpython-315-wasm32-wasi", ext_suffix=".cpython-315-wasm32-wasi.so")
    (cache / "guest-abi.json").write_text(json.dumps(abi))
    done = run_tool(folder, cache)
    assert done.returncode == 1
    assert done.stderr.startswith("build_ext: componentize-py 0.25.1's guest CPython has SOABI "
                                  "cpython-315-wasm32-wasi")  # fmt: skip
    assert "set GUEST_SOABI in tools/build_ext.py" in done.stderr
    assert not list(folder.glob("*.so"))


@pytest.mark.integration
def test_the_probe_reads_the_guest_abi_from_componentize_py(tmp_path: Path) -> None:
    """A fresh cache probes the guest again (a small component, about 10 s) and finds 3.14."""
    abi = build_ext.guest_abi(tmp_path)
    assert abi == _abi()
    assert (tmp_path / "guest-abi.json").is_file()


# ---------------------------------------------------------------- an app's own C module


def otsu(gray: np.ndarray) -> tuple[int, np.ndarray]:
    """Otsu's threshold the way ext/_otsu.c computes it, in numpy (float64, same order)."""
    hist = np.bincount(gray.ravel(), minlength=256).astype(np.int64)
    n, total = int(gray.size), int((np.arange(256) * hist).sum())
    w0 = np.cumsum(hist)[:255]
    s0 = np.cumsum(np.arange(256) * hist)[:255]
    w1 = n - w0
    d = (total * w0 - s0 * n).astype(np.float64)
    valid = (w0 > 0) & (w1 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(valid, d * d / (w0.astype(np.float64) * w1.astype(np.float64)), -1.0)
    t = int(np.argmax(score)) if valid.any() else int(gray.ravel()[0])
    return t, np.where(gray > t, 255, 0).astype(np.uint8)


def _import_from(folder: Path, *names: str) -> list[Any]:
    """Import the top-level modules ``names`` of an app folder (its natively built
    extension modules, its plain ones), leaving sys.path as it was."""
    sys.path.insert(0, str(folder))
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(str(folder))


def _gray_images(folder: Path) -> list[Path]:
    """PGM files: noise around two levels, one flat level, a gradient, plus the digit PNGs."""
    rng = np.random.default_rng(29)
    images = {
        "two_levels.pgm": np.clip(rng.normal(np.where(rng.random((120, 160)) < 0.3, 60, 190),
                                             25), 0, 255),  # fmt: skip
        "flat.pgm": np.full((9, 11), 77),
        "gradient.pgm": np.tile(np.arange(256), (3, 1)),
    }
    paths = []
    for name, pixels in images.items():
        gray = pixels.astype(np.uint8)
        path = folder / name
        path.write_bytes(b"P5 %d %d 255\n" % (gray.shape[1], gray.shape[0]) + gray.tobytes())
        paths.append(path)
    return paths + sorted((ROOT / "apps" / "digits" / "samples").glob("*.png"))[:3]


def _gray(path: Path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("L"))


def test_an_apps_c_module_runs_natively(tmp_path: Path) -> None:
    """tests/otsu_app's ext/_otsu.c, built for native CPython, against the numpy oracle."""
    app = ROOT / "tests" / "otsu_app"
    done = subprocess.run([sys.executable, str(TOOL), str(app), "--targets", "native"])
    assert done.returncode == 0
    (_otsu,) = _import_from(app, "_otsu")
    for path in _gray_images(tmp_path):
        gray = _gray(path)
        t, mask = otsu(gray)
        assert _otsu.threshold(gray.tobytes()) == t, path.name
        assert _otsu.binarize(gray.tobytes(), t) == mask.tobytes()
    with pytest.raises(ValueError, match="threshold needs 1 to"):
        _otsu.threshold(b"")


@pytest.mark.integration
def test_an_apps_c_module_goes_into_its_component(tmp_path: Path) -> None:
    """./build.sh build compiles tests/otsu_app/ext/_otsu.c for the guest and links it."""
    app = build_app(ROOT / "tests" / "otsu_app")
    images = _gray_images(tmp_path)
    for path in images[3:]:
        shutil.copy(path, tmp_path / path.name)
    done = run_component(app, *(p.name for p in images), cwd=tmp_path)
    assert done.code == 0, done.stderr
    for path, line in zip(images, done.lines, strict=True):
        gray = _gray(path)
        t, mask = otsu(gray)
        assert line == {
            "file": path.name, "width": gray.shape[1], "height": gray.shape[0], "threshold": t,
            "foreground": int((mask == 255).sum()), "mask_crc32": zlib.crc32(mask.tobytes()),
        }  # fmt: skip


# ---------------------------------------------------------------- shipping the wasm build


@pytest.mark.integration
def test_the_package_ships_the_wasm_build_for_users_without_clang(tmp_path: Path) -> None:
    """A wheel built from this checkout carries the guest's _kernels (with its C source and
    stub), not the native build; componentize-py builds a working component from the unpacked
    wheel alone, as for a user who installed wasinn and has no clang. A setjmp/longjmp module
    ships as its two files (here tests/sjlj_app's, put into the copy of the package as
    wasinn._sjlj), and tools/sjlj_splice.py puts its real code back from the unpacked wheel."""
    # From a copy: setuptools leaves build/lib and an .egg-info in the tree it builds.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "guest", source / "guest", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, str(TOOL), str(SJLJ_APP), "--targets", "guest"])
    assert done.returncode == 0
    sjlj_files = {"_sjlj" + GUEST_SUFFIX, "_sjlj" + REAL_SUFFIX}
    for name in sjlj_files:
        shutil.copy(SJLJ_APP / name, source / "guest" / "wasinn" / name)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("wasinn-*-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "wasinn/_kernels" + GUEST_SUFFIX in names
    assert {"wasinn/_kernels.pyi", "wasinn/ext/_kernels.c", "wasinn/py.typed"} <= set(names)
    assert not [n for n in names if n.endswith(".abi3.so")]
    shipped = {f"wasinn/{p.name}" for p in (ROOT / "guest" / "wasinn").glob("*" + REAL_SUFFIX)}
    assert shipped | {f"wasinn/{n}" for n in sjlj_files} <= set(names)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    app = Path(shutil.copytree(ROOT / "tests" / "kernels_app", tmp_path / "app"))
    component = tmp_path / "kernels.wasm"
    built = subprocess.run(
        [str(Path(sys.executable).parent / "componentize-py"), "-d", str(ROOT / "wit"), "-w",
         "wasinn:apps/app", "componentize", "-m", "wasinn=wasi:nn/ml@0.2.0-rc-2024-10-28",
         "-p", str(app), "-p", str(site), "app", "-o", str(component)],
        cwd=app, capture_output=True, text=True,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    spliced = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "sjlj_splice.py"), str(component), str(app),
         str(site)], capture_output=True, text=True,
    )  # fmt: skip
    assert spliced.returncode == 0, spliced.stderr
    assert "put _sjlj.sjlj.wasm back into kernels.wasm" in spliced.stderr
    case = {"dtype": "f32", "shape": [2, 2], "hex": "0000803f" * 3 + "00004040", "k": 2}
    (tmp_path / "cases.json").write_text(json.dumps([case]))
    purelib = Path(sysconfig.get_path("purelib"))
    ran = subprocess.run(
        [str(purelib / "wasmtime_cli" / "wasmtime"), "run", *wasmtime_flags.FLAGS, "-S", "nn",
         "--dir", f"{tmp_path}::.", str(component), "cases.json"],
        cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "LD_LIBRARY_PATH": str(purelib / "openvino" / "libs")},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout) == kernels_cases.results(case)


# ---------------------------------------------------------------- setjmp/longjmp (build_ext: sjlj)

def test_setjmp_longjmp_natively() -> None:
    """tests/sjlj_app's _sjlj natively (glibc's setjmp): jumps out of deep chains raise
    ValueError, and the module keeps working."""
    done = subprocess.run([sys.executable, str(TOOL), str(SJLJ_APP), "--targets", "native"])
    assert done.returncode == 0
    _sjlj, sjlj_cases = _import_from(SJLJ_APP, "_sjlj", "sjlj_cases")
    assert _sjlj.dive(2000, -1, 3, True, True) == 2000 * 2001 // 2
    with pytest.raises(ValueError, match="longjmp from depth 1500 with value 9"):
        _sjlj.dive(2000, 1500, 9, True, True)
    with pytest.raises(ValueError, match="longjmp from depth 0 with value 1"):
        _sjlj.dive(0, 0, 0, False, False)  # longjmp(env, 0): setjmp returns 1
    summary = sjlj_cases.run(300)
    assert summary["raised"] == 1196 and summary["wrong_sums"] == 0, summary


@pytest.mark.integration
def test_setjmp_longjmp_in_a_component(tmp_path: Path) -> None:
    """The guest's _sjlj (WebAssembly exception handling, spliced in after componentize-py):
    12,000 jumps out of chains up to 2,000 calls deep, through qsort and past frames with a
    setjmp of their own, each a clean ValueError followed by a working call; the same
    outcomes as natively."""
    build_app(SJLJ_APP)
    done = run_component(SJLJ_APP, "3000", cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 0, done.stderr
    (sjlj_cases,) = _import_from(SJLJ_APP, "sjlj_cases")
    (line,) = done.lines
    assert line == sjlj_cases.run(3000)
    assert line["raised"] > 11000 and line["wrong_sums"] == 0


@pytest.fixture
def sjlj_folder(ext_folder: tuple[Path, Path], tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:  # fmt: skip
    """ext_folder with tests/sjlj_app's module in place of _probe, and build_ext's sjlj
    runtime and header copied where the test may change them."""
    folder, cache = ext_folder
    (folder / "ext" / "_probe.c").unlink()
    shutil.copy(SJLJ_APP / "ext" / "_sjlj.c", folder / "ext" / "_sjlj.c")
    sjlj = Path(shutil.copytree(build_ext.SJLJ_DIR, tmp_path / "sjlj"))
    monkeypatch.setattr(build_ext, "SJLJ_DIR", sjlj)
    monkeypatch.setattr(build_ext, "SJLJ_HEADER", sjlj / "setjmp.h")
    monkeypatch.setattr(build_ext, "SJLJ_RUNTIME", tuple(sjlj / p.name for p in
                                                         build_ext.SJLJ_RUNTIME))  # fmt: skip
    monkeypatch.setattr(build_ext, "SJLJ_CFLAGS", (*build_ext.SJLJ_CFLAGS[:-1], f"-I{sjlj}"))
    return folder, cache, sjlj


def test_an_sjlj_module_writes_stub_and_real_and_rebuilds_on_its_runtime(
    sjlj_folder: tuple[Path, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, cache, sjlj = sjlj_folder

    def build(*targets: str) -> str:
        argv = [str(folder), "--cache", str(cache)]
        assert build_ext.main(argv + (["--targets", ",".join(targets)] if targets else [])) == 0
        return capsys.readouterr().err

    err = build()
    assert "compiling" in err and "for wasm32-wasi with setjmp/longjmp (not built yet)" in err
    stub, real = folder / ("_sjlj" + GUEST_SUFFIX), folder / ("_sjlj" + REAL_SUFFIX)
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == sorted(
        ["_sjlj.abi3.so", stub.name, real.name])
    assert sjlj_splice.make_stub(real.read_bytes()).binary == stub.read_bytes()
    stamp = json.loads(next((cache / "stamps").glob("app-*.json")).read_text())
    guest = stamp["_sjlj"]["guest"]
    assert guest["real"] == real.name
    manifest = guest["manifest"]
    for name in ("setjmp.h", "wasm_sjlj_rt.c", "wasm_sjlj_tag.S", "package-lock.json"):
        assert f"sjlj {name}" in manifest, manifest.keys()
    assert "tool tools/sjlj_splice.py" in manifest
    assert manifest["setting sjlj wasm-opt"] == "wasm-opt version 132 (version_132)"
    assert "--translate-to-exnref" in manifest["setting sjlj flags"]
    native = stamp["_sjlj"]["native"]["manifest"]  # glibc's setjmp: nothing of this
    assert not [k for k in native if k.startswith(("sjlj ", "setting sjlj", "tool tools/sjlj"))]
    assert build() == ""
    # Each part of the setjmp/longjmp build is an input of the guest's files only.
    runtime = sjlj / "wasm_sjlj_rt.c"
    runtime.write_text(runtime.read_text() + "/* changed */\n")
    err = build()
    assert err.count("compiling") == 1 and "sjlj wasm_sjlj_rt.c changed" in err, err
    header = sjlj / "setjmp.h"
    header.write_text(header.read_text() + "/* changed */\n")
    assert "sjlj setjmp.h changed" in build()
    monkeypatch.setattr(build_ext, "WASM_OPT_FLAGS", (*build_ext.WASM_OPT_FLAGS, "--debuginfo"))
    assert "(setting sjlj flags" in build()
    assert build() == ""
    real.write_bytes(b"not the build")
    assert f"({real.name} is missing or was changed)" in build()
    real.unlink()
    assert f"{real.name} is gone)" in build()
    # A failed build, or a deleted source, leaves none of the three files.
    source = folder / "ext" / "_sjlj.c"
    good = source.read_text()
    source.write_text(good + "int broken(void) { return undefined_name; }\n")
    assert build_ext.main([str(folder), "--cache", str(cache)]) == 1
    assert not [p for p in folder.iterdir() if p.is_file()]
    source.write_text(good)
    build()
    source.unlink()
    build()
    assert not [p for p in folder.iterdir() if p.is_file()]


def test_an_sjlj_module_without_setjmp_is_refused(
    sjlj_folder: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, cache, _ = sjlj_folder
    source = folder / "ext" / "_sjlj.c"
    source.write_text("/* build_ext: sjlj */\n" + (SJLJ_APP.parent / "otsu_app" / "ext" /
                      "_otsu.c").read_text().replace("_otsu", "_sjlj"))  # fmt: skip
    assert build_ext.main([str(folder), "--cache", str(cache), "--targets", "guest"]) == 1
    err = capsys.readouterr().err
    assert "has /* build_ext: sjlj */, but no stub can be made" in err
    assert "a module that calls neither setjmp nor longjmp needs no such comment" in err
    assert not [p for p in folder.iterdir() if p.is_file()]


def test_a_missing_node_is_named_for_setup_to_install(
    sjlj_folder: tuple[Path, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only a guest build of an sjlj module needs Node.js and npm (Debian: nodejs, npm)."""
    folder, cache, _ = sjlj_folder
    monkeypatch.setitem(build_ext.SJLJ_PACKAGES, "nodejs", "/nonexistent/node")
    assert build_ext.main([str(folder), "--cache", str(cache)]) == 3
    out, err = capsys.readouterr()
    assert out == "nodejs\n" and "apt-get install --no-install-recommends nodejs" in err
    assert not [p for p in folder.iterdir() if p.is_file()]
    assert build_ext.main([str(folder), "--cache", str(cache), "--targets", "native"]) == 0
