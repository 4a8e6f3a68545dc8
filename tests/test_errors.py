"""Host error translation: every wasi-nn error code has its own exception class."""

from __future__ import annotations

import re
from pathlib import Path

import wasinn
from wasinn import _errors

WIT = Path(__file__).resolve().parent.parent / "guest" / "wasinn" / "wit" / "wasi-nn.wit"


def wit_error_codes() -> list[str]:
    """The error-code enum's cases, read from the WIT the bindings are built from."""
    body = re.search(r"enum error-code \{(.*?)\}", WIT.read_text(), re.S)
    assert body is not None
    cases = [line.split("//")[0].strip().rstrip(",") for line in body.group(1).splitlines()]
    return [c for c in cases if c]


def test_every_wit_error_code_maps_to_its_own_class() -> None:
    codes = wit_error_codes()
    assert len(codes) == 9
    classes = set()
    for code in codes:
        exc = _errors.from_host(code, "host says no", "load", "loading m.xml on cpu")
        assert type(exc) is not wasinn.WasiNNError and isinstance(exc, wasinn.WasiNNError)
        assert exc.code == code
        assert exc.host_message == "host says no"
        assert "loading m.xml on cpu failed" in str(exc) and "host says no" in str(exc)
        classes.add(type(exc))
    assert len(classes) == len(codes)


def test_unknown_code_from_a_newer_host_is_still_a_wasinn_error() -> None:
    exc = _errors.from_host("brand-new-code", "?", "compute", "running m")
    assert isinstance(exc, wasinn.UnknownError)


def test_opaque_backend_message_gets_a_hint() -> None:
    exc = _errors.from_host(
        "runtime-error", "Failed while accessing backend", "compute", "running m"
    )
    assert isinstance(exc, wasinn.BackendRuntimeError)
    assert "does not pass on OpenVINO's reason" in str(exc)
    plain = _errors.from_host(
        "runtime-error", "The backend expects 2 buffers, passed 1", "load", "loading m"
    )
    assert "reason" not in str(plain)


def test_guest_side_errors_are_value_errors_too() -> None:
    assert issubclass(wasinn.ValidationError, ValueError)
    assert issubclass(wasinn.ModelFormatError, wasinn.ValidationError)
    assert issubclass(wasinn.ClosedError, ValueError)
    assert wasinn.ValidationError("x").code is None


def test_too_large_raised_by_wasinn_has_the_host_code_and_no_host_message() -> None:
    """As documented in _errors: one ``code == "too-large"`` check catches both sources."""
    from wasinn import _limits

    try:
        _limits.check(_limits.DEFAULT_HOSTCALL_FUEL + 1, "input 'x'")
    except wasinn.TooLargeError as exc:
        assert exc.code == "too-large" and exc.host_message is None
        assert "input 'x' is 128.0 MiB, more than the 128 MiB" in str(exc)
    else:
        raise AssertionError("no TooLargeError")

