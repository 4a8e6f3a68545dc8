"""What a new instance of a component does before its first call.

componentize-py builds a component by running the app's imports once and
keeping the memory they leave; every instance starts from that snapshot. State
that should differ from run to run, but was set during those imports, is the
same in every run unless it is renewed when an instance starts. Today that is
numpy's legacy global random generator (``np.random.rand``), seeded when
``numpy.random`` was imported. Python's own ``random`` needs nothing: the
guest seeds it when first used.
"""

from __future__ import annotations

import sys

_started = False


def start_instance() -> None:
    """Renew the per-run state of this instance; only the first call does anything.

    ``run_command`` calls it; an app with another entry point (an HTTP handler)
    calls it first thing in every request: with ``--reuse`` an instance serves
    several requests, and the call is then free.

    numpy's global generator is seeded from the system's entropy, unless the
    program seeded it itself (``np.random.seed(n)``, ``set_state``,
    ``set_bit_generator``) while it was imported: that stays reproducible. The
    hook comes from wasinn's patch to numpy built for the guest
    (``tools/guest_packages/numpy/runtime-seed.patch``); natively, and in an
    app without numpy, this does nothing.

    Example::

        class IncomingHandler(exports.IncomingHandler):
            def handle(self, request, response_out):
                wasinn.start_instance()
                ...
    """
    global _started
    if _started:
        return
    _started = True
    mtrand = sys.modules.get("numpy.random.mtrand")
    reseed = getattr(mtrand, "_reseed_from_entropy", None)
    if callable(reseed):
        reseed()
