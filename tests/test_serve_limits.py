"""The bounds in front of apps/serve's work, natively (issue 34): the JSON
pre-scan is linear in the body, the OCR pipeline sizes its canvas from the
header and refuses what would be padded to gigabytes, and tools/deploy.py
writes nginx's limits, JSON errors and an owner-only state folder.

The same bounds under the real server are in tests/test_hostile_cost.py (what
a request costs) and tests/test_serve.py (what nginx answers).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for folder in ("apps/serve", "apps/ocr", "tools"):
    sys.path.insert(0, str(ROOT / folder))
import deploy  # noqa: E402
import jsonbody  # noqa: E402
import pipeline  # noqa: E402  (needs apps/ocr's C extension, which ./build.sh builds)

# ---------------------------------------------------------------- the JSON pre-scan

#: Bodies whose bytes are all quotes, escapes and brackets: each once took the
#: string pattern back to the start of a scan to the end (issue 34: 32 KB, 10 s).
WORST_BODIES = {
    "65 '[' then '\\\"' pairs": lambda n: b"[" * 65 + b'\\"' * (n // 2),
    "quotes": lambda n: b'"' * n,
    "backslashes": lambda n: b"\\" * n,
    "'\"\\' pairs": lambda n: b'"\\' * (n // 2),
    "'[\"' pairs": lambda n: b'["' * (n // 2),
    "65 '[' then '\\\\\"'": lambda n: b"[" * 65 + b'\\\\"' * (n // 3),
}


def _scan_seconds(body: bytes) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        jsonbody.nesting_depth(body)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("name", list(WORST_BODIES))
def test_the_nesting_scan_is_linear_in_the_body(name: str) -> None:
    """Sixteen times the bytes may take at most 64 times as long (linear: 16;
    the old quadratic scan: 256); timed side by side, so a slow machine is slow
    for both sizes alike."""
    make = WORST_BODIES[name]
    small, large = _scan_seconds(make(1 << 16)), _scan_seconds(make(1 << 20))
    assert large < 64 * max(small, 1e-4), f"{name}: 64 KiB {small:.4f} s, 1 MiB {large:.4f} s"


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b'{"a": [1, "]]", {"b": []}]}', 4),
        (b'["[[[", "\\"[[[", "\\\\", [[]]]', 3),
        (b'[[["unclosed [[[[', 3),  # an open string hides the rest (invalid JSON anyway)
        (b'[["\\', 2),  # a lone backslash at the very end
        (b"42", 0),
        (b"[" * 1000, 1000),
    ],
)
def test_nesting_depth(body: bytes, depth: int) -> None:
    assert jsonbody.nesting_depth(body) == depth


def test_parse_refuses_deep_nesting_and_invalid_bodies() -> None:
    with pytest.raises(jsonbody.BadJSON, match="nests 65 levels deep; at most 64"):
        jsonbody.parse(b"[" * 65 + b"]" * 65)
    assert jsonbody.parse(b"[" * 64 + b"]" * 64) is not None
    with pytest.raises(jsonbody.BadJSON, match="not JSON"):
        jsonbody.parse(b'["' + b'\\"' * 100_000 + b"x")


# ---------------------------------------------------------------- the OCR canvas


@pytest.mark.parametrize(
    ("height", "width", "detector"),
    [
        (1080, 1920, (1088, 1920)),  # within rapidocr's limits: only rounded for the detector
        (4096, 4096, (1984, 1984)),  # a large photo: scaled to 2000 a side
        (30, 2000, (736, 2944)),  # wide: black bands, then the detector's 736
        (10, 600, (736, 2944)),  # low: scaled up to 30 high, then bands
    ],
)
def test_sizes_follow_rapidocrs_rules(height: int, width: int, detector: tuple[int, int]) -> None:
    assert pipeline.check_size(height, width).detector == detector


@pytest.mark.parametrize(("height", "width"), [(8, 1999), (1, 2000), (1000, 1), (29, 16000)])
def test_a_thin_image_is_refused_from_its_size(height: int, width: int) -> None:
    """Issue 34: 1999 x 8 was padded to 7488 x 1872 for the detector (2.5 GB)."""
    with pytest.raises(pipeline.UnreadableImage, match="too thin to read"):
        pipeline.check_size(height, width)


def test_every_image_without_black_bands_is_accepted() -> None:
    """Within rapidocr's limits (at most 2000 a side) and its ratio (at most 8 times
    as wide as high, more than 30 high), no image is refused, however small: the
    detector brings the shorter side up to 736 (a 468 x 60 line: 5728 x 736)."""
    pipeline.check_size(60, 468)
    for height in range(31, 2001, 13):
        for width in range(height, min(8 * height, 2000) + 1, max(1, height // 3)):
            for h, w in ((height, width), (width, height)):
                assert pipeline.sizes(h, w).band == 0, (h, w)
                pipeline.check_size(h, w)


def test_no_accepted_size_goes_over_the_detector_limit() -> None:
    """Every size the check lets through stays within MAX_DETECTOR_PIXELS."""
    sides = [1, 2, 7, 8, 15, 16, 29, 30, 31, 63, 100, 250, 736, 1000, 1999, 2000, 2001, 4096]
    for height in sides:
        for width in sides:
            try:
                planned = pipeline.check_size(height, width)
            except pipeline.UnreadableImage:
                continue
            assert planned.detector_pixels <= pipeline.MAX_DETECTOR_PIXELS, (height, width)


# ---------------------------------------------------------------- nginx's configuration


def test_nginx_conf_bounds_clients_and_workers(tmp_path: Path) -> None:
    limits = deploy.Limits(rate=7, burst=3, queue=5, trusted_proxies=("10.0.0.0/8",))
    conf = deploy.nginx_conf(tmp_path / "s", tmp_path / "t", 8080, [9001, 9002], limits)
    assert "server_tokens off;" in conf and "proxy_ignore_client_abort on;" in conf
    assert "rate=7r/s" in conf and "burst=3 nodelay" in conf
    assert conf.count("max_conns=5 max_fails=0;") == 2
    assert "set_real_ip_from 10.0.0.0/8;" in conf and "real_ip_header X-Forwarded-For;" in conf
    assert "set_real_ip_from" not in deploy.nginx_conf(tmp_path, tmp_path, 1, [2])
    no_burst = deploy.nginx_conf(tmp_path, tmp_path, 1, [2], deploy.Limits(rate=1, burst=0))
    assert "limit_req zone=per_client_rate;" in no_burst  # nginx refuses burst=0
    # Every error nginx writes itself is JSON, under the status the client sees.
    for status in deploy.NGINX_ERRORS:
        sent = deploy.NGINX_STATUS.get(status, status)
        where = re.escape(f"{deploy.ERROR_PATH}{status}")
        block = re.search(rf"location = {where} {{\n(.*?)\n        }}", conf, re.S)
        assert block and "internal;" in block.group(1), status
        assert "default_type application/json;" in block.group(1), status
        assert re.search(rf"return {sent} '\{{\"error\": \"[^']+\"\}}';", block.group(1)), status


def test_the_state_folder_belongs_to_its_user_only(tmp_path: Path) -> None:
    state = tmp_path / "state"
    conf, temp = deploy.prepare_state(state, 8080, [9001])
    try:
        assert state.stat().st_mode & 0o777 == 0o700
        assert conf.stat().st_mode & 0o777 == 0o600
        assert temp.stat().st_mode & 0o777 == 0o700 and not temp.is_relative_to(state)
        if os.geteuid() == 0:  # nginx's workers (nobody) write there and nowhere else
            assert temp.stat().st_uid == pwd.getpwnam(deploy.WORKER_USER).pw_uid
            assert temp.stat().st_gid == grp.getgrnam(deploy.WORKER_GROUP).gr_gid
    finally:
        temp.rmdir()


def test_a_state_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "shared"
    state.mkdir()
    state.chmod(0o777)
    with pytest.raises(PermissionError, match="may be written by others"):
        deploy.prepare_state(state, 8080, [9001])
    assert state.stat().st_mode & 0o777 == 0o777  # left as it was: not deploy's to change
    assert not (state / "nginx.conf").exists()


def test_workers_drop_root_only_where_nobody_can_read_what_they_are_given(tmp_path: Path) -> None:
    """tools/deploy.py runs wasmtime as nobody when started as root, unless a file
    the command names (program, libraries, component, mapped folders) is out of
    nobody's reach; then it says which."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    component = private / "app.cwasm"
    component.write_bytes(b"")
    command = ["env", "LD_LIBRARY_PATH=/usr/lib", "WASMTIME_LOG=off", "/usr/bin/env", "serve",
               "-S", "nn-graph=openvino::/usr/include", "--dir", "/usr/share::/models",
               str(component)]  # fmt: skip
    assert deploy.files_read(command) == [
        Path("/usr/lib"), Path("/usr/bin/env"), Path("/usr/include"), Path("/usr/share"),
        component,
    ]  # fmt: skip
    blocked = deploy.unreadable_by_others(deploy.files_read(command))
    assert blocked is not None and component.is_relative_to(blocked)
    assert deploy.unreadable_by_others(deploy.files_read(command[:-1] + ["/usr/bin/env"])) is None
