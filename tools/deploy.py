"""Keep an HTTP component serving: `wasmtime serve` workers that are restarted
when they die, optionally behind nginx. `./build.sh serve` and `./build.sh
deploy` run this; it is the project's deployment (docs/serving.md).

    deploy.py --port 8080 [--workers N] [--proxy] [--state DIR] [--concurrency N] [--queue N]
              [--rate N] [--burst N] [--trusted-proxy CIDR]... -- WASMTIME serve ... COMPONENT

Everything after ``--`` is one worker's command line without its ``--addr``,
the component last; each worker runs at most ``--concurrency`` requests at
once (the rest wait in it). Without ``--proxy`` there is one worker, listening
on ``--port`` itself. With ``--proxy`` nginx listens on ``--port`` and balances
over ``--workers`` workers on free loopback ports; nginx's timeouts bound what
`wasmtime serve` does not (a client whose headers or body stall gets 408 or is
closed, and never holds a worker), one client address holds at most
``CONNECTIONS_PER_CLIENT`` connections and starts at most ``--rate`` requests
a second (429), a worker is given at most ``--queue`` requests at once (503
past it), and a request that cannot reach one worker is sent to another.
Every error nginx writes itself is JSON. Started as root, nginx's workers and
the wasmtime workers run as nobody, and nginx's state folder is owner-only.

A worker that exits for any reason (a crash, a kill, an out-of-memory kill) is
logged on stderr, with its exit status, and started again; one that keeps
dying at once is restarted with a growing pause (up to ``MAX_BACKOFF_S``).
SIGTERM or SIGINT stops everything and exits 0.
"""

from __future__ import annotations

import argparse
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

# A worker that lived less than this was failing at start-up: pause before the next try.
HEALTHY_AFTER_S = 5.0
MAX_BACKOFF_S = 10.0
POLL_S = 0.1

# What nginx allows a client, in seconds: between two reads of the headers or
# the body, and between two writes of the answer.
CLIENT_TIMEOUT_S = 10
# How long nginx waits for a worker's answer: /ocr of a large photo takes a few
# seconds; a request that computes for longer is answered 504.
WORKER_TIMEOUT_S = 120
# Open connections one client address may hold. The client timeouts bound a
# stall, not a trickle (a byte every few seconds restarts them): this bounds
# how many connections such a client can hold in nginx (never in a worker).
CONNECTIONS_PER_CLIENT = 64
# Requests per second one client address may start (`limit_req`), and how many
# more it may send at once before the rate applies: a client over them gets a
# JSON 429. The burst lets a page or a batch job start a few requests together.
RATE_PER_CLIENT = 50
BURST_PER_CLIENT = 100
# Requests a worker runs at once (its `--max-concurrent-requests`); more wait
# their turn in it, first come first served. Inference is bound by the
# machine's cores, so running more at once adds only memory: each holds an
# instance, its models and their buffers (docs/serving.md, "Budgets").
CONCURRENCY_PER_WORKER = 2
# Requests nginx gives one worker at once, running or waiting (`max_conns`):
# past it on every worker, nginx answers 503 at once instead of letting a
# burst pile up. A request whose client hung up still counts until the worker
# has finished it (`proxy_ignore_client_abort`): wasmtime 49 cannot stop it,
# and letting it go uncounted would let a client start any number of them.
QUEUE_PER_WORKER = 8
# The largest body any endpoint takes (apps/serve's /ocr: 16 MiB); each
# endpoint refuses what is over its own limit with its own 413.
MAX_BODY_MIB = 17
MAX_BODY = f"{MAX_BODY_MIB}m"

# nginx's own refusals, as JSON like the app's: status -> message. 494 is
# nginx's code for request headers over its buffers (sent as 400 otherwise);
# 404 only answers a request for ERROR_PATH itself (every path goes to a worker).
NGINX_ERRORS = {
    400: "the request is not valid HTTP/1.1",
    404: "no such path",
    408: "the request did not arrive within {client_timeout} s",
    413: "the body is over {max_body_mib} MiB, the most any endpoint takes",
    414: "the request line is too long",
    429: (
        "too many requests from this address: at most {rate} a second (bursts of {burst}) "
        "and {per_client} connections at once"
    ),
    494: "the request headers are too large",
    500: "nginx could not handle the request",
    501: "this transfer coding is not supported (chunked is)",
    502: "no worker could take the request (each takes {queue} at once, or it is restarting); "
    "try again",
    504: "no answer within {worker_timeout} s",
    505: "the HTTP version is not supported (HTTP/1.0 and 1.1 are)",
}
# What the client sees for each: 494 is sent as 431 (its standard code), and a
# worker that cannot take the request (all at max_conns, or restarting) as 503
# with Retry-After: a moment later it can.
NGINX_STATUS = {494: 431, 502: 503}
# The unprivileged account nginx's workers (and, started as root, the wasmtime
# workers) run as.
WORKER_USER, WORKER_GROUP = "nobody", "nogroup"

