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
import socket
import subprocess
import time
import unittest

PROCESSES = 8
COUNT = 1_000_000  # floats per rank: 4 MB, long enough a ring for ranks to finish unevenly
DEADLINE = 60.0  # seconds for the whole group; a healthy run takes a few
LINE = re.compile(r"gloo_mesh rank (\d+)/(\d+): allreduce sum (\S+) \(expected (\S+)\) ok")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GlooMeshTest(unittest.TestCase):
    def test_eight_processes_allreduce_without_master(self):
        example = os.environ.get("GLOO_MESH_EXAMPLE")
        if not example:
            self.skipTest("GLOO_MESH_EXAMPLE is not set")
        seed_port = free_port()
        seed = f"127.0.0.1:{seed_port}"
        run_id = f"gloo-mesh-test-{os.getpid()}"
        procs = []
        try:
            for i in range(PROCESSES):
                procs.append(subprocess.Popen(
                    [example, "--seed", seed, "--nnodes", str(PROCESSES), "--host", "127.0.0.1",
                     "--port", str(seed_port if i == 0 else 0), "--run-id", run_id,
                     "--timeout", "40", "--count", str(COUNT)],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            end = time.monotonic() + DEADLINE
            outputs = []
            for i, proc in enumerate(procs):
                try:
                    out, _ = proc.communicate(timeout=max(0.1, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    self.fail(f"process {i} still running after {DEADLINE} s")
                outputs.append(out)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()

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
