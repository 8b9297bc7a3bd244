#!/usr/bin/python3
"""torchrun (Debian's torch 1.13) made to run on Python 3.11, for bench/bench_elastic.py.

`Std.from_str` in torch/distributed/elastic/multiprocessing/api.py maps "0".."3" to a `Std`
by iterating the IntFlag `Std`; since Python 3.11 that iteration skips the zero member
`Std.NONE`, so the default `--redirects 0` becomes None and `to_map` then fails on it. This
wrapper replaces both functions in the loaded module with gossip_rdzv.run's repair (nothing
under /usr/lib is edited) and then calls torchrun's own `main()`, with torchrun's own default
backend, so it takes torchrun's own arguments:

    /usr/bin/python3 bench/torchrun_py311.py --nnodes 3 --nproc_per_node 1 \\
        --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:29500 -- script.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from gossip_rdzv.run import repair_std  # noqa: E402  (the package finds build/libgossip_rdzv.so)
from torch.distributed.run import main  # noqa: E402

repair_std()

if __name__ == "__main__":
    main()
