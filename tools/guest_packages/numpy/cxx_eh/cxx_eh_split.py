"""Make numpy's C++ exception-handling modules linkable by componentize-py 0.25.1.

    cxx_eh_split.py WASM_OPT SITE      (WASM_OPT: binaryen's wasm-opt, build_ext.install_binaryen())

numpy's C++ is compiled with ``-fwasm-exceptions`` (README.md here), so the
extension modules with C++ that throws or catches (``_multiarray_umath``:
unique.cpp; ``_pocketfft_umath``) hold WebAssembly exception handling in LLVM
19's legacy form. For every ``*.cpython-314-wasm32-wasi.so`` under SITE that
holds EH instructions this tool

1. translates it to the standard exnref form wasmtime 49 runs (wasm-opt with
   build_ext.WASM_OPT_FLAGS) and writes it as ``NAME.sjlj.wasm`` beside it;
2. overwrites the ``.so`` with its stub (sjlj_splice.make_stub(strip=True)):
   the same code without EH (try_table -> block, throw -> unreachable, exnref
   -> i32), which componentize-py's pre-init can run: numpy's static
   constructors and any np.unique / np.fft an app calls at import time work.

build.sh's sjlj_splice step then puts the real code back into the component
(it finds every ``*.sjlj.wasm`` in the ``-p`` folders). Modules without EH are
left alone. Idempotent: a stub has no EH, so a second run finds nothing to do.
Prints one line per module split.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(TOOLS))

import sjlj_splice  # noqa: E402
from build_ext import WASM_OPT_FLAGS  # noqa: E402
from wasm_binary import split_sections  # noqa: E402

SUFFIX = ".cpython-314-wasm32-wasi.so"


def has_eh(module: bytes) -> bool:
    for sid, payload in split_sections(module):
        if sid == 10:
            return any(sjlj_splice.uses_eh(b) for b in sjlj_splice.code_bodies(payload))
    return False


def split(wasm_opt: Path, so: Path) -> int:
    """Split one module; returns how many functions its stub strips (0: no EH, untouched)."""
    module = so.read_bytes()
    if not has_eh(module):
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "exnref.wasm"
        subprocess.run(
            ["node", str(wasm_opt), *WASM_OPT_FLAGS, str(so), "-o", str(out)], check=True
        )
        real = out.read_bytes()
    stub = sjlj_splice.make_stub(real, strip=True)
    so.with_name(so.name[: -len(SUFFIX)] + sjlj_splice.REAL_SUFFIX).write_bytes(real)
    so.write_bytes(stub.binary)
    return len(stub.stubbed)


def main() -> int:
    wasm_opt, site = Path(sys.argv[1]), Path(sys.argv[2])
    for so in sorted(site.rglob(f"*{SUFFIX}")):
        n = split(wasm_opt, so)
        if n:
            print(f"cxx_eh_split: {so.relative_to(site)}: {n} functions with EH, stub + real")
    return 0


if __name__ == "__main__":
    sys.exit(main())
