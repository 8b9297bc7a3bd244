#!/usr/bin/env python3
"""The layer check: every `#include "..."` in src/, tools/, include/, examples/ and python/
must follow an arrow that docs/architecture.md allows ("Allowed includes").

The table below (LAYERS, ALLOWED) is the table of docs/architecture.md; the check compares
the two and fails when they disagree, so change both together.

  python3 scripts/check_layers.py              # check this checkout; exit 1 on a violation
  python3 scripts/check_layers.py --root DIR   # check another tree (DIR/src, DIR/tools, ...)
  python3 scripts/check_layers.py --self-test  # prove the check fails on a forbidden arrow

Standard library only. CTest runs both forms (tests/CMakeLists.txt, label unit).
"""

import argparse
import os
import re
import sys
import tempfile

# Which layer a file belongs to: the first rule whose path prefix matches the file's path
# (relative to the root, '/'-separated) wins. A public header belongs to the layer that
# implements it; the rest of include/gossip_rdzv/ are the public types every layer may use.
LAYERS = [
    ("include/gossip_rdzv/node.hpp", "runtime"),
    ("include/gossip_rdzv/store.hpp", "store_client"),
    ("include/gossip_rdzv/gossip_rdzv.h", "capi"),
    ("include/gossip_rdzv/env.hpp", "output"),
    ("include/gossip_rdzv/", "api"),
    ("src/wire/", "wire"),
    ("src/protocol/", "protocol"),
    ("src/store/store_client.", "store_client"),
    ("src/store/gloo_store.", "store_client"),
    ("src/store/", "store_core"),
    ("src/transport/", "transport"),
    ("src/output/", "output"),
    ("src/runtime/", "runtime"),
    ("src/capi/", "capi"),
    ("src/sim/", "sim"),
    ("tools/gossip-rdzv-sim/", "sim_tool"),
    ("tools/gossip-rdzv/", "cli"),
    ("examples/", "examples"),
    ("python/", "python"),
]

# layer -> the other layers it may include (a layer may always include itself). Arrows point
# down only: nothing here may include a layer that includes it.
ALLOWED = {
    "api": set(),
    "wire": {"api"},
    "protocol": {"api", "wire"},
    "transport": {"api", "wire"},
    "output": {"api", "wire"},
    "store_core": {"api", "wire", "protocol"},
    "store_client": {"api", "wire", "protocol", "transport", "store_core"},
    "runtime": {"api", "wire", "protocol", "transport", "output", "store_core", "store_client"},
    "capi": {"api", "wire", "protocol", "transport", "output", "store_core", "store_client",
             "runtime"},
    "sim": {"api", "wire", "protocol"},
    "cli": {"api", "wire", "protocol", "transport", "output", "store_client", "runtime"},
    "sim_tool": {"api", "wire", "protocol", "sim"},
    "examples": {"api", "output", "store_client", "runtime", "capi"},
    "python": {"api", "capi"},
}

SCANNED = ["src", "tools", "include", "examples", "python"]
# Where a quoted include is looked up after the including file's own directory, as the
# targets' include paths do.
INCLUDE_DIRS = ["include", "src"]
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DOC = "docs/architecture.md"


def layer_of(path):
    for prefix, layer in LAYERS:
        if path.startswith(prefix):
            return layer
    return None


def source_files(root):
    for top in SCANNED:
        for directory, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith((".", "build")))
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")


def resolve(root, including, target):
    """The included file's path relative to root, or None when it is not in the tree."""
    candidates = [os.path.join(os.path.dirname(including), target)]
    candidates += [os.path.join(d, target) for d in INCLUDE_DIRS]
    for candidate in candidates:
        if os.path.isfile(os.path.join(root, candidate)):
            return os.path.normpath(candidate).replace(os.sep, "/")
    return None


def violations(root):
    """Every include that breaks the table, as 'file:line: message' lines."""
    found = []
    for path in source_files(root):
        source_layer = layer_of(path)
        if source_layer is None:
            found.append(f"{path}:1: belongs to no layer: add its directory to LAYERS in "
                         f"scripts/check_layers.py and to {DOC}")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                match = INCLUDE_RE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1))
                if target is None:
                    continue  # not a file of this tree (a third-party header in quotes)
                target_layer = layer_of(target)
                if target_layer is None or target_layer == source_layer:
                    continue
                if target_layer not in ALLOWED[source_layer]:
                    allowed = ", ".join(sorted(ALLOWED[source_layer])) or "nothing else"
                    found.append(
                        f"{path}:{number}: {source_layer} -> {target_layer} "
                        f'(#include "{match.group(1)}") is not allowed: {source_layer} may '
                        f"include {allowed} ({DOC}, \"Allowed includes\")")
    return found


