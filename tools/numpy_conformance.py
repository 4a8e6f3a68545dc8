"""numpy's own test suite in a component and natively, side by side.

    python tools/numpy_conformance.py [--site DIR] [--sample] [--modules M,...] [--report PATH]

(``./build.sh conformance numpy [--sample]`` runs this.) The test files of
numpy's ``_core``, ``linalg``, ``fft``, ``random``, ``lib`` and ``ma`` packages
are taken from the numpy sdist of .venv's numpy version and run with pytest
(tests/numpy_conformance_app/npconf_driver.py) two ways, one test module at a
time:

* **guest**: tests/numpy_conformance_app, a component holding the guest's
  numpy (the site folder ``--site``, :func:`default_site` otherwise), pytest and
  hypothesis, under the wasmtime CLI;
* **native**: .venv's Python and numpy on the same files.

A module whose component traps (or hangs past ``TEST_TIMEOUT``) is run again
without the tests that already reported and without the one it was running,
which is recorded as a trap (or hang). Every test that does not pass in the
guest but passes natively gets a cause (``CAUSES``, from its message). The
full run writes docs/numpy.md; ``--sample`` runs ``SAMPLE``, the modules
tests/test_numpy_conformance.py checks against that file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import wasmtime_flags

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "numpy_conformance_app"
DRIVER = APP / "npconf_driver.py"
WORK = ROOT / "build" / "numpy-conformance"
REPORT = ROOT / "docs" / "numpy.md"
# The link tests/numpy_conformance_app/build.txt `uses`: pointed at --site.
SITE_LINK = ROOT / "build" / "numpy-guest-site"


def site_label(site: Path) -> str:
    """How the report names the guest's numpy: its folder in the build cache (the
    name holds the build's key), not a path of one machine."""
    parts = site.resolve().parts
    if "guest-packages" in parts:
        return "/".join(parts[parts.index("guest-packages"):])
    return site.name


def default_site() -> Path:
    """The guest's numpy: a folder holding numpy/ built for wasm32-wasi, extension
    modules of numpy's tests (numpy._core._multiarray_tests, ...) included. The
    project's own build (tools/guest_packages.py, cached; built when missing) at
    .venv's numpy version; --site or WASINN_NUMPY_SITE override it."""
    if os.environ.get("WASINN_NUMPY_SITE"):
        return Path(os.environ["WASINN_NUMPY_SITE"])
    import guest_packages

    return guest_packages.site("numpy", numpy_version())


# numpy's sdist of a version the guest build does not pin, for its test files:
# searched in these folders by file name (find_sdist).
SDIST_DIRS = [WORK / "sdist"]

PACKAGES = ["_core", "linalg", "fft", "random", "lib", "ma"]
# Modules for the CI test: quick in the guest, and between them every cause
# docs/numpy.md lists for more than a handful of tests.
SAMPLE = [
    "numpy/_core/tests/test_umath.py",
    "numpy/_core/tests/test_errstate.py",
    "numpy/_core/tests/test_numeric.py",
    "numpy/_core/tests/test_multithreading.py",
    "numpy/linalg/tests/test_linalg.py",
    "numpy/fft/tests/test_pocketfft.py",
    "numpy/random/tests/test_random.py",
    "numpy/ma/tests/test_core.py",
]
# Seconds one test may take in the guest before its module's component is
# stopped and the test recorded as a hang (checked between JSON lines).
TEST_TIMEOUT = 300.0
MAX_RESTARTS = 50  # traps or hangs in one module before the rest of it is given up
JOBS = 2

OUTCOMES = ["pass", "fail", "error", "skip", "xfail", "xpass", "trap", "hang"]

