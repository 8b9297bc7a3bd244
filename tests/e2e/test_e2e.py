"""End to end with real clients: what gossip-rdzv agrees on must form a working torch gloo
process group (init_process_group("gloo", init_method="env://") + all_reduce).

Torch takes 2-4 s to import per process on a 2-core machine, so the deadlines are generous.
Run: GOSSIP_RDZV_BIN=... /usr/bin/python3 -m unittest -v test_e2e
"""
from __future__ import annotations

import json
import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
from cluster import Cluster, check_consistent  # noqa: E402
from testlib import temp_dir  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's python3 with python3-torch
WORKER = str(HERE / "worker.py")
NODES, NPROC = 4, 2
WORLD = NODES * NPROC
TORCH_TIMEOUT = 240.0


class E2ETest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-e2e-")
        self.cluster = Cluster(self.tmp)
        self.addCleanup(self.cluster.close)
        self.out = self.tmp / "results"
        self.out.mkdir()

    def check_results(self, logs: str) -> None:
        results = [json.loads((self.out / f"rank{r}.json").read_text())
                   for r in range(WORLD) if (self.out / f"rank{r}.json").exists()]
        self.assertEqual(len(results), WORLD, f"only {len(results)} of {WORLD} workers "
                         f"reported\n{logs}")
        expected_sum = WORLD * (WORLD + 1) // 2
        for result in results:
            self.assertEqual(result["world_size"], WORLD)
            self.assertEqual(result["sum"], expected_sum)
            self.assertEqual(sorted(result["node_ranks_seen"]),
                             sorted([n for n in range(NODES) for _ in range(NPROC)]))

    def test_env_files_to_gloo_workers(self):
        """gossip-rdzv writes env files and exits; we start the workers from those files."""
        nodes = self.cluster.start_nodes(NODES, nprocs=[NPROC] * NODES)
        codes = self.cluster.wait_nodes(nodes, timeout=60)
        self.assertEqual(codes, [0] * NODES, self.cluster.logs())
        check_consistent(self, nodes)

        workers = []
        for node in nodes:
            for local_rank in range(NPROC):
                env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
                env.update(node.env(local_rank))
                env["GR_E2E_OUT"] = str(self.out)
                workers.append(self.cluster.spawn(
                    f"worker-n{node.index}-l{local_rank}", [PYTHON, WORKER], env=env))
        codes = self.cluster.wait(workers, timeout=TORCH_TIMEOUT)
        logs = "\n".join(f"--- {w.name} exit={w.returncode}\n{w.stdout}{w.stderr[-3000:]}"
                         for w in workers)
        self.assertEqual(codes, [0] * WORLD, logs)
        self.check_results(logs)

    def test_join_runs_gloo_workers(self):
        """`gossip-rdzv join ... -- /usr/bin/python3 worker.py`: the CLI starts the workers."""
        os.environ["GR_E2E_OUT"] = str(self.out)  # inherited by the nodes, then the workers
        self.addCleanup(os.environ.pop, "GR_E2E_OUT", None)
        nodes = self.cluster.start_nodes(NODES, nprocs=[NPROC] * NODES,
                                         extra=["--", PYTHON, WORKER])
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = "\n".join(f"--- node{n.index} exit={n.proc.returncode}\n{n.proc.stdout}"
                         f"{n.proc.stderr[-3000:]}" for n in nodes)
        self.assertEqual(codes, [0] * NODES, logs)
        check_consistent(self, nodes)
        self.check_results(logs)


class ElasticTest(unittest.TestCase):
    """`join --max-restarts K -- CMD`: failures re-form the job instead of ending it."""

    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-elastic-")
        self.cluster = Cluster(self.tmp)
        self.addCleanup(self.cluster.close)
        self.out = self.tmp / "results"
        self.out.mkdir()
        os.environ["GR_E2E_OUT"] = str(self.out)  # inherited by the nodes, then the workers
        self.addCleanup(os.environ.pop, "GR_E2E_OUT", None)

    def results(self, world: int, logs: str) -> list:
        found = [json.loads((self.out / f"rank{r}.json").read_text())
                 for r in range(world) if (self.out / f"rank{r}.json").exists()]
        self.assertEqual(len(found), world, f"only {len(found)} of {world} ranks finished\n{logs}")
        return found

    def test_a_worker_crash_restarts_every_node_and_the_job_finishes(self):
        os.environ["GR_CRASH_RANK"] = "1"
        self.addCleanup(os.environ.pop, "GR_CRASH_RANK", None)
        nodes = self.cluster.start_nodes(
            3, extra=["--max-restarts", "2", "--", PYTHON, str(HERE / "elastic_worker.py")])
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs(nodes)
        self.assertEqual(codes, [0, 0, 0], logs)
        for result in self.results(3, logs):
            self.assertEqual(result["world_size"], 3)
            self.assertEqual(result["restart_count"], 1)  # TORCHELASTIC_RESTART_COUNT
            self.assertGreater(result["resumed_from"], 0)  # from its checkpoint
            self.assertEqual(result["sum"], 6)
        self.assertIn("restart 1 of 2", logs)

    def test_restarts_exhausted_end_the_agent_with_the_failure(self):
        os.environ["GR_CRASH_RANK"] = "0"
        self.addCleanup(os.environ.pop, "GR_CRASH_RANK", None)
        os.environ["GR_CRASH_EVERY_ROUND"] = "1"
        nodes = self.cluster.start_nodes(
            2, extra=["--max-restarts", "1", "--", PYTHON, str(HERE / "elastic_worker.py")])
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs(nodes)
        # The node that hosts RANK 0 (node ranks follow the natural order of the endpoints,
        # not the start order) ends the job after its one restart; the other stops its
        # workers, names that failure and ends with the same status.
        rank0 = min(range(2), key=lambda i: nodes[i].port)
        self.assertEqual(codes, [1, 1], logs)
        self.assertIn("local rank 0 (rank 0) on this node failed with exit status 1; "
                      "restarts exhausted (1 of 1 used)", self.cluster.logs([nodes[rank0]]))
        self.assertIn("the job failed: rank 0 on node", self.cluster.logs([nodes[1 - rank0]]))


if __name__ == "__main__":
    unittest.main()
