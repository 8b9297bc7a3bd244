"""A torch gloo worker for the demo: joins the process group that gossip-rdzv described in
its environment (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, ...), all-reduces rank + 1 and
checks the sum is W(W+1)/2. Prints one line per rank; exits 1 when the sum is wrong.

Run it under `gossip-rdzv join ... -- /usr/bin/python3 examples/allreduce.py` (or torchrun:
it only reads torchrun's variables).
"""
import datetime
import os
import socket
import sys

import torch
import torch.distributed as dist


def main() -> int:
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    dist.init_process_group(
        "gloo", init_method="env://", timeout=datetime.timedelta(seconds=120)
    )
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world_size * (world_size + 1) // 2
    got = int(value.item())
    verdict = "OK" if got == expected else "WRONG"
    line = (
        f"rank {rank}/{world_size} (node {os.environ.get('NODE_RANK', '?')}, "
        f"local {os.environ.get('LOCAL_RANK', '?')}, {socket.gethostname()}): "
        f"all_reduce sum {got} (expected {expected}) {verdict}\n"
    )
    # One write per line: the node's workers share its stdout, and print() under
    # PYTHONUNBUFFERED writes the text and its newline separately, so two ranks' lines
    # could run into one ("... OKrank 4/8 ...") and the demo would miscount them.
    os.write(sys.stdout.fileno(), line.encode())
    dist.destroy_process_group()
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())