NGINX_CONF = """\
# nginx in front of `wasmtime serve` workers on loopback, written by tools/deploy.py
# (docs/serving.md explains each line).
{user}worker_processes 1;
pid {state}/nginx.pid;
error_log {state}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    server_tokens off;
    log_format upstream '$upstream_addr $status $request_time';
    access_log {state}/access.log upstream;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{real_ip}    limit_conn_zone $binary_remote_addr zone=per_client:1m;
    limit_req_zone $binary_remote_addr zone=per_client_rate:1m rate={rate}r/s;
    upstream wasinn {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_header_timeout {client_timeout}s;
        client_body_timeout {client_timeout}s;
        send_timeout {client_timeout}s;
        keepalive_timeout 30s;
        limit_conn per_client {per_client};
        limit_conn_status 429;
        limit_req zone=per_client_rate{burst_option};
        limit_req_status 429;
        client_max_body_size {max_body};
        client_body_buffer_size {max_body};
        location / {{
            proxy_pass http://wasinn;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 2s;
            proxy_send_timeout {client_timeout}s;
            proxy_read_timeout {worker_timeout}s;
            proxy_next_upstream error timeout;
            proxy_ignore_client_abort on;
        }}
{errors}
    }}
}}
"""


@dataclass(frozen=True)
class Limits:
    """What nginx allows: per client address and per worker (the defaults above)."""

    rate: int = RATE_PER_CLIENT
    burst: int = BURST_PER_CLIENT
    queue: int = QUEUE_PER_WORKER
    #: Proxies whose X-Forwarded-For names the real client (addresses or CIDR
    #: ranges); the per-client limits then count that client, not the proxy.
    trusted_proxies: tuple[str, ...] = ()


DEFAULTS = Limits()


#: Where nginx's own error answers live (``internal``: no client can ask for them).
ERROR_PATH = "/.nginx-error/"


def _error_pages(values: dict[str, object]) -> str:
    """An ``error_page`` and an internal location under ERROR_PATH for each of NGINX_ERRORS."""
    lines = []
    for status, message in NGINX_ERRORS.items():
        sent = NGINX_STATUS.get(status, status)
        body = json.dumps({"error": message.format(**values)}).replace("'", "\\'")
        retry = "\n            add_header Retry-After 1 always;" if sent == 503 else ""
        # A path, not a named location: nginx cannot redirect a request whose
        # line it could not parse (no URI) to a named location, and answers 500.
        lines += [
            f"        error_page {status} ={sent} {ERROR_PATH}{status};",
            f"        location = {ERROR_PATH}{status} {{",
            f"            internal;\n            default_type application/json;{retry}",
            f"            return {sent} '{body}';",
            "        }",
        ]
    return "\n".join(lines)


def nginx_conf(
    state: Path, temp: Path, port: int, backends: list[int], limits: Limits = DEFAULTS
) -> str:
    """nginx's configuration: listen on ``port``, balance over ``backends`` (loopback
    ports), keep its configuration, pid and logs under ``state`` and the files
    its workers write (bodies and answers too large for memory) under ``temp``."""
    values: dict[str, object] = {
        "client_timeout": CLIENT_TIMEOUT_S, "worker_timeout": WORKER_TIMEOUT_S,
        "max_body": MAX_BODY, "max_body_mib": MAX_BODY_MIB, "per_client": CONNECTIONS_PER_CLIENT,
        "rate": limits.rate, "burst": limits.burst, "queue": limits.queue,
    }  # fmt: skip
    # max_fails=0: nginx never takes a worker out of service for failing a request.
    # By default one failure would take it out for 10 s, so a client could disable
    # every worker with one failing request each; a dead worker refuses connections
    # at once and the next worker gets the request anyway (proxy_next_upstream).
    servers = "\n".join(
        f"        server 127.0.0.1:{p} max_conns={limits.queue} max_fails=0;" for p in backends
    )
    real_ip = "".join(f"    set_real_ip_from {cidr};\n" for cidr in limits.trusted_proxies)
    if real_ip:
        real_ip += "    real_ip_header X-Forwarded-For;\n    real_ip_recursive on;\n"
    # As root, nginx's workers run as nobody; elsewhere as the user who starts it.
    user = f"user {WORKER_USER} {WORKER_GROUP};\n" if os.geteuid() == 0 else ""
    # nginx takes no burst=0: no burst is the option left out.
    burst_option = f" burst={limits.burst} nodelay" if limits.burst else ""
    return NGINX_CONF.format(
        user=user, state=state, temp=temp, port=port, servers=servers, real_ip=real_ip,
        errors=_error_pages(values), burst_option=burst_option, **values,
    )  # fmt: skip



