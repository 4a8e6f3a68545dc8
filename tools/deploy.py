"""Keep an HTTP component serving: `wasmtime serve` workers that are restarted
when they die, optionally behind nginx. `./build.sh serve` and `./build.sh
deploy` run this; it is the project's deployment (docs/serving.md).

    deploy.py --port 8080 [--workers N] [--proxy] [--state DIR] -- WASMTIME serve ... COMPONENT

Everything after ``--`` is one worker's command line without its ``--addr``,
the component last. Without ``--proxy`` there is one worker, listening on
``--port`` itself. With ``--proxy`` nginx listens on ``--port`` and balances
over ``--workers`` workers on free loopback ports; nginx's timeouts bound what
`wasmtime serve` does not (a client whose headers or body stall gets 408 or is
closed, and never holds a worker), one client address holds at most
``CONNECTIONS_PER_CLIENT`` connections, and a request that cannot reach one
worker is sent to another.

A worker that exits for any reason (a crash, a kill, an out-of-memory kill) is
logged on stderr, with its exit status, and started again; one that keeps
dying at once is restarted with a growing pause (up to ``MAX_BACKOFF_S``).
SIGTERM or SIGINT stops everything and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
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
# The largest body any endpoint takes (apps/serve's /ocr: 16 MiB); each
# endpoint refuses what is over its own limit with its own 413.
MAX_BODY = "17m"

NGINX_CONF = """\
# nginx in front of `wasmtime serve` workers on loopback, written by tools/deploy.py
# (docs/serving.md explains each line).
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format upstream '$upstream_addr $status $request_time';
    access_log {prefix}/access.log upstream;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    limit_conn_zone $binary_remote_addr zone=per_client:1m;
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
        }}
        error_page 413 @too_large;
        error_page 502 @no_worker;
        error_page 504 @worker_timeout;
        location @too_large {{
            default_type application/json;
            return 413 '{{"error": "the body is over {max_body}B, the most any endpoint takes"}}';
        }}
        location @no_worker {{
            default_type application/json;
            return 502 '{{"error": "no worker could answer; try again"}}';
        }}
        location @worker_timeout {{
            default_type application/json;
            return 504 '{{"error": "no answer within {worker_timeout} s"}}';
        }}
    }}
}}
"""


def nginx_conf(prefix: Path, port: int, backends: list[int]) -> str:
    """nginx's configuration: listen on ``port``, balance over ``backends`` (loopback
    ports), keep logs and temporary files under ``prefix``."""
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in backends)
    return NGINX_CONF.format(
        prefix=prefix,
        port=port,
        servers=servers,
        client_timeout=CLIENT_TIMEOUT_S,
        worker_timeout=WORKER_TIMEOUT_S,
        max_body=MAX_BODY,
        per_client=CONNECTIONS_PER_CLIENT,
    )


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
        self, label: str, argv: list[str], port: int, stop_signal: int = signal.SIGTERM
    ) -> None:
        self.label = label
        self.argv = argv
        self.port = port
        self.ready = False
        self.stop_signal = stop_signal
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.restarts = 0
        self.quick_deaths = 0
        self.due = 0.0  # when a restart may happen (backoff)

    def start(self) -> None:
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


def worker_argv(command: list[str], port: int) -> list[str]:
    """``command`` (the component last) listening on 127.0.0.1:port."""
    return [*command[:-1], "--addr", f"127.0.0.1:{port}", command[-1]]


class Stop(Exception):
    """SIGTERM or SIGINT arrived."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--proxy", action="store_true", help="nginx in front of the workers")
    parser.add_argument("--state", type=Path, help="nginx's folder (default: a temporary one)")
    parser.add_argument("command", nargs="+", help="a worker's command, the component last")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be 1 or more")
    if args.workers > 1 and not args.proxy:
        parser.error("several workers need --proxy (they cannot share one port)")

    processes: list[Process] = []
    state: Path | None = None
    if args.proxy:
        nginx = nginx_binary()
        if nginx is None:
            log("nginx is not installed (Debian: apt-get install nginx)")
            return 1
        ports = [free_port() for _ in range(args.workers)]
        state = args.state or Path(tempfile.mkdtemp(prefix="wasinn-deploy-"))
        state.mkdir(parents=True, exist_ok=True)
        os.chmod(state, 0o777)  # nginx's workers drop root and write their logs here
        conf = state / "nginx.conf"
        conf.write_text(nginx_conf(state, args.port, ports))
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
    for port in ports:
        processes.append(
            Process(f"worker 127.0.0.1:{port}", worker_argv(args.command, port), port)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