# The cause of a test that passes natively but not in the guest: the first
# pattern found in "OUTCOME MESSAGE" (or in the test's id, "id:" patterns).
CAUSES: list[tuple[str, str]] = [
    ("C++ throw traps the component", r"^trap .*(__cxa_throw|C\+\+ exception)"),
    ("C function called through a pointer of another type (wasm traps)",
     r"^trap .*indirect call type mismatch"),
    ("recursion / wasm stack", r"^trap .*call stack exhausted|RecursionError|recursion"),
    ("trap (other)", r"^trap "),
    ("hang (stopped after the time limit)", r"^hang "),
    ("not run: the module trapped too often", r"^not run .*gave up"),
    ("not run: SIMD targets the guest build does not have", r"^not run .*test_simd"),
    ("parametrised differently in the guest (platform dtypes)", r"^not run "),
    ("no threads", r"thread|Thread"),
    ("no subprocess", r"subprocess|fork|spawn|_posixsubprocess|does not support processes"),
    ("WASI file API (no os.dup, no mmap)", r"Errno 58\] Not supported|'mmap'|mmap is a stub"),
    ("no FP exception flags", r"FloatingPointError|RuntimeWarning|DID NOT WARN|DID NOT RAISE|"
     r"not raised|No warning|warnings? (was|were) (not )?(raised|emitted)|floating point"),
    ("no ctypes in the guest's CPython", r"ctypes"),
    ("module missing in the guest", r"No module named|ModuleNotFoundError|cannot import name"),
    ("32-bit platform (intp/default int int32, 4 GiB address space)",
     r"int64|int32|intp|OverflowError|too large|too big|MemoryError|Unable to allocate|"
     r"maximum supported dimension|cannot fit|out of bounds for int|sys.maxsize"),
    ("float accuracy (musl libm; numpy's AVX kernels are not in the guest)",
     r"ULP|ulp|not almost equal|Not equal to tolerance|Mismatched elements|"
     r"Max absolute difference"),
]  # fmt: skip
OTHER = "other (see the message)"


@dataclass
class Result:
    """One test module on one side: each test's outcome and message."""

    tests: dict[str, tuple[str, str]] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    runs: int = 0
    note: str = ""

    def counts(self) -> Counter[str]:
        c = Counter(outcome for outcome, _ in self.tests.values())
        c["error"] += len(self.collect_errors)
        return c


# ---------------------------------------------------------------- set-up


def numpy_version() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import numpy; print(numpy.__version__)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def find_sdist(version: str) -> Path:
    """numpy's sdist at ``version``: the one the guest build takes (pinned with its
    SHA-256 in tools/guest_packages.toml, downloaded once into the cache), or for
    another version one put in SDIST_DIRS by hand."""
    import guest_packages

    package = guest_packages.load_catalogue().packages.get("numpy")
    if package is not None and package.version == version:
        return guest_packages.download_sdist(package, guest_packages.cache_root())
    name = f"numpy-{version}.tar.gz"
    for folder in SDIST_DIRS:
        if (folder / name).is_file():
            return folder / name
    raise SystemExit(
        f"numpy_conformance: no {name} in {', '.join(map(str, SDIST_DIRS))}; download it with "
        f"`pip download --no-deps --no-binary numpy numpy=={version} -d {SDIST_DIRS[0]}`."
    )


def prepare_tests(sdist: Path, version: str, work: Path = WORK) -> Path:
    """The sdist's test folders, pytest.ini and numpy/conftest.py under WORK/tests,
    with an empty __init__.py in each package above them (npconf_driver.py)."""
    tests = work / "tests"
    stamp = tests / ".numpy-version"
    if stamp.is_file() and stamp.read_text() == version:
        return tests
    shutil.rmtree(tests, ignore_errors=True)
    tests.mkdir(parents=True)
    prefix = f"numpy-{version}/"
    wanted = [f"{prefix}numpy/{p}/tests/" for p in PACKAGES]
    keep = {f"{prefix}pytest.ini", f"{prefix}numpy/conftest.py"}
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers()
                   if m.name in keep or any(m.name.startswith(w) for w in wanted)]  # fmt: skip
        for m in members:
            m.name = m.name[len(prefix) :]
        tar.extractall(tests, members=members, filter="data")
    for package in ["", *PACKAGES]:
        (tests / "numpy" / package / "__init__.py").touch()
    stamp.write_text(version)
    return tests


