"""gloo without a master: 8 gloo_mesh_example processes on 127.0.0.1 (the first is everyone's
seed) agree on a view, form a gloo full mesh through gossip_rdzv::GlooStore and run a ring
allreduce; every process must exit 0 and report the right sum (examples/gloo_mesh). A rank
that closed its mesh as soon as its own allreduce returned could fail a neighbour still in it
on a busy machine (docs/store.md, "gloo").

Run: GLOO_MESH_EXAMPLE=build/examples/gloo_mesh/gloo_mesh_example \
     python3 -m unittest -v gloo_mesh_test      (from tests/store)
"""
import os
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import Processes, free_port, temp_dir  # noqa: E402

PROCESSES = 8
COUNT = 1_000_000  # floats per rank: 4 MB, long enough a ring for ranks to finish unevenly
# Sanitizer builds run several times slower: scripts/sanitize.sh sets GOSSIP_RDZV_TEST_TIME_SCALE.
SCALE = float(os.environ.get("GOSSIP_RDZV_TEST_TIME_SCALE", "1"))
DEADLINE = 60.0 * SCALE  # seconds for the whole group; a healthy run takes a few
JOIN_TIMEOUT = 40.0 * SCALE  # each process's --timeout
LINE = re.compile(r"gloo_mesh rank (\d+)/(\d+): allreduce sum (\S+) \(expected (\S+)\) ok")


class GlooMeshTest(unittest.TestCase):
    def test_eight_processes_allreduce_without_master(self):
        example = os.environ.get("GLOO_MESH_EXAMPLE")
        if not example:
            self.skipTest("GLOO_MESH_EXAMPLE is not set")
        seed_port = free_port()
        seed = f"127.0.0.1:{seed_port}"
        run_id = f"gloo-mesh-test-{os.getpid()}"
        group = Processes(temp_dir(self, "gossip-rdzv-gloo-mesh-"))
        self.addCleanup(group.close)
        procs = [group.spawn(f"process{i}", [
            example, "--seed", seed, "--nnodes", str(PROCESSES), "--host", "127.0.0.1",
            "--port", str(seed_port if i == 0 else 0), "--run-id", run_id,
            "--timeout", str(int(JOIN_TIMEOUT)), "--count", str(COUNT)]) for i in range(PROCESSES)]
        group.wait(procs, DEADLINE)
        outputs = [proc.stdout + proc.stderr for proc in procs]

        # Every failed process's output at once: the first to fail is often not the first
        # in process order (a peer that exits early closes the others' gloo connections).
        failed = [f"process {i} exited {proc.returncode}:\n{out}"
                  for i, (proc, out) in enumerate(zip(procs, outputs)) if proc.returncode != 0]
        self.assertFalse(failed, "\n".join(failed))
        expected = PROCESSES * (PROCESSES + 1) / 2
        ranks = set()
        for i, out in enumerate(outputs):
            match = LINE.search(out)
            self.assertIsNotNone(match, f"process {i} printed no result line:\n{out}")
            rank, size, total, want = match.groups()
            self.assertEqual(int(size), PROCESSES, out)
            self.assertEqual(float(total), expected, out)
            self.assertEqual(float(want), expected, out)
            ranks.add(int(rank))
        self.assertEqual(ranks, set(range(PROCESSES)), "every rank exactly once")


if __name__ == "__main__":
    unittest.main()
