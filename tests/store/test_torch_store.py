"""torch without a master: 8 ranks over 4 `gossip-rdzv join` agents on loopback form a gloo
group through gossip_rdzv.torch.store_from_env(), with no MASTER_ADDR/MASTER_PORT in the
workers' environment; all_reduce and a new_group collective are checked (torch_worker.py).

Run: GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv \
     GOSSIP_RDZV_LIBRARY=build/libgossip_rdzv.so \
     /usr/bin/python3 -m unittest -v test_torch_store      (from tests/store)
"""
import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
from testlib import Processes, binary_or_skip, free_port, temp_dir  # noqa: E402

PYTHON_DIR = HERE.parent.parent / "python"
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
NODES, NPROC = 4, 2
DEADLINE = 240.0  # torch takes seconds to import per process on 2 cores


class TorchStoreTest(unittest.TestCase):
    def test_eight_ranks_over_four_nodes_without_master(self):
        gossip_rdzv = binary_or_skip()
        try:
            import torch  # noqa: F401
        except ImportError:
            pass  # the workers use TORCH_PYTHON; this interpreter need not have torch
        if not Path(TORCH_PYTHON).exists():
            self.skipTest(f"{TORCH_PYTHON} is missing")

        env = dict(os.environ)
        env.pop("MASTER_ADDR", None)
        env.pop("MASTER_PORT", None)
        env["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        seed = f"127.0.0.1:{free_port()}"
        worker = ["env", "-u", "MASTER_ADDR", "-u", "MASTER_PORT", TORCH_PYTHON,
                  str(HERE / "torch_worker.py")]
        agents = Processes(temp_dir(self, "gossip-rdzv-torch-store-"))
        self.addCleanup(agents.close)
        for index in range(NODES):
            listen = seed if index == 0 else "127.0.0.1:0"
            agents.spawn(f"node{index}", [
                gossip_rdzv, "join", "--seed", seed, "--listen", listen, "--nnodes", str(NODES),
                "--nproc-per-node", str(NPROC), "--run-id", "store-e2e",
                "--profile", "local", "--quiet", "--", *worker], env=env)

        codes = agents.wait(agents.procs, DEADLINE)
        text = "".join(f"--- {proc.name}\n{(proc.stdout + proc.stderr)[-4000:]}"
                       for proc in agents.procs)
        self.assertEqual(codes, [0] * NODES, text)
        for rank in range(NODES * NPROC):
            self.assertIn(f"STORE-E2E rank {rank} ok", text)


if __name__ == "__main__":
    unittest.main()