def modules(tests: Path) -> list[str]:
    return sorted(
        str(p.relative_to(tests)) for package in PACKAGES
        for p in (tests / "numpy" / package / "tests").glob("test_*.py")
    )  # fmt: skip


def build_guest(site: Path) -> Path:
    """Point build.txt's link at SITE and build the component (a no-op when nothing changed)."""
    if not (site / "numpy" / "__init__.py").is_file():
        raise SystemExit(
            f"numpy_conformance: {site} has no numpy/ (give the guest's site folder with --site)"
        )
    extensions = [
        p.name.split(".")[0] for p in (site / "numpy" / "_core").glob("*_tests.*wasm32-wasi.so")
    ]
    if "_multiarray_tests" not in extensions:
        raise SystemExit(
            f"numpy_conformance: {site}/numpy/_core has no _multiarray_tests extension module"
        )
    SITE_LINK.parent.mkdir(parents=True, exist_ok=True)
    if not SITE_LINK.is_symlink() or SITE_LINK.resolve() != site.resolve():
        SITE_LINK.unlink(missing_ok=True)
        SITE_LINK.symlink_to(site.resolve())
    subprocess.run([str(ROOT / "build.sh"), "build", str(APP)], check=True)
    return ROOT / "build" / f"{APP.name}.cwasm"


def wasmtime_argv(cwasm: Path, tests: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    import sysconfig

    purelib = Path(sysconfig.get_path("purelib"))
    env = dict(os.environ, WASMTIME_LOG="off")
    env["LD_LIBRARY_PATH"] = str(purelib / "openvino" / "libs") + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""
    )
    argv = [str(purelib / "wasmtime_cli" / "wasmtime"), "run", *wasmtime_flags.FLAGS, "-S", "nn",
            "--allow-precompiled", "--dir", f"{tests}::/nptests", "--dir", f"{scratch}::/tmp",
            str(cwasm)]  # fmt: skip
    return argv, env


# ---------------------------------------------------------------- running


def _read(path: Path, result: Result) -> tuple[str | None, bool]:
    """Fold OUT's lines into RESULT; (the test started but not ended, finished?)."""
    running: str | None = None
    finished = False
    if not path.exists():
        return None, False
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a trap
        if "start" in record:
            running = record["start"]
        elif "test" in record:
            result.tests[record["test"]] = (record["outcome"], record["message"])
            running = None
        elif "collect" in record:
            result.collect_errors.append(f"{record['collect']}: {record['message']}")
        elif "finished" in record:
            finished = True
    return running, finished


