#!/usr/bin/python3
"""torchrun (Debian's torch 1.13) made to run on Python 3.11, for bench/bench_elastic.py.

`Std.from_str` in torch/distributed/elastic/multiprocessing/api.py maps "0".."3" to a `Std`
by iterating the IntFlag `Std`; since Python 3.11 that iteration skips the zero member
`Std.NONE`, so the default `--redirects 0` becomes None and `to_map` then fails on it. This
wrapper replaces both functions in the loaded module (nothing under /usr/lib is edited) and
then calls `torch.distributed.run.main()`, so it takes torchrun's own arguments:

    /usr/bin/python3 bench/torchrun_py311.py --nnodes 3 --nproc_per_node 1 \
        --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:29500 -- script.py
"""
from __future__ import annotations

import re
from typing import Dict, Union

import torch.distributed.elastic.multiprocessing as elastic_mp
from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main

Std = api.Std


def _std(value: str) -> "Std":
    return Std(int(value))  # Std(0) is Std.NONE on every Python version


def from_str(cls, vm: str) -> Union["Std", Dict[int, "Std"]]:
    """"0".."3" -> a Std; "0:3,1:0" -> {local rank: Std}; anything else: ValueError."""
    if re.match(api._VALUE_REGEX, vm):
        return _std(vm)
    if re.match(api._MAPPING_REGEX, vm):
        return {int(rank): _std(value) for rank, value in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


def to_map(val_or_map: Union["Std", Dict[int, "Std"]], local_world_size: int) -> Dict[int, "Std"]:
    """One Std for every local rank, or the mapping completed with Std.NONE."""
    if isinstance(val_or_map, dict):
        return {i: val_or_map.get(i, Std.NONE) for i in range(local_world_size)}
    return {i: Std(val_or_map) for i in range(local_world_size)}


Std.from_str = classmethod(from_str)
api.to_map = to_map
elastic_mp.to_map = to_map  # start_processes() calls the name it imported

if __name__ == "__main__":
    main()
