#!/usr/bin/python3
"""Simulator figures: the `bench` scenario for several N and loss rates, as CSV, a Markdown
table and a PNG plot comparing gossip-rdzv with the epidemic bound and a single master.

Each (N, loss, seed) is one `gossip-rdzv-sim --scenario bench --seed-nodes K --codec C
--no-fork` process (so its peak RSS is its own), run under `nice` and a timeout, one at a time.
In the bench scenario the first K nodes are seeds that every node lists, up first, so joins
spread over K seeds (K = 1 by default; --seed-nodes K for every N, or --seed-nodes-per P for
K = ceil(N / P) per N). --codec size (default) encodes every packet to count its bytes; --codec
off skips encoding (faster), so bytes are not measured: they are left empty in the CSV and shown
as "n/a" in the table (the tool prints them as 0). "seed B/join" is the mean size of the join
replies of the first seed only.

The plot shows
  left:  gossip periods to agreement (mean over seeds, bar to the max) per loss rate (two lines,
         one seed node and several, when the rows hold both for some N), next to log2 N (the
         epidemic bound's shape) and the target ceil(log2 N) + 10;
  right: messages and bytes per node (mean and max over members) at the lowest loss rate next
         to what one master that every node talks to would handle (a TCPStore: N times a
         node's traffic); no bytes lines when they were not measured.

Usage (from the repository root, after building gossip-rdzv-sim):
  /usr/bin/python3 bench/sim_figures.py                        # N = 10 100 1000, 0/10/30 %
  /usr/bin/python3 bench/sim_figures.py --nodes 10 100 --loss 0 0.1 --seeds 3 --out /tmp/f
  /usr/bin/python3 bench/sim_figures.py --nodes 1000 2000 --loss 0 --seed-nodes-per 250 \
      --codec off --out /tmp/k                                 # K = 4, 8 seed nodes; no bytes
  /usr/bin/python3 bench/sim_figures.py --from-csv A.csv B.csv --out bench/results/all  # replot
  ... --from-csv A.csv --from-log 0.1:off:1:run10k.txt --out OUT  # add a run saved by hand
Writes OUT.csv, OUT.md and OUT.png (OUT defaults to bench/results/sim_figures). With one
--from-csv file, the table and plot are written next to it (A.md, A.png) and --out is unused.
CSVs written before the seed_nodes column existed are read as K = 1. The plot needs matplotlib
(Debian: apt-get install python3-matplotlib); without it only the CSV and the table are
written. Results of runs that time out are recorded with status "timeout".
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from testlib import built_tool  # noqa: E402

# $GOSSIP_RDZV_SIM, else the first build tree's gossip-rdzv-sim.
SIM = (built_tool("gossip-rdzv-sim", "GOSSIP_RDZV_SIM")
       or "build/tools/gossip-rdzv-sim/gossip-rdzv-sim")
GOSSIP_INTERVAL_S = 0.2  # LAN timing of the bench scenario

LINE = re.compile(
    r"^(?P<status>ok|FAIL)\s+seed (?P<seed>\d+) bench\s+nodes (?P<nodes>\d+): "
    r"agreement (?P<agreement>[-\d.]+) s \((?P<periods>[\d.]+) gossip periods\), "
    r"committed (?P<committed>\d+), not admitted \d+, "
    r"msgs/node mean (?P<msgs_mean>\d+) max (?P<msgs_max>\d+) "
    r"\(after join mean (?P<after_mean>\d+) max (?P<after_max>\d+)\), "
    r"bytes/node mean (?P<bytes_mean>\d+) max (?P<bytes_max>\d+), "
    r"seed B/join (?P<seed_b_join>\d+), wall (?P<wall>[\d.]+) s, cpu (?P<cpu>[\d.]+) s, "
    r"peak RSS (?P<rss>\d+) MiB"
)
FIELDS = ["nodes", "seed_nodes", "loss", "seed", "status", "agreement_s", "gossip_periods",
          "committed", "msgs_mean", "msgs_max", "msgs_after_join_mean", "msgs_after_join_max",
          "bytes_mean", "bytes_max", "seed_bytes_per_join", "wall_s", "cpu_s", "peak_rss_mib"]


BYTE_FIELDS = ("bytes_mean", "bytes_max", "seed_bytes_per_join")


def run_one(sim: str, nodes: int, seed_nodes: int, loss: float, seed: int, codec: str,
            timeout: float) -> dict:
    cmd = ["nice", sim, "--scenario", "bench", "--nodes", str(nodes), "--seed", str(seed),
           "--seed-nodes", str(seed_nodes), "--loss", str(loss), "--codec", codec, "--no-fork"]
    row = {"nodes": nodes, "seed_nodes": seed_nodes, "loss": loss, "seed": seed}
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        row["status"] = "timeout"
        return row
    if not parse_summary(out, row, codec):
        sys.stderr.write(f"could not parse the output of {' '.join(cmd)}:\n{out}\n")
    return row


def parse_summary(out: str, row: dict, codec: str) -> bool:
    """Fills `row` from the tool's summary line in `out`; status "unparsed" if none."""
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            row.update(status="ok" if m["status"] == "ok" else "fail",
                       agreement_s=m["agreement"], gossip_periods=m["periods"],
                       committed=m["committed"], msgs_mean=m["msgs_mean"],
                       msgs_max=m["msgs_max"], msgs_after_join_mean=m["after_mean"],
                       msgs_after_join_max=m["after_max"], bytes_mean=m["bytes_mean"],
                       bytes_max=m["bytes_max"], seed_bytes_per_join=m["seed_b_join"],
                       wall_s=m["wall"], cpu_s=m["cpu"], peak_rss_mib=m["rss"])
            if codec == "off":  # the tool prints 0: not measured, so not a figure
                row.update({k: "" for k in BYTE_FIELDS})
            return True
    row["status"] = "unparsed"
    return False


