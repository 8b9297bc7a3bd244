"""A job with a key, end to end (issue 23, docs/security.md): three nodes holding the key
agree and run a torch gloo job; a node with another key and one with none are refused with
exit 13 and the message that names the fix, and the job neither waits for them nor counts
them.

Run: GOSSIP_RDZV_BIN=... /usr/bin/python3 -m unittest -v test_keys
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
from cluster import check_consistent  # noqa: E402
from test_e2e import PYTHON, TORCH_TIMEOUT, WORKER, TorchJobTest  # noqa: E402
from testlib import free_ports, wait_listening  # noqa: E402

AUTH_FAILED = 13


class KeyedJobTest(TorchJobTest):
    def keygen(self, name: str) -> Path:
        path = self.tmp / name
        done = subprocess.run([os.environ["GOSSIP_RDZV_BIN"], "keygen", str(path)],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        return path

    def test_three_keyed_nodes_run_gloo_and_strangers_are_refused(self):
        job_key, other_key = self.keygen("job.key"), self.keygen("other.key")
        ports = free_ports(5)
        seed = f"127.0.0.1:{ports[0]}"
        job = ["--key-file", str(job_key), "--", PYTHON, WORKER]
        first = self.cluster.add_node([seed], "3", port=ports[0], extra=job,
                                      join_timeout="120s")
        wait_listening(ports[0], 30, what="the seed node to listen")

        # The strangers try first, while the job waits for its members.
        strangers = [
            self.cluster.add_node([seed], "3", port=ports[3], join_timeout="60s",
                                  extra=["--key-file", str(other_key)]),
            self.cluster.add_node([seed], "3", port=ports[4], join_timeout="60s"),
        ]
        codes = self.cluster.wait_nodes(strangers, timeout=90)
        self.assertEqual(codes, [AUTH_FAILED, AUTH_FAILED], self.cluster.logs(strangers))
        for stranger in strangers:
            self.assertIn("authentication failed", stranger.proc.stderr)
            self.assertIn("start every node with the same --key-file", stranger.proc.stderr)
        self.assertIn("it uses key id", strangers[0].proc.stderr)
        self.assertIn("this node sent its messages without one", strangers[1].proc.stderr)
        self.assertIsNone(first.proc.poll(), "the job's seed must be undisturbed")
        self.assertIn("does not hold this job's key", first.proc.stderr)

        members = [first] + [
            self.cluster.add_node([seed], "3", port=ports[i], extra=job, join_timeout="120s")
            for i in (1, 2)]
        codes = self.cluster.wait_nodes(members, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs(members)
        self.assertEqual(codes, [0, 0, 0], logs)
        membership = check_consistent(self, members)
        self.assertEqual(sorted(e["endpoint"] for e in membership["nodes"]),
                         sorted(n.endpoint for n in members))
        results = [json.loads((self.out / f"rank{r}.json").read_text()) for r in range(3)]
        for result in results:
            self.assertEqual(result["world_size"], 3)
            self.assertEqual(result["sum"], 6)


if __name__ == "__main__":
    unittest.main()