def run_module(module: str, tests: Path, guest: tuple[list[str], dict[str, str]] | None,
               scratch: Path) -> Result:  # fmt: skip
    """One module, natively (GUEST None) or in the component, resumed after traps and hangs."""
    result = Result()
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "module.txt").write_text(json.dumps(module))
    out = scratch / "out.jsonl"
    skip = scratch / "skip.txt"
    out.unlink(missing_ok=True)
    skip.write_text("")
    started = time.monotonic()
    while result.runs <= MAX_RESTARTS:
        result.runs += 1
        if guest is None:
            argv = [sys.executable, str(DRIVER), str(tests), str(out), str(skip), module]
            env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        else:
            argv = [*guest[0], "run", "/nptests", "/tmp/out.jsonl", "/tmp/skip.txt", module]
            env = guest[1]
        with open(scratch / "log.txt", "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=scratch)  # fmt: skip
            last_size, last_change, hung = -1, time.monotonic(), False
            while proc.poll() is None:
                time.sleep(0.5)
                size = out.stat().st_size if out.exists() else 0
                if size != last_size:
                    last_size, last_change = size, time.monotonic()
                elif time.monotonic() - last_change > TEST_TIMEOUT:
                    proc.kill()
                    proc.wait()
                    hung = True
        result.collect_errors.clear()
        running, finished = _read(out, result)
        if finished and not hung:
            break
        tail = (scratch / "log.txt").read_text(errors="replace")
        if running is None:
            result.note = f"stopped outside a test (exit {proc.returncode}): {_last_lines(tail)}"
            break
        if hung:
            result.tests[running] = ("hang", f"no result within {TEST_TIMEOUT:.0f} s")
        else:
            result.tests[running] = ("trap", f"exit {proc.returncode}: {_last_lines(tail)}")
        with open(out, "a") as f:  # the next run's reports come after this one's
            f.write(
                json.dumps(
                    {
                        "test": running,
                        "outcome": result.tests[running][0],
                        "message": result.tests[running][1],
                    }
                )
                + "\n"
            )
        skip.write_text("\n".join(result.tests) + "\n")
    else:
        result.note = f"gave up after {MAX_RESTARTS} traps or hangs"
    result.seconds = time.monotonic() - started
    save(result, scratch / "result.json")
    return result


def save(result: Result, path: Path) -> None:
    data = {"tests": result.tests, "collect_errors": result.collect_errors,
            "seconds": result.seconds, "runs": result.runs, "note": result.note}  # fmt: skip
    path.write_text(json.dumps(data))


def load(path: Path) -> Result:
    data = json.loads(path.read_text())
    tests = {k: (v[0], v[1]) for k, v in data["tests"].items()}
    return Result(tests, data["collect_errors"], data["seconds"], data["runs"], data["note"])


def load_saved(work: Path = WORK) -> tuple[dict[str, Result], dict[str, Result]]:
    """The results the last run left in WORK/guest and WORK/native, by module."""
    sides: list[dict[str, Result]] = [{}, {}]
    for side, results in zip(("guest", "native"), sides, strict=True):
        for path in sorted((work / side).glob("*/result.json")):
            module = json.loads(path.with_name("module.txt").read_text())
            results[module] = load(path)
    return sides[0], sides[1]


def _last_lines(text: str) -> str:
    """What a dead component said: wasmtime's trap line, the innermost wasm
    frames (``N: 0x... - lib!function``), the guest's own last words."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    trap = [line for line in lines if re.search(r"wasm trap|C\+\+ exception|Fatal Python", line)]
    frames = [line.split(" - ", 1)[1] for line in lines if re.match(r"\d+: 0x[0-9a-f]+ - ", line)]
    if not trap and not frames:
        return " | ".join(lines[-3:])[:500]
    return " | ".join([*trap, *frames[:4]])[:500]


# ---------------------------------------------------------------- causes


def cause_of(outcome: str, message: str) -> str:
    text = f"{outcome} {message}"
    for name, pattern in CAUSES:
        if re.search(pattern, text):
            return name
    return OTHER


def regressions(
    guest: dict[str, Result], native: dict[str, Result]
) -> list[tuple[str, str, str, str]]:
    """(test, guest outcome, message, cause) of each test passing natively but not in the guest."""
    rows = []
    for module, g in guest.items():
        n = native.get(module, Result())
        for test, (outcome, message) in sorted(g.tests.items()):
            if outcome in ("pass", "skip", "xfail", "xpass"):
                continue
            if n.tests.get(test, ("", ""))[0] not in ("pass", "xpass"):
                continue
            rows.append((test, outcome, message, cause_of(outcome, message)))
        # Tests the guest never ran: its module did not import (a collection
        # error, a trap) or pytest generated other parameters there.
        if g.collect_errors:
            missing = ("error", g.collect_errors[0].split(": ", 1)[-1])
        elif g.note.startswith("gave up"):
            missing = ("not run", g.note)
        elif g.note:
            missing = ("trap", f"while collecting the module: {g.note}")
        elif not g.tests:  # the whole module skipped itself in the guest (IS_WASM)
            continue
        else:
            missing = ("not run", "not collected in the guest (other parameters there)")
        for test, (outcome, _) in sorted(n.tests.items()):
            if outcome in ("pass", "xpass") and test not in g.tests:
                cause = cause_of(missing[0], f"{missing[1]} {test}")
                rows.append((test, missing[0], missing[1], cause))
    return rows


def skipped_in_guest(guest: dict[str, Result], native: dict[str, Result]) -> int:
    count = 0
    for module, g in guest.items():
        n = native.get(module, Result())
        count += sum(
            1 for t, (o, _) in g.tests.items() if o == "skip" and n.tests.get(t, ("",))[0] == "pass"
        )
        if not g.tests and not g.collect_errors and not g.note:  # a module-level skip
            count += sum(1 for o, _ in n.tests.values() if o == "pass")
    return count


# ---------------------------------------------------------------- report


def table(guest: dict[str, Result], native: dict[str, Result]) -> list[str]:
    head = ["module", "guest pass", "fail", "error", "skip", "xfail", "trap", "hang",
            "native pass", "fail", "error", "skip", "xfail", "guest s", "native s"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total_g: Counter[str] = Counter()
    total_n: Counter[str] = Counter()
    tg = tn = 0.0
    for module in sorted(guest):
        g, n = guest[module].counts(), native.get(module, Result()).counts()
        total_g += g
        total_n += n
        tg += guest[module].seconds
        tn += native.get(module, Result()).seconds
        name = module.removeprefix("numpy/").replace("/tests/", "/")
        lines.append(_row(name, g, n, guest[module].seconds, native.get(module, Result()).seconds))
    lines.append(_row("**total**", total_g, total_n, tg, tn))
    return lines


def _row(name: str, g: Counter[str], n: Counter[str], gs: float, ns: float) -> str:
    kinds = ("pass", "fail", "error", "skip")
    cells = [name, *(str(g[k]) for k in kinds), str(g["xfail"] + g["xpass"]),
             str(g["trap"]), str(g["hang"]), *(str(n[k]) for k in kinds),
             str(n["xfail"] + n["xpass"]), f"{gs:.0f}", f"{ns:.0f}"]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def write_report(path: Path, version: str, site: Path, guest: dict[str, Result],
                 native: dict[str, Result], wall: float) -> None:  # fmt: skip
    rows = regressions(guest, native)
    by_cause = Counter(cause for *_, cause in rows)
    out = [
        "# numpy's own test suite inside a component",
        "",
        "Generated by `./build.sh conformance numpy` (`tools/numpy_conformance.py`); do not edit. "
        f"numpy {version}: the test files of `numpy/{{{','.join(PACKAGES)}}}/tests` from its "
        "sdist, run with pytest (numpy's own `pytest.ini` and `conftest.py`) one module at a time, "
        "in a component (`tests/numpy_conformance_app`: the guest's numpy cross-built for "
        "wasm32-wasi, CPython 3.14, the "
        "wasmtime CLI) and natively (.venv's numpy on the host's CPython).",
        "",
        f"Guest numpy: `{site_label(site)}`. Wall time of the whole run {wall / 60:.1f} min "
        "(guest and native modules "
        f"run {JOBS} at a time on this machine; the per-module seconds below are each run's own).",
        "",
        "xfail counts xfail and xpass. trap: the component died in that test (the module was "
        "run again "
        "without it); hang: no result within the time limit.",
        "",
        *table(guest, native),
        "",
        f"Tests that pass natively and are skipped in the guest (numpy's own `IS_WASM` and similar "
        f"skips: no threads, no subprocess, no FP exceptions): {skipped_in_guest(guest, native)}.",
        "",
    ]
    notes = [f"- `{m}`: {r.note}" for m, r in sorted(guest.items()) if r.note]
    notes += [f"- native `{m}`: {r.note}" for m, r in sorted(native.items()) if r.note]
    if notes:
        out += ["Modules that did not finish normally:", "", *notes, ""]
    out += [
        "## Tests that fail in the guest and pass natively, by cause",
        "",
        "| cause | tests |",
        "|---|---|",
        *(f"| {cause} | {count} |" for cause, count in by_cause.most_common()),
        f"| **total** | {len(rows)} |",
        "",
    ]
    for cause, _ in by_cause.most_common():
        out += [f"### {cause}", ""]
        per_module = Counter(
            t.split("::")[0] for t, o, _, c in rows if c == cause and o == "not run"
        )
        if per_module:  # not a failure: tests pytest generated natively only, counted per module
            out += ["| module | tests generated natively only |", "|---|---|"]
            out += [f"| `{m}` | {k} |" for m, k in sorted(per_module.items())]
            out.append("")
            continue
        out += ["| test | guest | message |", "|---|---|---|"]
        for test, outcome, message, c in rows:
            if c == cause:
                text = message.replace("|", "\\|").replace("\n", " ")[:300]
                out.append(f"| `{test}` | {outcome} | {text} |")
        out.append("")
    path.write_text("\n".join(out))


def documented(path: Path = REPORT) -> set[str]:
    """The test ids docs/numpy.md lists as failing in the guest."""
    if not path.is_file():
        return set()
    return set(re.findall(r"^\| `([^`]+)` \|", path.read_text(), re.M))


# ---------------------------------------------------------------- main


def run_all(mods: list[str], site: Path, jobs: int = JOBS, work: Path = WORK,
            progress: bool = True) -> tuple[dict[str, Result], dict[str, Result], str]:  # fmt: skip
    version = numpy_version()
    tests = prepare_tests(find_sdist(version), version, work)
    known = modules(tests)
    unknown = [m for m in mods if m not in known]
    if unknown:
        raise SystemExit(f"numpy_conformance: no such test module: {', '.join(unknown)}")
    cwasm = build_guest(site)
    guest: dict[str, Result] = {}
    native: dict[str, Result] = {}

    def one(job: tuple[str, str]) -> None:
        side, module = job
        scratch = work / side / module.replace("/", "_").removesuffix(".py")
        shutil.rmtree(scratch, ignore_errors=True)
        if side == "guest":
            result = run_module(module, tests, wasmtime_argv(cwasm, tests, scratch), scratch)
            guest[module] = result
        else:
            result = run_module(module, tests, None, scratch)
            native[module] = result
        if progress:
            c = result.counts()
            print(f"{side:6} {module}: " + " ".join(f"{k} {c[k]}" for k in OUTCOMES if c[k])
                  + f" ({result.seconds:.0f} s{', ' + result.note if result.note else ''})",
                  flush=True)  # fmt: skip

    jobs_list = [(side, m) for m in mods for side in ("guest", "native")]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, jobs_list))
    return guest, native, version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site",
        type=Path,
        help="the guest's numpy site folder (default: tools/guest_packages.py's)",
    )
    parser.add_argument("--sample", action="store_true", help="only the CI sample of modules")
    parser.add_argument(
        "--modules", help="comma-separated test modules (numpy/_core/tests/test_x.py)"
    )
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument(
        "--from-saved", action="store_true", help="report on the last run's results, run nothing"
    )
    parser.add_argument(
        "--report", type=Path, help=f"write the report here (the full run: {REPORT})"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    version = numpy_version()
    if args.modules:
        mods = args.modules.split(",")
    elif args.sample:
        mods = SAMPLE
    else:
        mods = modules(prepare_tests(find_sdist(version), version))
    if args.from_saved:
        guest, native = load_saved()
        guest = {m: r for m, r in guest.items() if m in mods}
        native = {m: r for m, r in native.items() if m in mods}
        wall = json.loads((WORK / "run.json").read_text())["wall"]
    else:
        site = args.site or default_site()
        guest, native, version = run_all(mods, site, args.jobs)
        wall = time.monotonic() - started
        if not (args.sample or args.modules):  # what --from-saved reports on
            (WORK / "run.json").write_text(
                json.dumps({"wall": wall, "modules": mods, "site": str(site)})
            )
    print("\n".join(table(guest, native)))
    rows = regressions(guest, native)
    new = [r for r in rows if r[0] not in documented()]
    print(
        f"\n{len(rows)} tests fail in the guest and pass natively; "
        f"{len(new)} of them not in {REPORT.name}"
    )
    for test, outcome, message, cause in new[:50]:
        print(f"  {test}: {outcome} [{cause}] {message[:200]}")
    report = args.report or (REPORT if not (args.sample or args.modules) else None)
    if report is not None:
        site = args.site or Path(json.loads((WORK / "run.json").read_text())["site"])
        write_report(report, version, site, guest, native, wall)
        print(f"wrote {report}")
    print(f"{wall / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