def rows_from_log(spec: str) -> dict:
    """LOSS:CODEC:K:PATH -> the row of a run whose output was saved to PATH (a run too long
    for this script's timeout, started by hand with the same bench options)."""
    loss, codec, k, path = spec.split(":", 3)
    with open(path) as f:
        out = f.read()
    m = re.search(r"bench\s+nodes (\d+):", out)
    row = {"nodes": int(m[1]) if m else 0, "seed_nodes": int(k), "loss": float(loss), "seed": 1}
    if not parse_summary(out, row, codec):
        raise SystemExit(f"no summary line in {path}: give the saved output of one "
                         "'gossip-rdzv-sim --scenario bench ... --no-fork' run")
    row["seed"] = re.search(r"seed (\d+) bench", out)[1]
    return row


def num(row: dict, key: str) -> float:
    return float(row[key])


def has_bytes(rs: list[dict]) -> bool:
    """Whether these rows measured bytes (not --codec off)."""
    return all(r.get("bytes_mean") not in (None, "") for r in rs)


def seed_nodes_of(row: dict) -> int:
    """K of a row; 1 for CSVs written before the seed_nodes column."""
    return int(row.get("seed_nodes") or 1)


def groups(rows: list[dict]) -> dict:
    """(N, K seed nodes, loss) -> the rows that passed."""
    by = defaultdict(list)
    for r in rows:
        if r.get("status") == "ok":
            by[(int(r["nodes"]), seed_nodes_of(r), float(r["loss"]))].append(r)
    return by


def kib(b: float) -> str:
    return f"{b / 1024:.0f} KiB" if b < 10 * 1024 * 1024 else f"{b / 1024 / 1024:.1f} MiB"


def seed_nodes_for(n: int, args: argparse.Namespace) -> int:
    if args.seed_nodes_per:
        return math.ceil(n / args.seed_nodes_per)
    return args.seed_nodes


