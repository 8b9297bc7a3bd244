"""One worker of bench/bench_store.py, started by `gossip-rdzv join ... -- python3 THIS ...`.

It uses one store for everything, either ours (`--store gossip`: gossip_rdzv.torch.
store_from_env(), through this node's agent) or torch's (`--store tcp`: a dist.TCPStore on
MASTER_ADDR:MASTER_PORT hosted by rank 0, as torch's env:// init does). The same code runs
on both; only the store differs. It measures, and writes as JSON to OUT_DIR/rank<R>.json:

  setup    for each repeat: a barrier, then the wall time of constructing
           dist.ProcessGroupGloo(PrefixStore(store)) - gloo's connectFullMesh, every rank's
           address exchanged through the store - checked by an allreduce afterwards
  ops      for set, get, add in turn: a barrier, then --ops calls of that operation on keys
           of its own (set/get: bench/ops/R/I, add: bench/add/R/I%16), each one timed;
           with the phase's start and end (time.monotonic, system-wide on Linux)
  stats    (gossip only) every member's load read by rank 0 before the setups, before the
           ops phases and after them (gossip_rdzv.Store.member_stats), to count what each
           member served in each part

Barriers are store-based and spread over the keys: rank R sets bench/bar/NAME/R, then waits
for all of them (one multi-key wait).
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

OPS = ("set", "get", "add")


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=("gossip", "tcp"), required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args()


def make_store(kind, rank, world, timeout):
    if kind == "gossip":
        from gossip_rdzv.torch import store_from_env
        return store_from_env(timeout=timeout)
    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                         rank == 0, timeout)


def barrier(store, name, rank, world):
    store.set(f"bench/bar/{name}/{rank}", b"1")
    store.wait([f"bench/bar/{name}/{r}" for r in range(world)])


def time_setup(store, rank, world, repeat, timeout):
    barrier(store, f"setup{repeat}", rank, world)
    start = time.perf_counter()
    group = dist.ProcessGroupGloo(dist.PrefixStore(f"bench/pg{repeat}", store), rank, world,
                                  timeout)
    seconds = time.perf_counter() - start
    value = torch.tensor([float(rank + 1)])
    group.allreduce([value]).wait()
    expected = world * (world + 1) / 2
    if value.item() != expected:
        sys.exit(f"rank {rank}: allreduce gave {value.item()}, expected {expected}")
    barrier(store, f"setup{repeat}/done", rank, world)  # nobody tears down a peer's mesh early
    del group
    return seconds


def run_ops(store, op, rank, world, count):
    barrier(store, f"ops/{op}", rank, world)
    latencies = []
    payload = b"x" * 64
    begin = time.monotonic()
    for i in range(count):
        t0 = time.perf_counter()
        if op == "set":
            store.set(f"bench/ops/{rank}/{i}", payload)
        elif op == "get":
            store.get(f"bench/ops/{rank}/{i}")
        else:
            store.add(f"bench/add/{rank}/{i % 16}", 1)
        latencies.append(time.perf_counter() - t0)
    return {"start": begin, "end": time.monotonic(), "latencies": latencies}


def main():
    args = parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    timeout = datetime.timedelta(seconds=120)
    store = make_store(args.store, rank, world, timeout)
    result = {"rank": rank, "world": world, "store": args.store, "setup": [], "ops": {}}
    barrier(store, "start", rank, world)
    if args.store == "gossip" and rank == 0:
        result["stats_start"] = store.member_stats()
    for repeat in range(args.repeats):
        result["setup"].append(time_setup(store, rank, world, repeat, timeout))
    if args.store == "gossip" and rank == 0:
        result["stats_before"] = store.member_stats()
    for op in OPS:
        result["ops"][op] = run_ops(store, op, rank, world, args.ops)
    barrier(store, "ops/end", rank, world)
    if args.store == "gossip" and rank == 0:
        result["stats_after"] = store.member_stats()
    with open(os.path.join(args.out, f"rank{rank}.json"), "w") as out:
        json.dump(result, out)
    leave_together(store, args.store, rank, world)


def leave_together(store, kind, rank, world):
    """Nobody leaves while others may still use the store: rank 0 hosts the TCPStore, and
    with ours each agent serves its share of the keys until its own worker exits."""
    if kind == "tcp":
        store.add("bench/finished", 1)
        if rank == 0:
            deadline = time.monotonic() + 120
            while int(store.add("bench/finished", 0)) < world and time.monotonic() < deadline:
                time.sleep(0.01)
        return
    from gossip_rdzv import StoreError
    try:
        if int(store.add("bench/finished", 1)) == world:
            store.set("bench/all-finished", b"1")
        store.wait(["bench/all-finished"])
    except StoreError as error:
        # The results are written. A wait that reached the home of bench/all-finished just
        # after that home's worker saw the key and left may fail: harmless here.
        print(f"rank {rank}: leaving: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
