"""How much data the host accepts in one call, checked before the call.

wasmtime limits the bytes a guest may copy into the host in a single call
(its "hostcall fuel", 128 MiB unless the host is run with
``-S hostcall-fuel=BYTES``). Going over traps the whole component, so wasinn
checks tensors and model parts first. A guest cannot ask the host for the
limit; when the host's is raised, tell wasinn too with the environment
variable ``WASINN_HOSTCALL_FUEL`` (``wasmtime run --env WASINN_HOSTCALL_FUEL=BYTES``).
"""

from __future__ import annotations

import os

from ._errors import TooLargeError, ValidationError

#: wasmtime's default hostcall fuel, in bytes.
DEFAULT_HOSTCALL_FUEL = 128 << 20
_ENV = "WASINN_HOSTCALL_FUEL"


def hostcall_limit() -> int:
    """The bytes one host call may receive: WASINN_HOSTCALL_FUEL or wasmtime's default."""
    value = os.environ.get(_ENV)
    if value is None:
        return DEFAULT_HOSTCALL_FUEL
    try:
        limit = int(value)
    except ValueError:
        raise ValidationError(f"{_ENV}={value!r} is not a number of bytes") from None
    if limit <= 0:
        raise ValidationError(f"{_ENV} must be a positive number of bytes, not {limit}")
    return limit


def check(nbytes: int, what: str) -> None:
    """Raise TooLargeError if ``nbytes`` would exceed the host's per-call limit."""
    if nbytes <= DEFAULT_HOSTCALL_FUEL:
        return
    limit = hostcall_limit()
    if nbytes > limit:
        raise TooLargeError(
            f"{what} is {nbytes / (1 << 20):.1f} MiB, more than the {limit / (1 << 20):.0f} MiB "
            "the wasmtime host accepts in one call (its hostcall fuel; going over would abort the "
            "component). Split the data, or raise both limits: wasmtime run -S "
            f"hostcall-fuel=BYTES --env {_ENV}=BYTES"
        )
