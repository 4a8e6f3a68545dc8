#!/usr/bin/env bash
# C++ exception-handling runtime for numpy's extension modules in the guest (README.md):
# LLVM 19.1.7's own libc++abi (cxa_exception, cxa_personality, ...) and libunwind
# (Unwind-wasm.c) sources, from Debian bookworm's llvm-toolchain-19 source package,
# compiled with -fwasm-exceptions and hidden visibility into one static archive.
#   usage: build_runtime.sh OUT_DIR [CACHE_DIR]   -> OUT_DIR/libcxx_eh.a
# The guest's libc++abi.so (componentize-py's, built -fno-exceptions) has no
# __cxa_throw and its operator new aborts; Debian's libc++abi-19-dev-wasm32 (and
# -22-) is built -fno-exceptions too (cxa_noexception.cpp.o), hence this build.
set -euo pipefail
HERE=$(dirname "$(realpath "$0")")
OUT=$(realpath -m "${1:?usage: $0 OUT_DIR [CACHE_DIR]}"); CACHE=$(realpath -m "${2:-$OUT/cache}")
TARBALL=llvm-toolchain-19_19.1.7.orig.tar.xz
URL=http://deb.debian.org/debian/pool/main/l/llvm-toolchain-19/$TARBALL
SHA256=ae498f3bc58ae2d9f64ef5f0c035c4240152bf015a5b7738b15c22e93bdc97ce  # from the .dsc of 1:19.1.7-3~deb12u1
mkdir -p "$OUT" "$CACHE"
if [ ! -f "$CACHE/$TARBALL" ]; then  # 164 MB, ~20 s here
  curl -sSfL "$URL" -o "$CACHE/$TARBALL.part" && mv "$CACHE/$TARBALL.part" "$CACHE/$TARBALL"
fi
echo "$SHA256  $CACHE/$TARBALL" | sha256sum -c --quiet
L="$CACHE/llvm-toolchain-19_19.1.7"
if [ ! -f "$L/libunwind/src/Unwind-wasm.c" ]; then  # only the few folders used (~3 s)
  tar xJf "$CACHE/$TARBALL" -C "$CACHE" --wildcards "*/libcxxabi/src/*" "*/libcxxabi/include/*" \
    "*/libunwind/src/*" "*/libunwind/include/*" "*/libcxx/src/include/*"
fi
F=(--target=wasm32-wasi --sysroot=/usr -O2 -DNDEBUG -fPIC -fwasm-exceptions -fvisibility=hidden
   -D_LIBUNWIND_HIDE_SYMBOLS -D_LIBCXXABI_DISABLE_VISIBILITY_ANNOTATIONS -D_LIBCXXABI_BUILDING_LIBRARY
   -D_LIBCPP_BUILDING_LIBRARY -DLIBCXXABI_USE_LLVM_UNWINDER -D_LIBCXXABI_HAS_NO_THREADS
   -I"$L/libcxxabi/include" -I"$L/libunwind/include" -I"$L/libcxx/src")
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
clang-19 "${F[@]}" -std=c11 -c "$L/libunwind/src/Unwind-wasm.c" -o "$T/Unwind-wasm.o"
# stdlib_new_delete: operator new that throws std::bad_alloc (the guest's aborts)
for s in cxa_exception cxa_personality cxa_exception_storage fallback_malloc cxa_handlers \
         cxa_default_handlers abort_message stdlib_new_delete; do
  clang++-19 "${F[@]}" -std=c++20 -c "$L/libcxxabi/src/$s.cpp" -o "$T/$s.o"
done
clang-19 --target=wasm32-wasi -fPIC -mexception-handling -c "$HERE/cpp_exception_tag.S" -o "$T/cpp_exception_tag.o"
rm -f "$OUT/libcxx_eh.a"
llvm-ar-19 rcsD "$OUT/libcxx_eh.a" "$T"/*.o
ls -l "$OUT/libcxx_eh.a"