def prepare_state(
    state: Path, port: int, backends: list[int], limits: Limits = DEFAULTS
) -> tuple[Path, Path]:
    """Write nginx's configuration into ``state`` (created owner-only if missing;
    refused if others may write to it, since nginx reads it as root), with a
    separate temporary folder that only nginx's workers may write. Returns the
    configuration file and the temporary folder (the caller removes it)."""
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = state.stat().st_mode
    if mode & 0o022:
        raise PermissionError(
            f"{state} may be written by others (mode {mode & 0o777:o}); nginx reads its "
            f"configuration there as root: chmod go-w {state}, or leave --state out"
        )
    temp = Path(tempfile.mkdtemp(prefix="wasinn-nginx-temp-"))
    if os.geteuid() == 0:
        # The workers write here and nowhere else; nginx creates the subfolders.
        os.chown(temp, pwd.getpwnam(WORKER_USER).pw_uid, grp.getgrnam(WORKER_GROUP).gr_gid)
    conf = state / "nginx.conf"
    fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(nginx_conf(state, temp, port, backends, limits))
    return conf, temp


def nginx_binary() -> str | None:
    """Debian's nginx (in /usr/sbin, which a non-root PATH may lack)."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def free_port() -> int:
    """A TCP port nothing listens on right now (loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log(message: str) -> None:
    print(f"deploy: {message}", file=sys.stderr, flush=True)


def describe_exit(code: int) -> str:
    """'exited with 1' or 'killed by signal 11 (SIGSEGV)', from a Popen return code."""
    if code >= 0:
        return f"exited with {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"killed by signal {-code}{name}"


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def stop(proc: subprocess.Popen[bytes], stop_signal: int = signal.SIGTERM) -> None:
    """Ask a running process to stop with ``stop_signal``; kill it after 15 s."""
    if proc.poll() is None:
        proc.send_signal(stop_signal)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


class Process:
    """A child process started again whenever it exits, until ``stop``; once it
    accepts connections on ``port`` it is logged as ready."""

    def __init__(
        self,
        label: str,
        argv: list[str],
        port: int,
        stop_signal: int = signal.SIGTERM,
        unprivileged: bool = False,
    ) -> None:
        self.label = label
        self.argv = argv
        self.unprivileged = unprivileged
        self.port = port
        self.ready = False
        self.stop_signal = stop_signal
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.restarts = 0
        self.quick_deaths = 0
        self.due = 0.0  # when a restart may happen (backoff)

    def start(self) -> None:
        if self.unprivileged and os.geteuid() == 0:
            # Root could write every file the component is given (wasmtime 49
            # maps folders read-write): as nobody it reads them and writes nothing.
            self.proc = subprocess.Popen(
                self.argv, user=WORKER_USER, group=WORKER_GROUP, extra_groups=[]
            )
        else:
            self.proc = subprocess.Popen(self.argv)
        self.started = time.monotonic()
        self.ready = False
        log(f"{self.label} started (pid {self.proc.pid})")

    def check(self) -> None:
        """Restart the process if it has exited (after its backoff)."""
        if self.proc is None:
            if time.monotonic() >= self.due:
                self.start()
            return
        code = self.proc.poll()
        if code is None:
            if not self.ready and listening(self.port):
                self.ready = True
                lived = time.monotonic() - self.started
                log(f"{self.label} ready (pid {self.proc.pid}) after {lived:.1f} s")
            return
        lived = time.monotonic() - self.started
        self.quick_deaths = self.quick_deaths + 1 if lived < HEALTHY_AFTER_S else 0
        pause = min(MAX_BACKOFF_S, 0.5 * 2 ** (self.quick_deaths - 1)) if self.quick_deaths else 0
        self.restarts += 1
        log(
            f"{self.label} (pid {self.proc.pid}) {describe_exit(code)} after {lived:.1f} s; "
            f"restarting{f' in {pause:.1f} s' if pause else ''} (restart {self.restarts})"
        )
        self.proc = None
        self.due = time.monotonic() + pause

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc, self.stop_signal)


def files_read(command: list[str]) -> list[Path]:
    """What a worker's command line names for it to read: the programs and
    libraries (absolute paths, ``LD_LIBRARY_PATH``), the component (last), each
    folder ``--dir`` maps and each model ``-S nn-graph=FORMAT::DIR`` preloads."""
    found: list[Path] = []
    for i, word in enumerate(command):
        if word.startswith("LD_LIBRARY_PATH="):
            found += [Path(p) for p in word.split("=", 1)[1].split(":") if p]
        elif i and command[i - 1] == "--dir":
            found.append(Path(word.split("::", 1)[0]))
        elif word.startswith("nn-graph="):
            found.append(Path(word.split("::", 1)[-1]))
        elif word.startswith("/"):
            found.append(Path(word))
    return found


