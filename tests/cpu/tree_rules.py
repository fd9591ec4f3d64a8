#!/usr/bin/env python3
"""The rules of the source tree that a compiler does not check (docs/architecture.md, section 2).

  tree_rules.py layers ROOT   the #include graph keeps the layer stack
  tree_rules.py words ROOT    no file speaks of how the project was developed
  tree_rules.py self-test     both checks find the violations planted in a scratch tree

layers: host code is stacked jit <- runtime <- ops <- tools; a file includes its own layer, the
ones to its left, src/internal.h and the public headers (include/), never a layer to its right.
The tools include the public API, the one internal header written for them (src/tools.h) and
the check macros they share with the tests (tests/support.h). The ops may include the kernels'
headers that compile as host C too (kernels/swizzle.h, ...). The device library (include/weft/)
includes only its own files, the kernels (kernels/) those and their own headers, all by full
name (NVRTC resolves in-memory headers by exact name).

words: the repository describes the product, not its making: no development stage numbers
(a stage and its number, a stage number in a file name), no work periods of the developers, no
tracker numbers, no paths outside the repository. The words themselves are spelled below in
pieces (STOP, SESS, ISSUE, ...), so that this file does not trip the scanners it mirrors.

Exit status 0 when the tree keeps the rules, 1 with one line per violation otherwise.
"""
import os
import re
import subprocess
import sys
import tempfile

# ---- layers ------------------------------------------------------------------------------------

# (path prefix, layer name, rank): a file may include files of its rank or lower.
LAYERS = [
    ("include/", "public", 0),
    ("src/internal.h", "internal", 1),
    ("src/jit/", "jit", 2),
    ("src/runtime/", "runtime", 3),
    ("src/ops/", "ops", 4),
    ("kernels/", "kernels", 4),  # the kernels' headers the ops share as host C
    ("src/tools.h", "tools-header", 4),
    ("tests/support.h", "test-support", 4),
    ("tools/", "tools", 5),
]
DEVICE = ("include/weft/", "kernels/")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(path):
    for prefix, name, rank in LAYERS:
        if path == prefix or path.startswith(prefix):
            return name, rank
    return None, None


def resolve(root, including, target):
    """The repository path an #include names, or None (a system or toolkit header)."""
    here = os.path.dirname(including)
    for base in (here, "src", "include", "tools", "tests", ""):
        cand = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def source_files(root, tops, exts):
    for top in tops:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.relpath(os.path.join(d, f), root)


def check_layers(root):
    bad = []
    for path in source_files(root, ("src", "tools"), (".c", ".h")):
        name, rank = layer_of(path)
        if name is None:
            continue
        text = open(os.path.join(root, path), errors="replace").read()
        for _, target in INCLUDE_RE.findall(text):
            dep = resolve(root, path, target)
            if dep is None:
                continue
            dname, drank = layer_of(dep)
            if dname is None:
                bad.append(f"{path}: includes {dep}, which belongs to no layer")
            elif name == "tools" and dname not in ("public", "tools", "tools-header",
                                                   "test-support"):
                bad.append(f"{path}: a tool includes {dep} ({dname}); tools use include/, "
                           "src/tools.h and tests/support.h only")
            elif drank > rank:
                bad.append(f"{path} ({name}) includes {dep} ({dname}): an upward include")
    for path in source_files(root, DEVICE, (".h", ".cuh", ".cu")):
        text = open(os.path.join(root, path), errors="replace").read()
        for kind, target in INCLUDE_RE.findall(text):
            if path.startswith("include/") and target == "stdint.h":
                continue  # state.h's host-C branch
            allowed = ("weft/",) if path.startswith("include/") else ("weft/", "kernels/")
            if not target.startswith(allowed) or resolve(root, path, target) is None:
                bad.append(f"{path}: device code includes {kind}{target}: the device library "
                           "only its own files, kernels/ those and kernels/ headers, by full name")
    return bad


# ---- words -------------------------------------------------------------------------------------

