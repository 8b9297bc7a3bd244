"""libgossip_rdzv.so exports its public API and nothing else (docs/abi.md).

    python3 check_exports.py LIBRARY HEADER_DIR SOVERSION

Checks, with binutils' nm, c++filt and objdump:
  - the SONAME is libgossip_rdzv.so.SOVERSION;
  - no exported symbol belongs to fmt, spdlog, ZeroMQ, msgpack or the standard library;
  - every exported symbol is a C function gossip_rdzv_*, or a name of namespace gossip_rdzv
    whose first part (gossip_rdzv::Node, gossip_rdzv::torch_env) a public header declares;
  - every function gossip_rdzv.h declares is exported, with the version node
    GOSSIP_RDZV_<SOVERSION>.
Exits 1 with one line per problem.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FOREIGN = ("fmt::", "spdlog::", "zmq::", "msgpack::", "std::", "__gnu_cxx::", "boost::")
PREFIXES = ("typeinfo name for ", "typeinfo for ", "vtable for ")


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def exported(library: str) -> list[tuple[str, str]]:
    """(mangled name with its @version, demangled name) of every defined dynamic symbol."""
    mangled = [line.split()[-1] for line in run("nm", "-D", "--defined-only", library).splitlines()
               if line.strip()]
    demangled = run("c++filt", *[name.split("@")[0] for name in mangled]).splitlines()
    return list(zip(mangled, demangled))


def public_names(header_dir: Path) -> set[str]:
    """Classes, structs, enums, aliases and functions the public C++ headers declare."""
    names: set[str] = set()
    for header in header_dir.glob("*.hpp"):
        text = header.read_text()
        names.update(re.findall(r"\b(?:class|struct|enum class|using)\s+(?:GOSSIP_RDZV_API\s+)?(\w+)", text))
        names.update(re.findall(r"^GOSSIP_RDZV_API\s+[\w:<>, ]+?[\s*&](\w+)\(", text, re.M))
    return names


def c_functions(header: Path) -> set[str]:
    return set(re.findall(r"^GOSSIP_RDZV_API\s+[^(]*?\b(gossip_rdzv_\w+)\(", header.read_text(), re.M))


def check(library: str, header_dir: Path, soversion: str) -> list[str]:
    problems = []
    dynamic = run("objdump", "-p", library)
    soname = re.search(r"^\s*SONAME\s+(\S+)", dynamic, re.M)
    if not soname or soname.group(1) != f"libgossip_rdzv.so.{soversion}":
        problems.append(f"SONAME is {soname.group(1) if soname else 'missing'}, "
                        f"expected libgossip_rdzv.so.{soversion}")
    node = f"GOSSIP_RDZV_{soversion}"
    allowed = public_names(header_dir)
    symbols = exported(library)
    for raw, name in symbols:
        if raw == node:
            continue
        bare = name
        for prefix in PREFIXES:
            bare = bare.removeprefix(prefix)
        # A template of another library can be demangled with its return type first
        # ("bool fmt::v9::detail::..."): look for the namespace anywhere before the arguments.
        head = bare.split("(")[0]
        if not bare.startswith("gossip_rdzv") and any(f in head for f in FOREIGN):
            problems.append(f"exports a foreign symbol: {name}")
        elif re.fullmatch(r"gossip_rdzv_\w+", bare):
            pass
        elif bare.startswith("gossip_rdzv::"):
            first = re.match(r"gossip_rdzv::(\w+)", bare).group(1)
            if first not in allowed:
                problems.append(f"exports an internal name (no public header declares "
                                f"gossip_rdzv::{first}): {name}")
        else:
            problems.append(f"exports a symbol outside the API: {name}")
        if not raw.endswith(f"@@{node}"):
            problems.append(f"{name} is not in the version node {node}: {raw}")
    present = {raw.split("@")[0] for raw, _ in symbols}
    for function in sorted(c_functions(header_dir / "gossip_rdzv.h") - present):
        problems.append(f"gossip_rdzv.h declares {function} but the library does not export it")
    if not c_functions(header_dir / "gossip_rdzv.h"):
        problems.append("found no GOSSIP_RDZV_API function in gossip_rdzv.h")
    return problems


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    library, header_dir, soversion = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    problems = check(library, header_dir, soversion)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{library}: {len(exported(library))} exported symbols, all of the public API")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