def table(rows: list[dict]) -> str:
    lines = ["| N | seed_nodes | loss | runs | agreement, s: mean (max) | "
             "gossip periods: mean (max) | "
             "⌈log2 N⌉+10 | msgs/node mean / max (max/mean) | after join: mean / max "
             "(max/mean) | bytes/node mean / max | seed B/join | cpu per run | wall per run "
             "| peak RSS |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (n, k_seeds, loss), rs in sorted(groups(rows).items()):
        mean = lambda k: sum(num(r, k) for r in rs) / len(rs)  # noqa: E731
        top = lambda k: max(num(r, k) for r in rs)  # noqa: E731
        measured = has_bytes(rs)
        byte_cells = (f"{kib(mean('bytes_mean'))} / {kib(top('bytes_max'))} | "
                      f"{mean('seed_bytes_per_join'):.0f}" if measured else "n/a | n/a")
        lines.append(
            f"| {n} | {k_seeds} | {loss * 100:.0f}% | {len(rs)} | {mean('agreement_s'):.2f} "
            f"({top('agreement_s'):.2f}) | {mean('gossip_periods'):.1f} "
            f"({top('gossip_periods'):.1f}) | {math.ceil(math.log2(n)) + 10} | "
            f"{mean('msgs_mean'):.0f} / {top('msgs_max'):.0f} "
            f"({top('msgs_max') / mean('msgs_mean'):.1f}) | "
            f"{mean('msgs_after_join_mean'):.0f} / {top('msgs_after_join_max'):.0f} "
            f"({top('msgs_after_join_max') / mean('msgs_after_join_mean'):.1f}) | "
            f"{byte_cells} | {mean('cpu_s'):.1f} s | "
            f"{mean('wall_s'):.1f} s | {top('peak_rss_mib'):.0f} MiB |")
    missing = [r for r in rows if r.get("status") != "ok"]
    for r in missing:
        lines.append(f"\nN = {r['nodes']}, {seed_nodes_of(r)} seed node(s), "
                     f"loss {float(r['loss']) * 100:.0f}%, seed {r['seed']}: "
                     f"{r.get('status')}")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("matplotlib not found (apt-get install python3-matplotlib): no plot\n")
        return False
    by = groups(rows)
    if not by:
        sys.stderr.write("no run passed: no plot\n")
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    all_n = sorted({n for n, _, _ in by})

    def series(loss: float) -> list[tuple[str, list[tuple[int, int, float]]]]:
        """The groups at one loss rate as lines: one line, or two (K = 1 and K > 1) when some N
        was run with both (as in rows combined from several runs)."""
        keys = sorted(key for key in by if key[2] == loss)
        if len({n for n, _, _ in keys}) == len(keys):
            parts = [keys]
        else:
            parts = [[key for key in keys if (key[1] > 1) == several] for several in (False, True)]
        out = []
        for part in filter(None, parts):
            ks = sorted({k for _, k, _ in part})
            several = any(k > 1 for _, k, _ in by)
            out.append((f", seed nodes {'/'.join(map(str, ks))}" if several else "", part))
        return out

    for loss in sorted({loss for _, _, loss in by}):
        for label, keys in series(loss):
            ns = [n for n, _, _ in keys]
            means = [sum(num(r, "gossip_periods") for r in by[k]) / len(by[k]) for k in keys]
            tops = [max(num(r, "gossip_periods") for r in by[k]) for k in keys]
            left.errorbar(ns, means,
                          yerr=[[0] * len(ns), [max(0.0, t - m) for t, m in zip(tops, means)]],
                          marker="o", capsize=3,
                          label=f"gossip-rdzv, {loss * 100:.0f}% loss{label}")
    xs = [2 ** (k / 4) for k in range(4 * 2, 4 * 17 + 1)]
    xs = [x for x in xs if all_n and min(all_n) / 2 <= x <= max(all_n) * 2]
    left.plot(xs, [math.log2(x) for x in xs], "k--", label="log2 N (epidemic bound)")
    left.plot(xs, [math.ceil(math.log2(x)) + 10 for x in xs], "r:", label="⌈log2 N⌉ + 10 (target)")
    left.set_xscale("log")
    left.set_xlabel("nodes N")
    left.set_ylabel(f"gossip periods ({GOSSIP_INTERVAL_S * 1000:.0f} ms) to agreement")
    left.set_title("Rounds to agreement (bench scenario, simulated)")
    left.legend(fontsize=8)
    low = min(loss for _, _, loss in by)
    for label, keys in series(low):
        ns = [n for n, _, _ in keys]
        mean_msgs = [sum(num(r, "msgs_mean") for r in by[k]) / len(by[k]) for k in keys]
        max_msgs = [max(num(r, "msgs_max") for r in by[k]) for k in keys]
        if all(has_bytes(by[k]) for k in keys):
            mean_bytes = [sum(num(r, "bytes_mean") for r in by[k]) / len(by[k]) for k in keys]
            max_bytes = [max(num(r, "bytes_max") for r in by[k]) for k in keys]
            right.plot(ns, mean_bytes, "o-", label=f"bytes/node, mean{label}")
            right.plot(ns, max_bytes, "s-", label=f"bytes/node, max (busiest node){label}")
            right.plot(ns, [n * b for n, b in zip(ns, mean_bytes)], "o--",
                       label=f"single master: N x bytes/node{label}")
        right.plot(ns, mean_msgs, "^-", label=f"messages/node, mean{label}")
        right.plot(ns, max_msgs, "v-", label=f"messages/node, max{label}")
        right.plot(ns, [n * m for n, m in zip(ns, mean_msgs)], "^--",
                   label=f"single master: N x messages/node{label}")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("nodes N")
    right.set_title(f"Load per node vs one master ({low * 100:.0f}% loss)")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--loss", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..S for N <= --many-seeds-up-to")
    p.add_argument("--many-seeds-up-to", type=int, default=100,
                   help="larger N run seed 1 only (default 100)")
    k_opts = p.add_mutually_exclusive_group()
    k_opts.add_argument("--seed-nodes", type=int, default=1, metavar="K",
                        help="the first K nodes are seeds every node lists (default 1)")
    k_opts.add_argument("--seed-nodes-per", type=int, metavar="P",
                        help="K = ceil(N / P) seed nodes for each N")
    p.add_argument("--codec", choices=["size", "off"], default="size",
                   help="size: count bytes (default); off: faster, bytes not measured")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    p.add_argument("--sim", default=SIM)
    p.add_argument("--out", default="bench/results/sim_figures")
    p.add_argument("--from-csv", nargs="+", metavar="CSV",
                   help="skip the runs: tabulate and plot these CSVs (to --out when several)")
    p.add_argument("--from-log", nargs="+", metavar="LOSS:CODEC:K:PATH", default=[],
                   help="with --from-csv: add runs whose output was saved to PATH (e.g. "
                        "N = 10,000, run by hand), made with --loss LOSS --codec CODEC "
                        "--seed-nodes K")
    args = p.parse_args()
    if args.seed_nodes < 1 or (args.seed_nodes_per is not None and args.seed_nodes_per < 1):
        p.error("--seed-nodes and --seed-nodes-per must be at least 1")

    if args.from_log and not args.from_csv:
        p.error("--from-log goes with --from-csv")
    if args.from_csv:
        rows = []
        for path in args.from_csv:
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    r["seed_nodes"] = seed_nodes_of(r)  # older CSVs: one seed node
                    rows.append(r)
        rows += [rows_from_log(spec) for spec in args.from_log]
    else:
        if not os.access(args.sim, os.X_OK):
            sys.stderr.write(f"{args.sim} not found: build it first "
                             "(cmake --build build --target gossip-rdzv-sim)\n")
            return 2
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        rows = []
        with open(args.out + ".csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            writer.writeheader()
            for n in args.nodes:
                k_seeds = seed_nodes_for(n, args)
                for loss in args.loss:
                    for seed in range(1, (args.seeds if n <= args.many_seeds_up_to else 1) + 1):
                        started = time.monotonic()
                        row = run_one(args.sim, n, k_seeds, loss, seed, args.codec, args.timeout)
                        print(f"N={n} K={k_seeds} loss={loss} seed={seed}: {row.get('status')}, "
                              f"{row.get('gossip_periods', '-')} periods, "
                              f"{time.monotonic() - started:.0f} s", flush=True)
                        rows.append(row)
                        writer.writerow(row)
                        f.flush()
    md = table(rows)
    out = args.out
    if args.from_csv and len(args.from_csv) == 1 and not args.from_log:
        out = os.path.splitext(args.from_csv[0])[0]
    elif args.from_csv:
        with open(out + ".csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    with open(out + ".md", "w") as f:
        f.write(md)
    print(md)
    one_csv = args.from_csv and len(args.from_csv) == 1 and not args.from_log
    written = ([] if one_csv else [out + ".csv"]) + [out + ".md"]
    if plot(rows, out + ".png"):
        written.append(out + ".png")
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
