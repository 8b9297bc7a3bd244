#!/usr/bin/env python3
"""Samples /proc/PID/smaps_rollup of every running gossip-rdzv agent once a second for
SECONDS and prints, over each agent's sample of highest RSS, the mean and the largest RSS,
anonymous memory and clean shared (library) pages, and the mean open descriptors then: where
an agent's memory is (docs/performance.md, "Peak memory per agent"). Run it beside a
benchmark, e.g.

  /usr/bin/python3 bench/smaps_peaks.py 70 & /usr/bin/python3 bench/bench_rendezvous.py 256 -r 1

Only processes named gossip-rdzv with three threads or more count: the node, not the `join`
process that waits for it.
"""
from __future__ import annotations

import os
import sys
import time

FIELDS = ("Rss", "Anonymous", "Shared_Clean", "Private_Clean")


def sample(pid: str) -> tuple[dict[str, int], int] | None:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            if comm.read().strip() != "gossip-rdzv":
                return None
        with open(f"/proc/{pid}/status") as status:
            threads = next(int(line.split()[1]) for line in status if line.startswith("Threads"))
        if threads < 3:
            return None
        values = {}
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                key, _, value = line.partition(":")
                if key in FIELDS:
                    values[key] = int(value.split()[0])
        return values, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration, ValueError):
        return None  # it exited meanwhile


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].replace(".", "", 1).isdigit():
        print("usage: smaps_peaks.py SECONDS", file=sys.stderr)
        return 2
    end = time.monotonic() + float(sys.argv[1])
    peaks: dict[str, tuple[dict[str, int], int]] = {}
    while time.monotonic() < end:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            got = sample(pid)
            if got and (pid not in peaks or got[0]["Rss"] > peaks[pid][0]["Rss"]):
                peaks[pid] = got
        time.sleep(1.0)
    if not peaks:
        print("smaps_peaks: no gossip-rdzv agent ran", file=sys.stderr)
        return 1
    n = len(peaks)
    for key in FIELDS:
        values = sorted(p[0].get(key, 0) for p in peaks.values())
        print(f"{key}: mean {sum(values) / n / 1024:.1f} MiB, max {values[-1] / 1024:.1f} MiB")
    print(f"agents {n}; open descriptors at their RSS peak: mean "
          f"{sum(p[1] for p in peaks.values()) / n:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
