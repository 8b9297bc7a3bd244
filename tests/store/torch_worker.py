"""A worker of `gossip-rdzv join ... -- env -u MASTER_ADDR -u MASTER_PORT python3 torch_worker.py`:
forms a torch gloo group through gossip_rdzv.torch.store_from_env() with no MASTER_ADDR or
MASTER_PORT in its environment, checks an all_reduce over everyone and one over a new_group
of the even ranks, and prints "STORE-E2E rank R ok"."""
import datetime
import os
import sys

for name in ("MASTER_ADDR", "MASTER_PORT"):
    if name in os.environ:
        sys.exit(f"{name} is set: this test must run without a master endpoint")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gossip_rdzv.torch import store_from_env  # noqa: E402

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
store = store_from_env()
dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=120))

value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
expected = world * (world + 1) / 2
if value.item() != expected:
    sys.exit(f"rank {rank}: all_reduce gave {value.item()}, expected {expected}")

evens = [r for r in range(world) if r % 2 == 0]
group = dist.new_group(ranks=evens)
if rank in evens:
    value = torch.tensor([float(rank)])
    dist.all_reduce(value, group=group)
    if value.item() != float(sum(evens)):
        sys.exit(f"rank {rank}: new_group all_reduce gave {value.item()}, expected {sum(evens)}")

# The store itself, as torch sees it: a counter every rank bumps.
store.add("store-e2e/arrived", 1)
dist.barrier()
if int(store.get("store-e2e/arrived")) != world:
    sys.exit(f"rank {rank}: counter is {store.get('store-e2e/arrived')}, expected {world}")
dist.destroy_process_group()
print(f"STORE-E2E rank {rank} ok", flush=True)
