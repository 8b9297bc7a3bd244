"""A torch gloo worker for the end-to-end tests. Reads torchrun's variables (set from a
gossip-rdzv env file, or by `gossip-rdzv join -- ...`), forms the gloo group with
init_method="env://", all-reduces rank + 1, checks the sum W(W+1)/2, and writes
$GR_E2E_OUT/rank<RANK>.json with what it saw. Exits 1 on a wrong sum.
"""
import datetime
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> int:
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=120))
    assert dist.get_rank() == rank and dist.get_world_size() == world_size
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world_size * (world_size + 1) // 2
    got = int(value.item())
    # A second collective: every rank sees every rank's node (proves the group is one mesh).
    gathered = [torch.zeros(1) for _ in range(world_size)]
    dist.all_gather(gathered, torch.tensor([float(os.environ["NODE_RANK"])]))
    dist.destroy_process_group()
    out = os.environ.get("GR_E2E_OUT")
    if out:
        Path(out, f"rank{rank}.json").write_text(json.dumps({
            "rank": rank, "world_size": world_size, "sum": got, "expected": expected,
            "local_rank": int(os.environ["LOCAL_RANK"]),
            "node_rank": int(os.environ["NODE_RANK"]),
            "node_ranks_seen": [int(t.item()) for t in gathered],
        }))
    print(f"rank {rank}/{world_size}: all_reduce sum {got} (expected {expected})", flush=True)
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())
