#!/usr/bin/env python3
"""Simulator figures for docs/performance.md and docs/simulation.md: a table, a CSV and a PNG.

Runs `gossip-rdzv-sim --scenario bench` for every (N, loss, seed), one child process per run
(so peak RSS is per run), parses its result line, and writes

  OUT/sim_figures.csv   one row per run
  OUT/sim_figures.png   agreement in gossip periods vs N (with the epidemic bound log2 N and
                        the target log2 N + 10), messages of the busiest node vs N (with a
                        single master), bytes of the busiest node vs N (with a single master)

and prints a Markdown table (means over seeds, max in brackets) to paste into the docs.

    /usr/bin/python3 bench/sim_figures.py                                   # N = 10 100 1000
    /usr/bin/python3 bench/sim_figures.py --nodes 10 100 --loss 0 0.1 --seeds 3
    /usr/bin/python3 bench/sim_figures.py --csv-in docs/figures/sim_figures.csv   # re-plot only

The single master is a model, not a measurement: the lower bound for any design where one
process (a TCPStore, an etcd leader) hands every node the membership. Each node sends it one
request and gets one reply that lists all N members, so the master handles 2 N messages and
sends N * N * ENTRY bytes; the other nodes handle 2 messages each. ENTRY (--entry-bytes) is the
size of one member in a reply; torch's c10d rendezvous state is larger per member and costs
several round trips per node, so the real master does more than this.

The PNG needs matplotlib (Debian: apt-get install -y python3-matplotlib); without it the
table and the CSV are still written.
"""

import argparse
import csv
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

RESULT = re.compile(
    r"^(?P<status>ok|FAIL)\s+seed (?P<seed>\d+) \S+\s+nodes (?P<nodes>\d+):"
    r".*?agreement (?P<agreement>[\d.]+) s \((?P<periods>[\d.]+) gossip periods\)"
    r".*?msgs/node mean (?P<msgs_mean>\d+) max (?P<msgs_max>\d+)"
    r".*?bytes/node mean (?P<bytes_mean>\d+) max (?P<bytes_max>\d+)"
    r".*?seed B/join (?P<seed_bytes_per_join>\d+)"
    r".*?wall (?P<wall>[\d.]+) s"
    r".*?peak RSS (?P<rss_mib>\d+) MiB",
    re.MULTILINE,
)
FIELDS = [
    "nodes", "loss", "seed", "status", "agreement", "periods", "msgs_mean", "msgs_max",
    "bytes_mean", "bytes_max", "seed_bytes_per_join", "wall", "rss_mib",
]


def default_binary():
    for build in ("build", "build-lead"):
        path = REPO / build / "tools" / "gossip-rdzv-sim" / "gossip-rdzv-sim"
        if path.exists():
            return str(path)
    return str(REPO / "build" / "tools" / "gossip-rdzv-sim" / "gossip-rdzv-sim")


