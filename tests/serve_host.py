"""Running HTTP components for the serving tests, soak and bench: `wasmtime serve`
through `./build.sh serve`, nginx in front of several of them, and Debian's `hey`
load generator. Loopback only; every wait is bounded.

    with Server(reuse=1000) as server:
        status, doc = server.request("GET", "/health")
        result = hey(server.url("/health"), requests=1000, concurrency=4)
        print(result.rps, result.p99_ms, result.statuses)   # 2345.6 4.1 {200: 1000}
"""

from __future__ import annotations

import http.client
import json
import math
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import deploy  # noqa: E402  (tools/: nginx's configuration, as ./build.sh deploy writes it)
import wasmtime_flags  # noqa: E402

BUILD_SH = ROOT / "build.sh"
APP = ROOT / "apps" / "serve"
START_TIMEOUT = 600.0  # a first start may build the component (30-60 s on a busy machine)


free_port = deploy.free_port
#: `./build.sh deploy` options for a test that is one client sending thousands
#: of requests (the hostile suite, load under a dying worker): nginx's rate per
#: client would refuse most of them (429) before they reached what they test.
ONE_CLIENT_UNLIMITED = ("--rate", "1000000", "--burst", "1000000")
#: The same for tests/serve_host.Nginx.
UNLIMITED_RATE = deploy.Limits(rate=1_000_000, burst=1_000_000)


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> tuple[int, Any, dict[str, str]]:
    """One HTTP request to 127.0.0.1:port: (status, JSON body or None, headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        try:
            conn.request(method, path, body=body, headers=headers or {})
        except (BrokenPipeError, ConnectionResetError):
            # A server refusing a body (413) may answer and close before it has
            # all arrived, as HTTP allows: the answer is still there to read.
            pass
        response = conn.getresponse()
        data = response.read()
        got = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return response.status, doc, got


@dataclass
class Streamed:
    """A streamed answer and when its parts arrived, in seconds from the request:
    ``header_s`` the status line and headers, ``first_s`` the first ``skip``
    bytes of body past (e.g. a WAV header: the first audio), ``total_s`` the end."""

    status: int
    headers: dict[str, str]
    data: bytes
    header_s: float
    first_s: float
    total_s: float


def stream(port: int, path: str, body: bytes, content_type: str, skip: int = 0) -> Streamed:
    """POST ``body`` and read the answer as it comes (bounded by a 10-minute timeout)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        start = time.perf_counter()
        conn.request("POST", path, body=body, headers={"content-type": content_type})
        response = conn.getresponse()
        header = time.perf_counter() - start
        data, first = b"", None
        while piece := response.read1(1 << 16):
            data += piece
            if first is None and len(data) > skip:
                first = time.perf_counter() - start
        total = time.perf_counter() - start
        headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    return Streamed(response.status, headers, data, header, first or total, total)


def openvino_libs() -> Path:
    """The openvino wheel's libs folder in .venv (build.sh setup links libopenvino_c.so there)."""
    import openvino

    return Path(openvino.__file__).parent / "libs"


def direct_argv(
    app: Path, port: int, dirs: dict[str, Path], reuse: int | None, flags: str = ""
) -> list[str]:
    """`wasmtime serve` for an already built app, with only ``dirs`` mapped and
    ``flags`` (as WASMTIME_FLAGS would give them) before the component."""
    wasmtime = Path(sysconfig.get_path("purelib")) / "wasmtime_cli" / "wasmtime"
    argv = [str(wasmtime), "serve", *wasmtime_flags.FLAGS, *wasmtime_flags.SERVE_FLAGS,
            "-C", "cache=n", "-S", "nn,cli", "--allow-precompiled",
            "--addr", f"127.0.0.1:{port}"]  # fmt: skip
    if reuse is not None:
        argv += ["--max-instance-reuse-count", str(reuse)]
    for guest, host in dirs.items():
        argv += ["--dir", f"{host}::{guest}"]
    return [*argv, *shlex.split(flags), str(ROOT / "build" / f"{app.name}.cwasm")]


