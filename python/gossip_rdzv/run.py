"""python3 -m gossip_rdzv.run [torchrun's arguments]: torchrun with the `gossip` rendezvous.

    /usr/bin/python3 -m gossip_rdzv.run --nnodes 2:4 --nproc_per_node 8 --max_restarts 3 \\
        --rdzv_endpoint node0:29400,node1:29400,node2:29400 --rdzv_id job42 train.py

It registers the `gossip` backend (gossip_rdzv/elastic.py) and runs torchrun's own main(), so
every torchrun option works as documented by torch; --rdzv_backend defaults to gossip here
(give --rdzv_backend c10d to get torchrun's own). --rdzv_endpoint is the seed list, the same
on every node; --rdzv_conf takes gossip-rdzv's options (listen=:29400, key_file=PATH, ...).

torch 1.13's launcher fails on Python 3.11 before it starts a worker: Std.from_str maps
"0".."3" by iterating the IntFlag Std, which since Python 3.11 skips its zero member
Std.NONE, so the default --redirects 0 becomes None and to_map then fails on it. Where that
is so, this module replaces both functions in the loaded torch module (nothing on disk is
changed).
"""

import re
import sys


def repair_std():
    """Std.from_str and to_map that work on every Python version (see the module's text)."""
    import torch.distributed.elastic.multiprocessing as elastic_mp
    from torch.distributed.elastic.multiprocessing import api

    std = api.Std
    if std.from_str("0") is std.NONE:
        return  # this torch already works

    def from_str(cls, text):
        if re.match(api._VALUE_REGEX, text):
            return std(int(text))  # Std(0) is Std.NONE on every Python version
        if re.match(api._MAPPING_REGEX, text):
            return {int(rank): std(int(value))
                    for rank, value in (item.split(":") for item in text.split(","))}
        raise ValueError(f"{text} does not match: <{api._VALUE_REGEX}> or "
                         f"<{api._MAPPING_REGEX}>")

    def to_map(value, local_world_size):
        if isinstance(value, dict):
            return {i: value.get(i, std.NONE) for i in range(local_world_size)}
        return {i: std(value) for i in range(local_world_size)}

    std.from_str = classmethod(from_str)
    api.to_map = to_map
    elastic_mp.to_map = to_map  # start_processes() calls the name it imported


def parse_args(args):
    """torchrun's arguments, with --rdzv_backend gossip unless one is given. torchrun does not
    hand --nproc_per_node to a rendezvous handler; it goes to the node through --rdzv_conf
    (unless given there), so the agreed world size is the workers' own."""
    from torch.distributed import run as torchrun

    from .elastic import BACKEND

    parser = torchrun.get_args_parser()
    parser.set_defaults(rdzv_backend=BACKEND)
    parsed = parser.parse_args(args)
    if parsed.rdzv_backend == BACKEND and "nproc_per_node=" not in parsed.rdzv_conf:
        nproc = torchrun.determine_local_world_size(parsed.nproc_per_node)
        parsed.rdzv_conf = ",".join(filter(None, [parsed.rdzv_conf, f"nproc_per_node={nproc}"]))
    return parsed


def main(args=None):
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import record

    from . import elastic

    repair_std()
    elastic.register()
    # record: torchrun's own summary of a failed worker (and its error file), as torchrun prints.
    record(torchrun.run)(parse_args(sys.argv[1:] if args is None else args))


if __name__ == "__main__":
    main()