def run_one(binary, nodes, loss, seed, timeout, codec):
    cmd = ["nice", binary, "--scenario", "bench", "--nodes", str(nodes), "--seed", str(seed),
           "--loss", str(loss), "--codec", codec, "--no-fork"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  N={nodes} loss={loss} seed={seed}: over the {timeout} s limit, skipped",
              file=sys.stderr)
        return None
    match = RESULT.search(proc.stdout)
    if not match:
        raise SystemExit(f"sim_figures: cannot parse the output of {' '.join(cmd)} "
                         f"(exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    row = {key: match.group(key) for key in FIELDS if key not in ("loss",)}
    row["loss"] = loss
    return row


def typed(row):
    out = dict(row)
    for key in ("nodes", "seed", "msgs_mean", "msgs_max", "bytes_mean", "bytes_max",
                "seed_bytes_per_join", "rss_mib"):
        out[key] = int(out[key])
    for key in ("loss", "agreement", "periods", "wall"):
        out[key] = float(out[key])
    return out


def groups(rows):
    by = {}
    for row in rows:
        by.setdefault((row["nodes"], row["loss"]), []).append(row)
    return dict(sorted(by.items()))


def kib(value):
    return f"{value / 1024:.0f} KiB" if value < 10 * 1024 * 1024 else f"{value / 2**20:.1f} MiB"


def table(rows):
    lines = [
        "| N | loss | runs ok | agreement, s: mean (max) | gossip periods: mean (max) | ⌈log2 N⌉+10 "
        "| msgs/node mean / max (max÷mean) | bytes/node mean / max | seed B/join | wall per run "
        "| peak RSS |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (nodes, loss), runs in groups(rows).items():
        ok = [r for r in runs if r["status"] == "ok"]
        use = ok or runs
        mean = lambda k: statistics.mean(r[k] for r in use)  # noqa: E731
        top = lambda k: max(r[k] for r in use)  # noqa: E731
        target = math.ceil(math.log2(nodes)) + 10
        lines.append(
            f"| {nodes} | {loss:.0%} | {len(ok)}/{len(runs)} | {mean('agreement'):.2f} "
            f"({top('agreement'):.2f}) | {mean('periods'):.1f} ({top('periods'):.1f}) | {target} "
            f"| {mean('msgs_mean'):.0f} / {mean('msgs_max'):.0f} "
            f"({mean('msgs_max') / max(mean('msgs_mean'), 1):.1f}) "
            f"| {kib(mean('bytes_mean'))} / {kib(mean('bytes_max'))} "
            f"| {mean('seed_bytes_per_join'):.0f} | {mean('wall'):.2f} s | {top('rss_mib')} MiB |")
    return "\n".join(lines)


def series(grouped, loss, key):
    """(N, mean of `key` over the seeds) for one loss rate, in N order."""
    return [(n, statistics.mean(r[key] for r in runs))
            for (n, l), runs in grouped.items() if l == loss]


def plot(rows, path, entry_bytes):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("sim_figures: matplotlib is missing (apt-get install -y python3-matplotlib); "
              "no PNG written", file=sys.stderr)
        return False
    grouped = groups(rows)
    losses = sorted({loss for (_, loss) in grouped})
    all_n = sorted({n for (n, _) in grouped})
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))

    ax = axes[0]
    for loss in losses:
        ax.plot(*zip(*series(grouped, loss, "periods")), marker="o", label=f"gossip-rdzv, {loss:.0%} loss")
    ax.plot(all_n, [math.log2(n) for n in all_n], "k:", label="epidemic bound log2 N")
    ax.plot(all_n, [math.ceil(math.log2(n)) + 10 for n in all_n], "r--",
            label="target ⌈log2 N⌉ + 10")
    ax.set(xscale="log", xlabel="nodes N", ylabel="gossip periods to agreement",
           title="Time to agreement")
    ax.legend(fontsize=8)

    ax = axes[1]
    for loss in losses:
        ax.plot(*zip(*series(grouped, loss, "msgs_max")), marker="o", label=f"busiest node, {loss:.0%} loss")
    ax.plot(*zip(*series(grouped, losses[0], "msgs_mean")), marker="x", linestyle="-.", label=f"mean node, {losses[0]:.0%} loss")
    ax.plot(all_n, [2 * n for n in all_n], "k--", label="single master (2 N, lower bound)")
    ax.set(xscale="log", yscale="log", xlabel="nodes N", ylabel="messages sent + received",
           title="Messages per node")
    ax.legend(fontsize=8)

    ax = axes[2]
    for loss in losses:
        ax.plot(*zip(*series(grouped, loss, "bytes_max")), marker="o", label=f"busiest node, {loss:.0%} loss")
    ax.plot(all_n, [n * n * entry_bytes for n in all_n], "k--",
            label=f"single master (N² × {entry_bytes} B, lower bound)")
    ax.set(xscale="log", yscale="log", xlabel="nodes N", ylabel="bytes sent + received",
           title="Bytes per node")
    ax.legend(fontsize=8)

    fig.suptitle("gossip-rdzv simulator, scenario bench (LAN timing, gossip period 200 ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--loss", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..S per (N, loss)")
    parser.add_argument("--binary", default=default_binary(), help="gossip-rdzv-sim to run")
    parser.add_argument("--codec", default="size", choices=["full", "size", "off"],
                        help="size (default) counts bytes without decoding")
    parser.add_argument("--timeout", type=float, default=3600, help="limit per run, seconds")
    parser.add_argument("--out", default=str(REPO / "docs" / "figures"),
                        help="directory for sim_figures.csv and sim_figures.png")
    parser.add_argument("--csv-in", help="plot and tabulate this CSV instead of running")
    parser.add_argument("--entry-bytes", type=int, default=40,
                        help="bytes per member in the single master's reply (model)")
    parser.add_argument("--no-plot", action="store_true", help="write no PNG")
    args = parser.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.csv_in:
        with open(args.csv_in, newline="") as f:
            rows = [typed(r) for r in csv.DictReader(f)]
    else:
        if not os.access(args.binary, os.X_OK):
            raise SystemExit(f"sim_figures: {args.binary} not found; build first "
                             "(bash scripts/test.sh) or pass --binary")
        rows = []
        for nodes in args.nodes:
            for loss in args.loss:
                for seed in range(1, args.seeds + 1):
                    row = run_one(args.binary, nodes, loss, seed, args.timeout, args.codec)
                    if row is None:
                        continue
                    rows.append(typed(row))
                    print(f"  N={nodes} loss={loss:.0%} seed={seed}: {row['status']}, "
                          f"{float(row['periods']):.1f} periods, wall {row['wall']} s",
                          file=sys.stderr, flush=True)
        with open(out / "sim_figures.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    if not rows:
        raise SystemExit("sim_figures: no run finished")
    print(table(rows))
    if not args.no_plot and plot(rows, out / "sim_figures.png", args.entry_bytes):
        print(f"\nwrote {out / 'sim_figures.png'}", file=sys.stderr)


if __name__ == "__main__":
    main()
