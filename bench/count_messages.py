#!/usr/bin/env python3
"""Runs N `gossip-rdzv join` agents on 127.0.0.1 with logging on and counts, from their logs,
what each agent sent by message type, how often members were suspected, buried and
committed, and what each agent's transport did with connections until its commit: the counts
behind docs/performance.md ("Messages per agent", "An overloaded host", "Connections opened
per agent"). The counts end at each agent's files: the child that serves its stay after
`join` returned writes its log to /dev/null.

Usage (from the repository root, after building):
  python3 bench/count_messages.py 128                        # trace: messages by type
  python3 bench/count_messages.py 256 --log debug --profile local --join-timeout 40s
The logs stay in --logs DIR (default a temporary directory, printed); a message line needs
GOSSIP_RDZV_LOG=trace (the default here), the suspicion and death lines debug or trace.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from testlib import built_tool, free_ports  # noqa: E402

SENT = re.compile(r"-> (\w+) to .*\((\d+) bytes\)")
TRANSPORT = re.compile(
    r"transport at the commit: (\d+) connections opened, (\d+) closed to make room "
    r"\((\d+) of them with (\d+) messages waiting.*?; (\d+) inbound connections taken, "
    r"(\d+) closed to make room; (\d+) sends dropped")
TRANSPORT_FIELDS = ("connections opened", "closed to make room", "closed with messages waiting",
                    "messages lost so", "inbound taken", "inbound closed to make room",
                    "sends dropped")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nodes", type=int, help="agents to start (--nnodes)")
    parser.add_argument("--log", default="trace", choices=["trace", "debug"],
                        help="GOSSIP_RDZV_LOG of every agent (trace)")
    parser.add_argument("--profile", help="gossip-rdzv's --profile (default: LAN)")
    parser.add_argument("--join-timeout", default="60s", help="every agent's --join-timeout")
    parser.add_argument("--logs", help="directory for the agents' logs (default: a new one)")
    parser.add_argument("--binary", default=built_tool("gossip-rdzv", "GOSSIP_RDZV_BIN"),
                        help="the gossip-rdzv binary (default: the build tree's)")
    args = parser.parse_args()
    if args.nodes < 1:
        parser.error(f"nodes must be at least 1, got {args.nodes}")
    logs = Path(args.logs or tempfile.mkdtemp(prefix="count-messages-"))
    logs.mkdir(parents=True, exist_ok=True)
    ports = free_ports(args.nodes)
    env = dict(os.environ, GOSSIP_RDZV_LOG=args.log)
    start = time.monotonic()
    procs = []
    for i, port in enumerate(ports):
        with open(logs / f"{i}.log", "w") as log:
            procs.append(subprocess.Popen(
                [args.binary, "join", "--seed", f"127.0.0.1:{ports[0]}",
                 "--listen", f"127.0.0.1:{port}", "--nnodes", str(args.nodes),
                 "--run-id", "count", "--join-timeout", args.join_timeout,
                 "--env-file", str(logs / f"{i}.env"),
                 *(["--profile", args.profile] if args.profile else [])],
                stdout=subprocess.DEVNULL, stderr=log, env=env))
    codes = [p.wait() for p in procs]
    last_join = time.monotonic() - start
    # `join` returns with its files; the detached child serves the stay (logging nowhere).
    for _ in range(1200):
        # The agents' own arguments, not this script's (which names the directory too).
        agents = f"--env-file {logs}/"
        if subprocess.run(["pgrep", "-f", agents], capture_output=True).returncode != 0:
            break
        time.sleep(0.1)
    else:
        print(f"count_messages: agents still running after 120 s; counting what {logs} holds",
              file=sys.stderr)
    sent = collections.Counter()
    sent_bytes = collections.Counter()
    lines = collections.Counter()
    transport = []  # per agent that committed: its TRANSPORT_FIELDS
    for i in range(args.nodes):
        for line in (logs / f"{i}.log").read_text(errors="replace").splitlines():
            if m := TRANSPORT.search(line):
                transport.append([int(g) for g in m.groups()])
            if m := SENT.search(line):
                sent[m.group(1)] += 1
                sent_bytes[m.group(1)] += int(m.group(2))
            for what in ("member up", "member suspected", "member dead", "committed round"):
                if what in line:
                    lines[what] += 1
    print(f"logs: {logs}")
    print(f"exit codes: {dict(collections.Counter(codes))}; last join returned after "
          f"{last_join:.1f} s")
    for what in ("member up", "member suspected", "member dead", "committed round"):
        print(f"{what!r} lines, all agents: {lines[what]}")
    if transport:
        print(f"transport until the commit, per agent ({len(transport)} agents logged it; "
              f"needs --log debug or trace): mean / max")
        for k, field in enumerate(TRANSPORT_FIELDS):
            values = [agent[k] for agent in transport]
            print(f"  {field:28} {sum(values) / len(values):8.1f} / {max(values)}")
    for kind, count in sent.most_common():
        print(f"{kind:12} {count / args.nodes:8.1f} sent per agent "
              f"{sent_bytes[kind] / args.nodes / 1024:8.1f} KiB per agent")
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