def unreadable_by_others(paths: list[Path]) -> Path | None:
    """The first of ``paths`` that a user other than its owner cannot reach and
    read (a folder on its way without o+x, the file itself without o+r), if any."""
    for path in paths:
        path = path.resolve()
        for folder in path.parents:
            if not folder.stat().st_mode & 0o001:
                return folder
        wanted = 0o005 if path.is_dir() else 0o004
        if path.exists() and path.stat().st_mode & wanted != wanted:
            return path
    return None


def worker_argv(command: list[str], port: int, concurrency: int) -> list[str]:
    """``command`` (the component last) listening on 127.0.0.1:port, running at
    most ``concurrency`` requests at once."""
    limit = ["--max-concurrent-requests", str(concurrency)]
    return [*command[:-1], *limit, "--addr", f"127.0.0.1:{port}", command[-1]]


class Stop(Exception):
    """SIGTERM or SIGINT arrived."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--proxy", action="store_true", help="nginx in front of the workers")
    parser.add_argument(
        "--state", type=Path, help="nginx's folder, owner-only (default: a temporary one)"
    )
    for flag, default, what in (
        ("--rate", RATE_PER_CLIENT, "requests a second per client address"),
        ("--burst", BURST_PER_CLIENT, "requests a client may send at once beyond the rate"),
        ("--concurrency", CONCURRENCY_PER_WORKER, "requests a worker runs at once; more wait"),
        ("--queue", QUEUE_PER_WORKER, "requests nginx gives a worker at once, running or waiting"),
    ):
        parser.add_argument(flag, type=int, default=default, help=f"{what} ({default})")
    parser.add_argument(
        "--trusted-proxy", action="append", default=[], metavar="CIDR",
        help="a proxy whose X-Forwarded-For names the client (repeatable)",
    )  # fmt: skip
    parser.add_argument("command", nargs="+", help="a worker's command, the component last")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be 1 or more")
    if args.workers > 1 and not args.proxy:
        parser.error("several workers need --proxy (they cannot share one port)")
    if min(args.rate, args.burst + 1, args.concurrency, args.queue) < 1:
        parser.error("--rate, --concurrency and --queue must be 1 or more, --burst 0 or more")

    processes: list[Process] = []
    state: Path | None = None
    temp: Path | None = None
    if args.proxy:
        nginx = nginx_binary()
        if nginx is None:
            log("nginx is not installed (Debian: apt-get install nginx)")
            return 1
        ports = [free_port() for _ in range(args.workers)]
        state = args.state or Path(tempfile.mkdtemp(prefix="wasinn-deploy-"))
        limits = Limits(args.rate, args.burst, args.queue, tuple(args.trusted_proxy))
        try:
            conf, temp = prepare_state(state, args.port, ports, limits)
        except PermissionError as e:
            log(str(e))
            return 1
        # A value nginx refuses (a mistyped --trusted-proxy, say) stops here, once,
        # with nginx's own words, rather than in a restart loop.
        checked = subprocess.run(
            [nginx, "-t", "-q", "-p", str(state), "-c", str(conf), "-e", str(state / "error.log")],
            capture_output=True, text=True,
        )  # fmt: skip
        if checked.returncode != 0:
            log(f"nginx refuses the configuration: {checked.stderr.strip()}")
            shutil.rmtree(temp, ignore_errors=True)
            return 1
        processes.append(
            Process(
                f"nginx on 127.0.0.1:{args.port}",
                [nginx, "-p", str(state), "-c", str(conf), "-e", str(state / "error.log"),
                 "-g", "daemon off;"],  # fmt: skip
                args.port,
                stop_signal=signal.SIGQUIT,  # finish the requests in flight, then exit
            )
        )
    else:
        ports = [args.port]
    unprivileged = True
    if os.geteuid() == 0:
        blocked = unreadable_by_others(files_read(args.command))
        if blocked is not None:  # run anyway, and say what is given away
            unprivileged = False
            log(
                f"workers run as root, with write access to what they are given: "
                f"{WORKER_USER} cannot read {blocked} (chmod o+rx it, or serve from elsewhere)"
            )
    for port in ports:
        processes.append(
            Process(
                f"worker 127.0.0.1:{port}",
                worker_argv(args.command, port, args.concurrency),
                port,
                unprivileged=unprivileged,
            )
        )

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        while True:
            for process in processes:
                process.check()
            time.sleep(POLL_S)
    except Stop:
        log("stopping")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for process in reversed(processes):
            process.stop()
        if state is not None and args.state is None:
            shutil.rmtree(state, ignore_errors=True)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
