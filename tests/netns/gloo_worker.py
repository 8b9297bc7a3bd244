"""One torch gloo worker of the netns tests: reads torchrun's variables (from a gossip-rdzv
env file), forms the group with init_method="env://", all-reduces rank + 1 and checks the
sum W(W+1)/2. Prints one line and exits 0, or 1 on a wrong sum.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=120))
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world_size * (world_size + 1) // 2
    got = int(value.item())
    dist.destroy_process_group()
    print(f"rank {rank}/{world_size} on {os.uname().nodename} via "
          f"{os.environ.get('GLOO_SOCKET_IFNAME')}: sum {got} (expected {expected})", flush=True)
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())
