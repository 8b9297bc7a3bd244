"""A gloo worker for elastic jobs: all_reduce in a loop of STEPS steps, saving its step to a
checkpoint file after each, and resuming from it when restarted. The worker whose RANK is
GR_CRASH_RANK exits 1 at step GR_CRASH_STEP of round 0 (TORCHELASTIC_RESTART_COUNT 0), of every round with
GR_CRASH_EVERY_ROUND=1.
At the end each rank writes GR_E2E_OUT/rank<R>.json: world size, restart count, the step it
resumed from and the sum of the last all_reduce."""
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

STEPS = 8


def main() -> int:
    out = Path(os.environ["GR_E2E_OUT"])
    rank = int(os.environ["RANK"])
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    checkpoint = out / f"checkpoint{rank}.json"
    dist.init_process_group("gloo", init_method="env://")
    world = dist.get_world_size()
    start = json.loads(checkpoint.read_text())["step"] if checkpoint.exists() else 0
    total = 0
    for step in range(start, STEPS):
        crash_now = restart == 0 or os.environ.get("GR_CRASH_EVERY_ROUND") == "1"
        if (crash_now and str(rank) == os.environ.get("GR_CRASH_RANK")
                and step == int(os.environ.get("GR_CRASH_STEP", "2"))):
            print(f"rank {rank}: crashing at step {step} on purpose", flush=True)
            os._exit(1)
        t = torch.tensor([rank + 1])
        dist.all_reduce(t)
        total = int(t.item())
        checkpoint.write_text(json.dumps({"step": step + 1}))
        time.sleep(0.2)  # a training step's work
    (out / f"rank{rank}.json").write_text(json.dumps({
        "world_size": world, "restart_count": restart, "resumed_from": start, "sum": total}))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
