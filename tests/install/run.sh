#!/bin/sh
# run.sh cmake|pkgconfig CMAKE BUILD_DIR SOURCE_DIR CC VERSION — installs the built tree into a
# temporary prefix, moves the prefix elsewhere (an install must not depend on where it was made),
# then builds and runs tests/install/consumer.c against it: through the CMake package (cmake) or
# through weft.pc (pkgconfig; skipped (77) without pkg-config; also as C++ where a C++ compiler
# is installed). The installed tools must start. Neither way adds an rpath or LD_LIBRARY_PATH of
# its own: weft.pc's Libs carry the rpath, and CMake gives its build tree's programs one. The
# CMake package must also configure where the CUDA toolkit cannot be found, since weft.h needs
# none of it.
set -u
mode=$1 cmake=$2 build=$3 src=$4 cc=$5 version=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; [ -f "$tmp/log" ] && tail -30 "$tmp/log"; exit 1; }
# from_prefix PROGRAM: the dynamic linker, without LD_LIBRARY_PATH, takes libweft from the
# moved prefix (the rpath a consumer got), not from anywhere else.
from_prefix() {
  if ! command -v ldd >/dev/null; then
    echo "note: no ldd, where $1 finds libweft not checked"
    return 0
  fi
  at=$(env -u LD_LIBRARY_PATH ldd "$1" |
       awk '$1 == "libweft.so.0" { print (($3 ~ /^\//) ? $3 : "none") }')
  case "$at" in
    "$p"/*) ;;
    *) fail "without LD_LIBRARY_PATH, $1 finds libweft.so.0 at ${at:-none}, not under $p" ;;
  esac
}

if [ "$mode" = pkgconfig ] && ! command -v pkg-config >/dev/null; then
  echo "skipped: pkg-config not found"
  exit 77
fi
"$cmake" --install "$build" --prefix "$tmp/made" > "$tmp/log" 2>&1 || fail "cmake --install"
mv "$tmp/made" "$tmp/prefix" || fail "moving the prefix"
p=$tmp/prefix
for t in weft-bench weftrun; do
  "$p/bin/$t" --help > "$tmp/log" 2>&1 || fail "installed $t --help"
done

if [ "$mode" = cmake ]; then
  "$cmake" -S "$src/tests/install" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_COMPILER="$cc" \
    -DWEFT_EXPECT_VERSION="$version" > "$tmp/log" 2>&1 || fail "configuring with find_package(weft)"
  grep -q "$p" "$tmp/b/CMakeCache.txt" || fail "find_package(weft) did not find $p"
  "$cmake" --build "$tmp/b" > "$tmp/log" 2>&1 || fail "building against weft::weft"
  from_prefix "$tmp/b/consumer"
  "$tmp/b/consumer" || fail "the consumer (CMake package)"
  # Again with the CUDA toolkit (and Threads) unfindable: weft::weft must not ask for them.
  "$cmake" -S "$src/tests/install" -B "$tmp/b2" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_COMPILER="$cc" \
    -DWEFT_EXPECT_VERSION="$version" -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_Threads=ON > "$tmp/log" 2>&1 ||
    fail "configuring with find_package(weft) where CUDAToolkit and Threads cannot be found"
  "$cmake" --build "$tmp/b2" > "$tmp/log" 2>&1 ||
    fail "building against weft::weft without CUDAToolkit"
  "$tmp/b2/consumer" || fail "the consumer (CMake package, no CUDAToolkit)"
else
  pc=$(find "$p" -name weft.pc) && [ -n "$pc" ] || fail "no weft.pc installed"
  export PKG_CONFIG_PATH="$(dirname "$pc")"
  [ "$(pkg-config --modversion weft)" = "$version" ] || fail "weft.pc version $(pkg-config --modversion weft), not $version"
  libdir=$(pkg-config --variable=libdir weft)
  [ -f "$libdir/libweft.so" ] || fail "weft.pc's libdir $libdir holds no libweft.so"
  # shellcheck disable=SC2046 # the flags are words
  "$cc" -std=c11 -Wall -Werror -o "$tmp/consumer" "$src/tests/install/consumer.c" \
    $(pkg-config --cflags --libs weft) > "$tmp/log" 2>&1 ||
    fail "building with pkg-config --cflags --libs weft"
  from_prefix "$tmp/consumer"
  "$tmp/consumer" || fail "the consumer (pkg-config)"
  # The same program as C++ (PyTorch extensions and much host code are C++), where a C++ compiler
  # is installed: the public header's C linkage and its declarations must hold there too.
  cxx=$(command -v c++ || command -v g++ || command -v clang++ || true)
  if [ -n "$cxx" ]; then
    # shellcheck disable=SC2046
    "$cxx" -x c++ -std=c++17 -Wall -Wextra -Werror -o "$tmp/consumer_cxx" \
      "$src/tests/install/consumer.c" -x none $(pkg-config --cflags --libs weft) \
      > "$tmp/log" 2>&1 || fail "building consumer.c as C++ ($cxx)"
    from_prefix "$tmp/consumer_cxx"
    "$tmp/consumer_cxx" || fail "the consumer built as C++"
  else
    echo "note: no C++ compiler, the header's C++ check skipped"
  fi
fi
echo "ok: $mode consumer built and ran against an install moved from where it was made"
