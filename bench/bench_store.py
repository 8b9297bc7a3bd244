#!/usr/bin/python3
"""The store with no master against torch's TCPStore, on loopback, for N worker processes.

For each N and each store it launches N `gossip-rdzv join --profile local --nproc-per-node 1
-- /usr/bin/python3 bench/bench_store_worker.py --store KIND` processes on 127.0.0.1: N agents,
N torch workers, world size N. Every worker runs the same code (bench_store_worker.py); only
the store differs:
  gossip  gossip_rdzv.torch.store_from_env(): each key lives on one of the N agents
  tcp     dist.TCPStore(MASTER_ADDR, MASTER_PORT) hosted by rank 0 (torch's env:// init)
The rendezvous is over before a worker starts; nothing of it is timed. Measured:
  setup   wall time of constructing dist.ProcessGroupGloo over the store (gloo's full-mesh
          setup: every rank publishes its address and reads everyone else's), started by all
          ranks after a store barrier; the slowest rank's time per repeat, median [min-max]
          over the repeats. Each mesh is checked by an allreduce.
  ops     --ops calls per rank of set, then get, then add (each phase after a barrier), each
          call timed: p50 and p99 over all N x OPS calls; ops/s = N x OPS / (last rank's end
          - first rank's start of the phase)
  load    requests each member served as a home during the ops phases, and during the
          setups (member_stats() read by rank 0 before the setups, between, and after the
          ops; barriers included): the busiest member's count, the mean, busiest / mean, and
          the busiest member's share of all requests. TCPStore has one server: rank 0's
          process serves 100% by construction.

Usage (from the repository root, after the README's build):
  /usr/bin/python3 bench/bench_store.py                    # N = 8 16 32, 300 ops, 3 repeats
  /usr/bin/python3 bench/bench_store.py 8 --ops 1000 --repeats 5 --json results.json
docs/performance.md ("Store") records the figures measured with it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import cluster  # noqa: E402  (the process harness of the cluster tests)
from testlib import REPO, TempDir, free_ports  # noqa: E402

TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
WORKER = Path(__file__).resolve().parent / "bench_store_worker.py"
STORES = ("gossip", "tcp")
STORE_NAMES = {"gossip": "gossip-rdzv", "tcp": "TCPStore"}
OPS = ("set", "get", "add")


def run_once(n: int, kind: str, args, workdir: Path) -> list[dict]:
    """Runs N agents and workers with store `kind`; returns the workers' results by rank."""
    out = workdir / f"n{n}-{kind}"
    out.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), PYTHONDONTWRITEBYTECODE="1")
    worker = [TORCH_PYTHON, str(WORKER), "--store", kind, "--out", str(out),
              "--ops", str(args.ops), "--repeats", str(args.repeats)]
    with cluster.Cluster(out / "logs") as nodes:
        ports = free_ports(n)
        seed = f"127.0.0.1:{ports[0]}"
        procs = [nodes.spawn(f"node{i}", [
            nodes.bin, "join", "--seed", seed, "--listen", f"127.0.0.1:{port}",
            "--nnodes", str(n), "--nproc-per-node", "1", "--run-id", f"bench-store-{n}-{kind}",
            "--profile", "local", "--join-timeout", "120s", "--quiet",
            *(["--key-file", args.key_file] if args.key_file else []), "--", *worker], env=env)
            for i, port in enumerate(ports)]
        codes = nodes.wait(procs, args.timeout)
        results = []
        for rank in range(n):
            path = out / f"rank{rank}.json"
            if not path.exists():
                logs = "\n".join(f"--- {p.name} exit {p.returncode}\n{p.stderr[-2000:]}"
                                 for p in procs if p.returncode != 0)
                raise RuntimeError(f"N={n} {kind}: rank {rank} wrote no results "
                                   f"(exit codes {codes})\n{logs}")
            results.append(json.loads(path.read_text()))
    return results


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summarise(n: int, kind: str, results: list[dict]) -> dict:
    repeats = len(results[0]["setup"])
    slowest = [max(r["setup"][i] for r in results) for i in range(repeats)]
    summary = {"n": n, "store": kind, "setup_s": {
        "median": statistics.median(slowest), "min": min(slowest), "max": max(slowest),
        "per_repeat": slowest}, "ops": {}}
    for op in OPS:
        phases = [r["ops"][op] for r in results]
        latencies = [x for p in phases for x in p["latencies"]]
        span = max(p["end"] for p in phases) - min(p["start"] for p in phases)
        summary["ops"][op] = {"p50_ms": 1000 * percentile(latencies, 0.50),
                              "p99_ms": 1000 * percentile(latencies, 0.99),
                              "ops_per_s": len(latencies) / span, "calls": len(latencies)}
    if kind == "gossip":
        stats = results[0]
        summary["load"] = load_between(stats["stats_before"], stats["stats_after"])
        summary["setup_load"] = load_between(stats["stats_start"], stats["stats_before"])
    else:
        # One server process answers every request: its share is 100% by construction.
        summary["load"] = summary["setup_load"] = {
            "members": 1, "busiest_over_mean": float(n), "busiest_share_pct": 100.0}
    return summary