STOP, SESS, ISSUE = "st" + "op", "ses" + "sion", "is" + "sue"
OUTSIDE = ("se" + "eds/", "DES" + "IGN.md", "../sh" + "ared")
WORDS = [
    # letters bound the words, not underscores: a script named ..._<word>.sh names it too
    (re.compile(r"(?<![a-z])" + STOP + r"[ _-]?\d+", re.I), "a development stage number"),
    (re.compile(r"(?<![a-z])" + SESS + r"s?(?![a-z])", re.I), "a development " + SESS),
    (re.compile(r"(?<![a-z])" + ISSUE + r"s? #?\d+", re.I), "an " + ISSUE + " number"),
    (re.compile("|".join(re.escape(o) for o in OUTSIDE)), "a path outside the repository"),
]


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a clone (an sdist): walk the tree
        return [os.path.relpath(os.path.join(d, f), root)
                for d, dirs, files in os.walk(root) if ".git" not in d for f in files]


def check_words(root):
    bad = []
    for path in tracked_files(root):
        full = os.path.join(root, path)
        for rx, what in WORDS:
            m = rx.search(path)
            if m:
                bad.append(f"{path}: its name holds {what} ({m.group(0)!r})")
        try:
            data = open(full, "rb").read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        for n, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            for rx, what in WORDS:
                m = rx.search(line)
                if m:
                    bad.append(f"{path}:{n}: {what} ({m.group(0)!r})")
    return bad


# ---- self-test ---------------------------------------------------------------------------------

def self_test():
    """Plants one violation of each kind in a scratch tree; every check must name each."""
    files = {
        "include/weft.h": "",
        "include/weft/state.h": "#include <stdint.h>\n",
        "include/weft/sync.cuh": '#include "weft/state.h"\n',
        "include/weft/bad.cuh": "#include <cuda_runtime.h>\n",
        "kernels/k.cu": '#include "weft/sync.cuh"\n',
        "src/internal.h": '#include "weft.h"\n',
        "src/jit/jit.h": '#include "../internal.h"\n',
        "src/jit/bad.c": '#include "../runtime/comm.h"\n',
        "src/runtime/comm.h": '#include "../jit/jit.h"\n',
        "src/runtime/bad.c": '#include "comm.h"\n#include "../ops/ops.h"\n',
        "src/ops/ops.h": '#include "../runtime/comm.h"\n',
        "src/tools.h": '#include "ops/ops.h"\n',
        "tools/good.c": '#include "weft.h"\n#include "tools.h"\n',
        "tools/bad.c": '#include "runtime/comm.h"\n',
        "src/ops/words.c": f"/* measured at {STOP} 12 */\n/* see {OUTSIDE[2]}/x */\n",
        f"docs/x-{STOP}28.md": f"the second {SESS} showed it ({ISSUE} 44)\n",
        f"dev/run_{SESS}.sh": "#!/bin/sh\n",
    }
    expect_layers = ["src/jit/bad.c", "src/runtime/bad.c", "tools/bad.c", "include/weft/bad.cuh"]
    expect_words = ["src/ops/words.c:1", "src/ops/words.c:2", f"docs/x-{STOP}28.md: its name",
                    f"dev/run_{SESS}.sh: its name", f"docs/x-{STOP}28.md:1: a development {SESS}",
                    f"docs/x-{STOP}28.md:1: an {ISSUE}"]
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        layers, words = check_layers(root), check_words(root)
    ok = True
    for what, found, expect, clean in (("layers", layers, expect_layers, "good.c"),
                                       ("words", words, expect_words, "state.h")):
        for e in expect:
            if not any(b.startswith(e) for b in found):
                print(f"self-test: the {what} check missed the planted {e}")
                ok = False
        if len(found) != len(expect) or any(clean in b for b in found):
            print(f"self-test: the {what} check reported {len(found)} violations, "
                  f"{len(expect)} were planted:\n  " + "\n  ".join(found))
            ok = False
    print(f"self-test: {'both checks find' if ok else 'a check misses'} the planted violations "
          f"({len(layers)} include, {len(words)} word)")
    return ok


def main(argv):
    if len(argv) >= 2 and argv[1] == "self-test":
        return 0 if self_test() else 1
    if len(argv) != 3 or argv[1] not in ("layers", "words"):
        print(__doc__, file=sys.stderr)
        return 2
    bad = (check_layers if argv[1] == "layers" else check_words)(argv[2])
    for b in bad:
        print(b)
    print(f"{argv[1]}: {len(bad)} violation{'s' if len(bad) != 1 else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
