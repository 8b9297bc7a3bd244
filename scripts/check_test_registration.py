#!/usr/bin/env python3
"""Every Python test class under tests/ runs in ctest: a class that defines test_ methods must
be named in a gr_add_unittests() call (as module.Class, or its module as a whole) in some
tests/**/CMakeLists.txt. A class added to a file but not registered there would never run in
CI, silently. Standard library only.

Run: python3 scripts/check_test_registration.py [--root DIR]
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path


def test_classes(path: Path):
    """Names of the classes in `path` that define at least one test_ method themselves."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
                isinstance(item, ast.FunctionDef) and item.name.startswith("test_")
                for item in node.body):
            yield node.name


def registered_names(tests: Path) -> set:
    """Every word of the form module or module.Class in the tests' CMakeLists.txt files."""
    names = set()
    for cmake in tests.rglob("CMakeLists.txt"):
        names.update(re.findall(r"\btest_\w+(?:\.\w+)?", cmake.read_text()))
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    tests = parser.parse_args().root / "tests"
    registered = registered_names(tests)
    missing = []
    for path in sorted(tests.rglob("test_*.py")):
        module = path.stem
        for name in test_classes(path):
            if module not in registered and f"{module}.{name}" not in registered:
                missing.append(f"{path.relative_to(tests.parent)}: {module}.{name}")
    for line in missing:
        print(f"not registered in ctest (add it to gr_add_unittests in its CMakeLists.txt): "
              f"{line}", file=sys.stderr)
    if not missing:
        print("test registration: every Python test class under tests/ runs in ctest")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