def status_kib(pid: int, key: str) -> int:
    """A memory field of /proc/PID/status in KiB (VmRSS, VmHWM, ...)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} for pid {pid}")


def rss_kib(pid: int) -> int:
    """Resident memory of a process, from /proc."""
    return status_kib(pid, "VmRSS")


def cpu_seconds(pid: int) -> float:
    """User plus system time of every thread of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """`./build.sh serve APP --port P [--reuse N]` as a context manager; waits
    until GET /health answers (build included), stops wasmtime on exit.
    ``workers=N``: `./build.sh deploy APP ... --workers N` instead (nginx in front).

    ``flags`` go to wasmtime through WASMTIME_FLAGS. ``pid`` is wasmtime's own,
    so ``rss_kib(server.pid)`` is the server's memory.
    """

    def __init__(
        self,
        reuse: int | None = None,
        flags: str = "",
        app: Path = APP,
        dirs: dict[str, Path] | None = None,
        workers: int | None = None,
        options: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        self.reuse = reuse
        self.flags = flags
        self.app = app
        self.workers = workers
        # More of build.sh's serve/deploy options (--concurrency N, --rate N, ...).
        self.options = options
        # Tests of a broken deployment map only ``dirs`` (guest path -> host
        # folder) and start wasmtime directly; build.sh maps everything.
        self.dirs = dirs
        self.log = tempfile.NamedTemporaryFile(prefix="wasinn-serve-", suffix=".log", delete=False)
        self.proc: subprocess.Popen[bytes] | None = None
        self._final_log: str | None = None

    @property
    def pid(self) -> int:
        """The worker's pid: wasmtime itself, the child of build.sh's tools/deploy.py
        (which starts it again if it dies, so the pid may change)."""
        assert self.proc is not None
        if self.dirs is not None:  # started directly, no supervisor
            return self.proc.pid
        workers = self.worker_pids()
        if len(workers) != 1:
            raise RuntimeError(f"expected one worker under pid {self.proc.pid}, found {workers}")
        return workers[0]

    def worker_pids(self) -> list[int]:
        """The pids of the `wasmtime serve` workers that tools/deploy.py runs now."""
        assert self.proc is not None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        pids = [int(c) for c in children.split()]
        return [p for p in pids if Path(f"/proc/{p}/comm").read_text().strip() == "wasmtime"]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stderr(self) -> str:
        """What build.sh and wasmtime printed (kept after the server stopped)."""
        if self._final_log is not None:
            return self._final_log
        return Path(self.log.name).read_text(errors="replace")

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, Any]:
        headers = {"content-type": content_type} if content_type else {}
        status, doc, _ = request(self.port, method, path, body, headers)
        return status, doc

    def __enter__(self) -> Server:
        command = "serve" if self.workers is None else "deploy"
        argv = [str(BUILD_SH), command, str(self.app), "--port", str(self.port)]
        if self.reuse is not None:
            argv += ["--reuse", str(self.reuse)]
        if self.workers is not None:
            argv += ["--workers", str(self.workers)]
        argv += self.options
        env = dict(os.environ, WASMTIME_FLAGS=self.flags)
        if self.dirs is not None:
            argv = direct_argv(self.app, self.port, self.dirs, self.reuse, self.flags)
            env.update(LD_LIBRARY_PATH=str(openvino_libs()), WASMTIME_LOG="off")
        self.proc = subprocess.Popen(
            argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                raise RuntimeError(f"the server exited with {code}:\n{self.stderr()}")
            try:
                if request(self.port, "GET", "/health", timeout=5)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        log = self.stderr()[-4000:]
        raise TimeoutError(f"no answer on port {self.port} in {START_TIMEOUT:.0f} s:\n{log}")

    def stop(self) -> None:
        if self.proc is not None:
            deploy.stop(self.proc)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        self._final_log = self.stderr()
        self.log.close()
        os.unlink(self.log.name)


nginx_binary = deploy.nginx_binary


class Nginx:
    """nginx balancing over ``backends`` (ports), round-robin with keep-alive,
    as a context manager. ``upstream_counts()`` reads which backend served what."""

    def __init__(self, backends: list[int], limits: deploy.Limits = deploy.DEFAULTS) -> None:
        binary = nginx_binary()
        if binary is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
        self.binary = binary
        self.port = free_port()
        self.prefix = Path(tempfile.mkdtemp(prefix="wasinn-nginx-"))
        self.conf, self.temp = deploy.prepare_state(self.prefix, self.port, backends, limits)
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Nginx:
        self.proc = subprocess.Popen(
            [self.binary, "-p", str(self.prefix), "-c", str(self.conf),
             "-e", str(self.prefix / "error.log"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"nginx exited with {self.proc.returncode}: {err}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        raise TimeoutError("nginx did not listen within 30 s")

    def upstream_counts(self) -> dict[str, int]:
        """Requests per upstream address, from the access log."""
        counts: dict[str, int] = {}
        log = self.prefix / "access.log"
        for line in log.read_text().splitlines() if log.exists() else []:
            for addr in line.split()[0].split(","):
                counts[addr.strip()] = counts.get(addr.strip(), 0) + 1
        return counts

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None:
            deploy.stop(self.proc, signal.SIGQUIT)  # graceful: finish requests, then exit
        shutil.rmtree(self.prefix, ignore_errors=True)
        shutil.rmtree(self.temp, ignore_errors=True)


@dataclass
class HeyResult:
    """What `hey` measured: throughput, latency percentiles and the answers."""

    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def non_2xx(self) -> int:
        """Answers other than 2xx plus requests that got no answer at all."""
        good = sum(n for s, n in self.statuses.items() if 200 <= s < 300)
        return self.requests - good


def hey(
    url: str,
    *,
    requests: int,
    concurrency: int,
    body: bytes | None = None,
    content_type: str = "application/octet-stream",
    timeout: float = 900.0,
) -> HeyResult:
    """Run Debian's `hey` (https://github.com/rakyll/hey): ``requests`` requests
    (rounded up to a multiple of ``concurrency``), ``concurrency`` at a time, POST
    ``body`` when given. Raises after ``timeout`` s."""
    binary = shutil.which("hey")
    if binary is None:
        raise RuntimeError("hey is not installed (Debian: apt-get install hey)")
    # hey gives each of its workers requests // concurrency requests: round up to
    # a multiple, so that every request asked for is sent (and counted).
    requests = -(-requests // concurrency) * concurrency
    # CSV: one row per answered request, so that percentiles and status counts
    # are exact (hey's own summary misprints percentiles for small runs).
    argv = [binary, "-n", str(requests), "-c", str(concurrency), "-t", "60", "-o", "csv"]
    with tempfile.NamedTemporaryFile(suffix=".body") as f:
        if body is not None:
            f.write(body)
            f.flush()
            argv += ["-m", "POST", "-T", content_type, "-D", f.name]
        out = subprocess.run(
            [*argv, url], capture_output=True, text=True, timeout=timeout, check=True
        ).stdout
    return parse_hey_csv(out, requests)


def parse_hey_csv(text: str, requests: int) -> HeyResult:
    """hey's CSV (response-time, ..., status-code, offset in seconds) as a HeyResult;
    throughput is answered requests over the span from the first start to the last end."""
    times: list[float] = []
    statuses: dict[int, int] = {}
    end = 0.0
    for line in text.splitlines()[1:]:
        cells = line.split(",")
        if len(cells) != 8:
            continue
        took, status, offset = float(cells[0]), int(cells[6]), float(cells[7])
        times.append(took)
        statuses[status] = statuses.get(status, 0) + 1
        end = max(end, offset + took)
    if not times:
        raise RuntimeError(f"hey got no answers:\n{text[:2000]}")
    times.sort()

    def pct(p: float) -> float:
        return 1000 * times[max(0, math.ceil(p * len(times)) - 1)]

    return HeyResult(requests, len(times) / end if end else 0.0, pct(0.50), pct(0.99), statuses)