def documented_table(root):
    """The 'Allowed includes' table of docs/architecture.md as {layer: set of layers}."""
    table = {}
    with open(os.path.join(root, DOC), encoding="utf-8") as text:
        in_section = False
        for line in text:
            if line.startswith("## "):
                in_section = line.strip() == "## Allowed includes"
                continue
            cells = [c.strip() for c in line.strip().split("|")[1:-1]]
            if not in_section or len(cells) != 2 or not re.fullmatch(r"`\w+`", cells[0]):
                continue
            table[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[1]))
    return table


def table_mismatches(root):
    if not os.path.isfile(os.path.join(root, DOC)):
        return [f"{DOC} is missing: it holds the table this check enforces"]
    documented = documented_table(root)
    problems = []
    for layer in sorted(set(documented) | set(ALLOWED)):
        if documented.get(layer) != ALLOWED.get(layer):
            problems.append(
                f"{DOC} and scripts/check_layers.py disagree on what `{layer}` may include: "
                f"doc {sorted(documented.get(layer, ['(no row)']))}, "
                f"script {sorted(ALLOWED.get(layer, ['(no entry)']))}")
    return problems


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w", encoding="utf-8") as out:
        out.write(text)


def self_test():
    """The check finds a forbidden arrow (and only it) in a small fake tree."""
    with tempfile.TemporaryDirectory() as root:
        write(root, "src/transport/socket.hpp", "#pragma once\n")
        write(root, "src/protocol/core.hpp", '#pragma once\n#include "gossip_rdzv/error.hpp"\n')
        write(root, "include/gossip_rdzv/error.hpp", "#pragma once\n")
        write(root, "include/gossip_rdzv/node.hpp", "#pragma once\n")
        write(root, "src/runtime/loop.cpp",
              '#include "protocol/core.hpp"\n#include "transport/socket.hpp"\n')
        clean = violations(root)
        if clean:
            print("self-test FAILED: allowed arrows reported:\n" + "\n".join(clean))
            return 1
        # protocol -> transport (sideways) and store client -> the runtime's public header.
        write(root, "src/protocol/core.cpp",
              '#include "core.hpp"\n\n#include "transport/socket.hpp"\n')
        write(root, "src/store/store_client.cpp", '#include "gossip_rdzv/node.hpp"\n')
        write(root, "src/elsewhere/stray.cpp", "\n")
        found = violations(root)
        expected = [("src/elsewhere/stray.cpp:1:", "belongs to no layer"),
                    ("src/protocol/core.cpp:3:", "protocol -> transport"),
                    ("src/store/store_client.cpp:1:", "store_client -> runtime")]
        ok = len(found) == len(expected) and all(
            f.startswith(where) and what in f for f, (where, what) in zip(found, expected))
        if not ok:
            print("self-test FAILED: expected violations " + repr(expected) + ", got:\n" +
                  "\n".join(found))
            return 1
        # The doc's table as the script's, but for one arrow more: only that row differs.
        rows = ""
        for layer, may in ALLOWED.items():
            may = may | {"transport"} if layer == "protocol" else may
            rows += f"| `{layer}` | {', '.join(f'`{m}`' for m in sorted(may))} |\n"
        write(root, DOC, "## Layers\n\n| layer | where |\n|---|---|\n| `api` | include |\n\n"
                         "## Allowed includes\n\n| layer | may include |\n|---|---|\n" + rows)
        mismatches = table_mismatches(root)
        if len(mismatches) != 1 or "`protocol`" not in mismatches[0]:
            print("self-test FAILED: expected the doc's `protocol` row alone to differ, got:\n" +
                  "\n".join(mismatches))
            return 1
    print("self-test passed: forbidden arrows, a file of no layer and a table that differs "
          "from the doc are reported")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the source tree to check (default: this checkout)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that a forbidden arrow in a fake tree is reported")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    problems = table_mismatches(root) + violations(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"layer check: {len(problems)} problem(s); the layers and their allowed "
              f"includes are in {DOC}")
        return 1
    print(f"layer check: every include in {', '.join(SCANNED)} follows {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
