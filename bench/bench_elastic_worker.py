#!/usr/bin/python3
"""The worker of bench/bench_elastic.py: one gloo all_reduce every BENCH_ELASTIC_STEP seconds,
for ever, each logged with its wall-clock time, so that the benchmark can tell when the
first all_reduce of a new round happened on every node.

It appends one line per event to $BENCH_ELASTIC_LOG (one file per agent; each line is one
write() in append mode, so the lines of an old and a new worker never mix):

    start PID RESTART RANK WORLD TIME    before init_process_group
    ar PID RESTART RANK WORLD STEP TIME  after each all_reduce returned
    exit PID TIME                        on SIGUSR1, just before it exits 1 (the "worker
                                         fails" fault)

RESTART is TORCHELASTIC_RESTART_COUNT, TIME is time.time(). The worker exits on its own
(0) after BENCH_ELASTIC_LIFETIME seconds, or once its parent (the agent) is gone, so none
outlives the benchmark even if the benchmark itself is killed.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    log = os.open(os.environ["BENCH_ELASTIC_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    step_s = float(os.environ.get("BENCH_ELASTIC_STEP", "0.1"))
    lifetime = float(os.environ.get("BENCH_ELASTIC_LIFETIME", "900"))
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    rank, world = os.environ["RANK"], os.environ["WORLD_SIZE"]
    pid, parent = os.getpid(), os.getppid()

    def write(line: str) -> None:
        os.write(log, (line + "\n").encode())

    def fail(signum, frame) -> None:
        write(f"exit {pid} {time.time():.6f}")
        os._exit(1)

    signal.signal(signal.SIGUSR1, fail)
    write(f"start {pid} {restart} {rank} {world} {time.time():.6f}")
    dist.init_process_group("gloo", init_method="env://")
    world = str(dist.get_world_size())
    end = time.monotonic() + lifetime
    step = 0
    while time.monotonic() < end and os.getppid() == parent:
        t = torch.ones(1)
        dist.all_reduce(t)
        write(f"ar {pid} {restart} {rank} {world} {step} {time.time():.6f}")
        step += 1
        time.sleep(step_s)  # a training step's work
    return 0


if __name__ == "__main__":
    sys.exit(main())
