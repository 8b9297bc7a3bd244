#!/usr/bin/python3
"""What N agents cost while they wait: N `gossip-rdzv join` processes on 127.0.0.1 with
--nnodes N+1, so the round never forms, and the CPU time (user + system, every thread, from
/proc/PID/task/*/stat) they use together over a measuring window after a warm-up. This is
the state of a job whose nodes started at different times: the first ones wait for the
last, and what they spend meanwhile is taken from the machine's other work.

Usage (from the repository root, after building):
  /usr/bin/python3 bench/bench_waiting.py 32 128            # 10 s warm-up, 10 s window
  /usr/bin/python3 bench/bench_waiting.py 128 --binary OTHER --warmup 5 --window 5
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from testlib import Processes, TempDir, built_tool, free_ports  # noqa: E402


def descendants(pids: list[int]) -> list[int]:
    """`pids` and every process below them (a `join` forks the process that runs the node)."""
    found, todo = [], list(pids)
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += [int(x) for x in
                         Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            pass
    return found


def cpu_seconds(pid: int) -> float:
    """User + system time of every thread of `pid`; 0 once it is gone."""
    ticks = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            fields = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        pass
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(binary: str, nodes: int, warmup: float, window: float, workdir: Path) -> float:
    ports = free_ports(nodes)
    with Processes(workdir) as fleet:
        procs = [fleet.spawn(f"node{i}", [
            binary, "join", "--seed", f"127.0.0.1:{ports[0]}", "--listen", f"127.0.0.1:{port}",
            "--nnodes", str(nodes + 1), "--run-id", "waiting", "--join-timeout", "600s",
            "--env-file", str(workdir / f"node{i}.env"), "--quiet"])
            for i, port in enumerate(ports)]
        time.sleep(warmup)
        failed = [p.name for p in procs if p.poll() is not None]
        if failed:
            raise RuntimeError(f"N={nodes}: {', '.join(failed)} exited during the warm-up")
        pids = descendants([p.popen.pid for p in procs])
        before, t0 = sum(map(cpu_seconds, pids)), time.monotonic()
        time.sleep(window)
        after, t1 = sum(map(cpu_seconds, pids)), time.monotonic()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return (after - before) / (t1 - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", type=int, nargs="*", default=[32, 128])
    parser.add_argument("--binary", default=built_tool("gossip-rdzv", "GOSSIP_RDZV_BIN"))
    parser.add_argument("--warmup", type=float, default=10.0,
                        help="seconds after the launch before measuring (10)")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured (10)")
    args = parser.parse_args()
    print(f"# binary: {args.binary}; warm-up {args.warmup:g} s, window {args.window:g} s")
    print(f"{'N':>5}  {'cores used':>10}  {'ms of CPU per agent per second':>30}")
    for nodes in args.sizes:
        with TempDir("bench-waiting-") as workdir:
            cores = measure(args.binary, nodes, args.warmup, args.window, Path(workdir))
        print(f"{nodes:>5}  {cores:>10.2f}  {1000 * cores / nodes:>30.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
