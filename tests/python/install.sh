#!/bin/sh
# install.sh PYTHON SOURCE_DIR VERSION — the Python package as users install it, in a new virtual
# environment: `pip install ./python` builds libweft with the project's CMake through
# scikit-build-core (from the package index) and bundles it in the package, so `import weft` works
# with no WEFT_LIBRARY or PYTHONPATH, loads the bundled library and reports the project's version.
# Then the same from the package's sdist, which must build on its own (the C sources travel in
# it). Builds run in temporary directories: the tree's python/ must gain no untracked files.
# Skipped (77) where PYTHON cannot make a virtual environment with pip, or where pip cannot fetch
# scikit-build-core (no package index); any later failure is the package's.
set -u
py=$1 src=$2 version=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; [ -f "$tmp/log" ] && tail -40 "$tmp/log"; exit 1; }
skip() { echo "skipped: $*"; [ -f "$tmp/log" ] && tail -5 "$tmp/log"; exit 77; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
unset WEFT_LIBRARY PYTHONPATH PIP_REQUIRE_VIRTUALENV

# What python/ holds that git does not track, before and after; without git, its top level.
untracked() {
  if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$src" ls-files --others --exclude-standard -- python
  else
    ls -A "$src/python"
  fi
}
untracked > "$tmp/before"

"$py" -m venv "$tmp/venv" > "$tmp/log" 2>&1 ||
  skip "$py -m venv failed (on Debian, python3-venv provides it)"
vpy=$tmp/venv/bin/python
"$vpy" -m pip --version > "$tmp/log" 2>&1 || skip "no pip in the virtual environment"
# The build backend from the index (or whatever pip is configured to use): its absence means
# no network, not a broken package.
"$vpy" -m pip download --no-deps --timeout 20 --retries 1 --dest "$tmp/probe" \
  "scikit-build-core>=1.0,<2" > "$tmp/log" 2>&1 ||
  skip "pip cannot fetch scikit-build-core from the package index (no network?)"

# check: run outside the tree, so that nothing but the installed package can be imported.
check() {
  (cd "$tmp" && "$vpy" - "$version" "$tmp/venv" <<'EOF'
import importlib.metadata as md, os, sys
import weft
want, venv = sys.argv[1], os.path.realpath(sys.argv[2])
pkg = os.path.realpath(os.path.dirname(weft.__file__))
lib = os.path.realpath(weft.LIBRARY_PATH)
print(f"weft {weft.__version__} (distribution {md.version('weft')}) from {lib}")
errors = []
if weft.__version__ != want:
    errors.append(f"weft.__version__ is {weft.__version__}, the project's is {want}")
if md.version("weft") != want:
    errors.append(f"the distribution's version is {md.version('weft')}, not {want}")
if not pkg.startswith(venv + os.sep):
    errors.append(f"weft imported from {pkg}, outside the virtual environment")
if lib != os.path.join(pkg, "libweft.so"):
    errors.append(f"loaded {lib}, not the library bundled in {pkg}")
# The wheel carries the package's modules and its library only: no headers, tools, symlinked
# sonames or CMake files.
files = [str(f).replace(os.sep, "/") for f in md.files("weft") or []]
stray = [f for f in files if not f.startswith("weft-") and f != "weft/libweft.so"
         and not (f.startswith("weft/") and f.endswith((".py", ".pyc")))]
if stray or "weft/libweft.so" not in files:
    errors.append(f"installed files beyond the modules and libweft.so: {sorted(stray)}")
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
EOF
  )
}

start=$(date +%s)
"$vpy" -m pip install "$src/python" > "$tmp/log" 2>&1 || fail "pip install $src/python"
echo "pip install ./python: $(($(date +%s) - start)) s"
check || fail "the package installed from the tree"

# The sdist, made by the build backend itself (pip makes none), then installed alone.
"$vpy" -m pip install "$tmp"/probe/*.whl > "$tmp/log" 2>&1 || fail "installing scikit-build-core"
(cd "$src/python" && "$vpy" -c 'import sys; from scikit_build_core.build import build_sdist
print(build_sdist(sys.argv[1]))' "$tmp/sdist") > "$tmp/log" 2>&1 || fail "building the sdist"
sdist=$(ls "$tmp"/sdist/weft-*.tar.gz 2>/dev/null)
[ -n "$sdist" ] || fail "no sdist made"
start=$(date +%s)
# No wheel cache: each run builds the sdist, and leaves nothing in pip's cache.
"$vpy" -m pip install --no-cache-dir --force-reinstall --no-deps "$sdist" > "$tmp/log" 2>&1 ||
  fail "pip install $(basename "$sdist")"
echo "pip install of the sdist: $(($(date +%s) - start)) s"
check || fail "the package installed from its sdist"

untracked > "$tmp/after"
new=$(grep -vxF -f "$tmp/before" "$tmp/after")
rm -f "$tmp/log"
[ -z "$new" ] || fail "the build left $(echo "$new" | wc -l) files in the tree, such as
$(echo "$new" | head -5)"
echo "ok: pip install ./python and its sdist bundle libweft $version"
