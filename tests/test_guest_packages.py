"""tools/guest_packages.py: packages with compiled code built for the guest from
their sdists, and how an app's requirements.txt asks for them (tools/app_deps.py).

Unit tests only; tests/test_numpy_guest.py runs numpy built this way in a component.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.version import Version

sys.path.insert(0, str(ROOT / "tools"))
import app_deps  # noqa: E402
import guest_packages  # noqa: E402


def test_guest_numpy_is_the_hosts_numpy() -> None:
    """The guest's numpy is checked against the host's (oracles, bench): one version."""
    packages = guest_packages.load_catalogue().packages
    pinned = re.search(r"^numpy==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert pinned and packages["numpy"].version == pinned[1]


def test_every_patch_says_why_before_its_diff() -> None:
    packages = guest_packages.load_catalogue().packages
    for package in packages.values():
        for name in package.patches:
            text = (guest_packages.PATCHES / package.name / name).read_text()
            # The diff starts at its first file header (a new file's is "--- /dev/null").
            why, *diff = re.split(r"\n(?=diff --git |--- a/|--- /dev/null)", text, maxsplit=1)
            assert diff and len(why.split()) >= 30, f"{name}: no explanation above the diff"
            assert "wasinn" in why.splitlines()[0], name


def test_patches_apply_to_the_pinned_sdist(tmp_path: Path) -> None:
    """What a build does first, on the pinned sdist (downloaded once into the cache)."""
    packages = guest_packages.load_catalogue().packages
    numpy = packages["numpy"]
    sdist = guest_packages.c_libraries.download(
        numpy.sdist, numpy.sha256, guest_packages.cache_root() / "sources" / "numpy-2.4.6.tar.gz",
        "numpy's sdist",
    )
    root = guest_packages._unpack_sdist(numpy, sdist, tmp_path)
    init = (root / "numpy" / "__init__.py").read_text()
    assert 'if sys.platform == "wasi":' in init
    assert "npy_wasm_float_status" in (root / "numpy/_core/src/npymath/ieee754.c.src").read_text()
    assert "def _reseed_from_entropy" in (root / "numpy/random/mtrand.pyx").read_text()


def test_pyconfig_takes_the_guests_values() -> None:
    template = "\n".join([
        "#ifndef Py_PYCONFIG_H", "#define Py_PYCONFIG_H",
        "#define SIZEOF_LONG 8", "#define HAVE_FORK 1", "/* #undef HAVE_WASI */",
        "# define _GNU_SOURCE 1", "#endif",
    ])  # fmt: skip
    guest = {"SIZEOF_LONG": 4, "HAVE_FORK": 0, "HAVE_WASI": 1}
    assert guest_packages.pyconfig_h(template, guest).splitlines() == [
        "#ifndef Py_PYCONFIG_H", "#define Py_PYCONFIG_H",
        "#define SIZEOF_LONG 4", "/* #undef HAVE_FORK */", "#define HAVE_WASI 1",
        "# define _GNU_SOURCE 1", "#endif",
    ]  # fmt: skip


def test_a_guest_of_another_cpython_is_refused() -> None:
    headers = guest_packages.load_catalogue().headers
    guest_packages.check_guest({"version": [3, 14, 0]}, headers)
    with pytest.raises(guest_packages.PackageError, match=r"runs CPython 3\.15\.1, but packages"):
        guest_packages.check_guest({"version": [3, 15, 1], "componentize-py": "0.26"}, headers)


def test_other_versions_and_unknown_packages_are_refused_before_building() -> None:
    with pytest.raises(guest_packages.PackageError, match="Pin numpy==2.4.6"):
        guest_packages.site("numpy", "2.3.0")
    with pytest.raises(guest_packages.PackageError, match="not built for the guest by wasinn"):
        guest_packages.site("scipy", "1.16.0")


def test_dependencies_of_pure_packages_must_be_pinned_when_numpy_is_built(tmp_path: Path) -> None:
    """With numpy built for the guest, pip installs the other pins without resolving
    (it knows no wheel of numpy for the guest); app_deps checks what pip would have."""
    info = tmp_path / "tool-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tool\nVersion: 1.0\nRequires-Dist: numpy>=2\n"
        "Requires-Dist: helper==3.1\nRequires-Dist: colorama; sys_platform == 'win32'\n"
        "Requires-Dist: pytest; extra == 'test'\n\nbody\n"
    )
    pins = {"tool": Version("1.0"), "numpy": Version("2.4.6"), "helper": Version("3.1")}
    app_deps.check_dependencies(pins, tmp_path, "r.txt")
    unpinned = {name: version for name, version in pins.items() if name != "helper"}
    with pytest.raises(app_deps.RequirementsError, match=r"add a pin for helper==3\.1"):
        app_deps.check_dependencies(unpinned, tmp_path, "r.txt")
    with pytest.raises(app_deps.RequirementsError, match="tool needs numpy>=2, but numpy==1.26"):
        app_deps.check_dependencies({**pins, "numpy": Version("1.26")}, tmp_path, "r.txt")


def test_pyclipper_is_a_setuptools_build_whose_patch_applies(tmp_path: Path) -> None:
    """The second build kind: setup.py build_ext (Cython, C++) instead of meson."""
    packages = guest_packages.load_catalogue().packages
    pyclipper = packages["pyclipper"]
    assert pyclipper.build == "setuptools"
    pinned = re.search(r"^pyclipper==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert pinned and pyclipper.version == pinned[1]  # the native oracle is the same version
    sdist = guest_packages.c_libraries.download(
        pyclipper.sdist, pyclipper.sha256,
        guest_packages.cache_root() / "sources" / "pyclipper-1.4.0.tar.gz", "pyclipper's sdist",
    )  # fmt: skip
    root = guest_packages._unpack_sdist(pyclipper, sdist, tmp_path)
    wrapper = (root / "src" / "pyclipper" / "_pyclipper.pyx").read_text()
    assert "cdef int _check_path(Path &path) except -1:" in wrapper
    assert (root / "setup.py").is_file() and (root / "PKG-INFO").is_file()


def test_an_unknown_build_kind_is_refused(tmp_path: Path) -> None:
    catalogue = tmp_path / "c.toml"
    text = guest_packages.CATALOGUE.read_text()
    catalogue.write_text(text.replace('build = "setuptools"', 'build = "cmake"'))
    with pytest.raises(guest_packages.PackageError, match="pyclipper: unknown build 'cmake'"):
        guest_packages.load_catalogue(catalogue)


def test_a_variant_replaces_options_and_patches_and_leaves_the_main_key(tmp_path: Path) -> None:
    numpy = guest_packages.load_catalogue().packages["numpy"]
    scalar = numpy.variant("scalar")
    assert "-Ddisable-optimization=true" in scalar.options and not scalar.variants
    assert (scalar.sdist, scalar.version, scalar.drop) == (numpy.sdist, numpy.version, numpy.drop)
    # A variant's own options make its key; editing a variant leaves the main build's alone.
    catalogue = tmp_path / "c.toml"
    text = guest_packages.CATALOGUE.read_text()
    catalogue.write_text(text.replace("[numpy.variants.scalar]\n",
                                      '[numpy.variants.other]\noptions = ["-Dx=y"]\n'
                                      "[numpy.variants.scalar]\n"))  # fmt: skip
    edited = guest_packages.load_catalogue(catalogue).packages["numpy"]
    assert edited.entry() == numpy.entry() and edited.variant("other").options == ("-Dx=y",)
    assert edited.variant("other").entry() != numpy.entry()
    with pytest.raises(guest_packages.PackageError, match="no variant 'simd'.*other, scalar"):
        edited.variant("simd")
    catalogue.write_text(text.replace("[numpy.variants.scalar]\n",
                                      "[numpy.variants.scalar]\ndrop = []\n"))  # fmt: skip
    with pytest.raises(guest_packages.PackageError, match="variant scalar sets drop"):
        guest_packages.load_catalogue(catalogue)
    catalogue.write_text(text.replace("[numpy.variants.scalar]\n",
                                      '[numpy.variants.other]\noptions = "-Dx=y"\n'
                                      "[numpy.variants.scalar]\n"))  # fmt: skip
    with pytest.raises(guest_packages.PackageError, match="options must be a list of strings"):
        guest_packages.load_catalogue(catalogue)