def load_between(before_stats: list[dict], after_stats: list[dict]) -> dict:
    """What each member served as a home between two member_stats() readings."""
    before = {m["member"]: m["home_requests"] for m in before_stats}
    served = {m["member"]: m["home_requests"] - before.get(m["member"], 0) for m in after_stats}
    total = sum(served.values())
    busiest = max(served.values())
    mean = total / len(served)
    return {"members": len(served), "requests": total, "busiest": busiest, "mean": mean,
            "busiest_over_mean": busiest / mean, "busiest_share_pct": 100.0 * busiest / total,
            "per_member": served}


def print_tables(summaries: list[dict], args) -> None:
    print(f"\nsetup: dist.ProcessGroupGloo construction (gloo full mesh), slowest of the ranks, "
          f"median [min-max] of {args.repeats} repeat(s), seconds")
    print(f"{'N':>4}  {'store':<12} {'setup s':>24}")
    for s in summaries:
        t = s["setup_s"]
        print(f"{s['n']:>4}  {STORE_NAMES[s['store']]:<12} "
              f"{t['median']:>8.3f} [{t['min']:.3f}-{t['max']:.3f}]")
    print(f"\nops: {args.ops} calls per rank and op; latency over all calls; ops/s over all ranks")
    print(f"{'N':>4}  {'store':<12} {'op':<4} {'p50 ms':>8} {'p99 ms':>8} {'ops/s':>9}")
    for s in summaries:
        for op in OPS:
            o = s["ops"][op]
            print(f"{s['n']:>4}  {STORE_NAMES[s['store']]:<12} {op:<4} {o['p50_ms']:>8.3f} "
                  f"{o['p99_ms']:>8.3f} {o['ops_per_s']:>9.0f}")
    print("\nload: requests served per member, during the ops phases and during the setups")
    print(f"{'N':>4}  {'store':<12} {'phase':<6} {'servers':>7} {'requests':>9} {'busiest':>8} "
          f"{'mean':>8} {'max/mean':>8} {'busiest share':>13}")
    for s in summaries:
        for phase, key in (("ops", "load"), ("setup", "setup_load")):
            load = s[key]
            where = f"{s['n']:>4}  {STORE_NAMES[s['store']]:<12} {phase:<6}"
            if s["store"] == "gossip":
                print(f"{where} {load['members']:>7} {load['requests']:>9} {load['busiest']:>8} "
                      f"{load['mean']:>8.1f} {load['busiest_over_mean']:>8.2f} "
                      f"{load['busiest_share_pct']:>12.1f}%")
            else:
                print(f"{where} {1:>7} {'all':>9} {'all':>8} {'-':>8} {'-':>8} "
                      f"{100.0:>12.1f}%")


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[8, 16, 32],
                        help="numbers of worker processes (each with its own agent)")
    parser.add_argument("--ops", type=int, default=300, help="calls per rank and operation")
    parser.add_argument("--repeats", type=int, default=3, help="gloo mesh setups per run")
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", help="also write every figure to this file")
    parser.add_argument("--key-file", help="give every agent (and so every worker's store "
                        "client) this job key file")
    parser.add_argument("--keep", action="store_true", help="keep the logs and results")
    args = parser.parse_args()
    if any(n < 2 for n in args.sizes) or args.ops < 1 or args.repeats < 1:
        parser.error("sizes must be >= 2, --ops and --repeats >= 1")
    if not Path(TORCH_PYTHON).exists():
        parser.error(f"{TORCH_PYTHON} (with torch) is needed for the workers")

    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"bench_store: {started:%Y-%m-%d %H:%M} UTC, commit {git_commit()}, "
          f"{platform.node()}, {os.cpu_count()} CPUs, sizes {args.sizes}, ops {args.ops}, "
          f"repeats {args.repeats}", flush=True)
    summaries = []
    with TempDir("bench-store-", keep=args.keep) as workdir:
        for n in args.sizes:
            for kind in args.stores:
                t0 = time.monotonic()
                try:
                    results = run_once(n, kind, args, workdir)
                except (RuntimeError, TimeoutError) as error:
                    print(f"bench_store: N={n} {STORE_NAMES[kind]} failed: {error}",
                          file=sys.stderr)
                    return 1
                summaries.append(summarise(n, kind, results))
                print(f"  N={n} {STORE_NAMES[kind]}: done in {time.monotonic() - t0:.0f} s",
                      flush=True)
        if args.keep:
            print(f"logs and results kept in {workdir}")
    print_tables(summaries, args)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"date": f"{started:%Y-%m-%dT%H:%M:%SZ}", "commit": git_commit(),
             "ops": args.ops, "repeats": args.repeats, "results": summaries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
