"""A gloo worker for elastic jobs: all_reduce in a loop of GR_STEPS steps (default 8) of
GR_STEP_SECONDS each (default 0.2), rank 0 saving the step reached to GR_E2E_OUT/checkpoint.json
after each, and every rank resuming from it (rank 0 reads it and broadcasts the step, so a
job that grew or shrank resumes as one). The worker whose RANK is GR_CRASH_RANK exits 1 at
step GR_CRASH_STEP of round GR_CRASH_ROUND (TORCHELASTIC_RESTART_COUNT, default 0), of every
round with GR_CRASH_EVERY_ROUND=1.
Each worker appends `start|end <restart> <rank> <pid> <agent pid> <time>` to
GR_E2E_OUT/journal, so a test can tell which round's workers ran when and under which agent.
At the end each rank writes GR_E2E_OUT/rank<R>.json: world size, restart count, the step it
resumed from and the sum of the last all_reduce."""
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist


def journal(out: Path, event: str, restart: int, rank: int) -> None:
    with open(out / "journal", "a") as f:
        f.write(f"{event} {restart} {rank} {os.getpid()} {os.getppid()} {time.time():.3f}\n")


def crashes_now(rank: int, restart: int, step: int) -> bool:
    if str(rank) != os.environ.get("GR_CRASH_RANK"):
        return False
    in_round = (os.environ.get("GR_CRASH_EVERY_ROUND") == "1"
                or restart == int(os.environ.get("GR_CRASH_ROUND", "0")))
    return in_round and step == int(os.environ.get("GR_CRASH_STEP", "2"))


def main() -> int:
    out = Path(os.environ["GR_E2E_OUT"])
    rank = int(os.environ["RANK"])
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    steps = int(os.environ.get("GR_STEPS", "8"))
    step_seconds = float(os.environ.get("GR_STEP_SECONDS", "0.2"))
    checkpoint = out / "checkpoint.json"
    journal(out, "start", restart, rank)
    dist.init_process_group("gloo", init_method="env://")
    world = dist.get_world_size()
    start = torch.tensor([0])
    if rank == 0 and checkpoint.exists():
        start[0] = json.loads(checkpoint.read_text())["step"]
    dist.broadcast(start, 0)
    start = int(start.item())
    total = 0
    for step in range(start, steps):
        if crashes_now(rank, restart, step):
            print(f"rank {rank}: crashing at step {step} on purpose", flush=True)
            os._exit(1)
        t = torch.tensor([rank + 1])
        dist.all_reduce(t)
        total = int(t.item())
        if rank == 0:
            tmp = out / "checkpoint.json.tmp"
            tmp.write_text(json.dumps({"step": step + 1, "restart": restart, "world": world}))
            tmp.replace(checkpoint)  # atomic: a reader never sees half a file
        time.sleep(step_seconds)  # a training step's work
    (out / f"rank{rank}.json").write_text(json.dumps({
        "world_size": world, "restart_count": restart, "resumed_from": start, "sum": total}))
    journal(out, "end", restart, rank)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
