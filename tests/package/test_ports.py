"""Many agents per host: `--listen HOST:0` binds a free port and advertises the one it got.
Three `join` nodes on loopback, two of them with port 0: the membership files, the env file's
GOSSIP_RDZV_STORE and `gossip-rdzv members` all name the real ports, and those ports answer.

Needs GOSSIP_RDZV_BIN (CTest sets it).
"""
from __future__ import annotations

import json
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster  # noqa: E402
from testlib import free_port, temp_dir, wait_until  # noqa: E402


class ListenPortZeroTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-ports-")
        self.cluster = Cluster(self.tmp)
        self.addCleanup(self.cluster.close)

    def test_port_zero_is_advertised_as_the_bound_port(self):
        seed_port = free_port()
        seed = [f"127.0.0.1:{seed_port}"]
        nodes = [self.cluster.add_node(seed, "3", port=seed_port),
                 self.cluster.add_node(seed, "3", port=0),
                 self.cluster.add_node(seed, "3", port=0, extra=["--serve-store"])]
        self.assertEqual(self.cluster.wait_nodes(nodes[:2], timeout=60), [0, 0],
                         self.cluster.logs())
        serving = nodes[2]
        wait_until(serving.files_written, timeout=60, what="the --serve-store node's files")

        views = [node.membership() for node in nodes]
        endpoints = [n["endpoint"] for n in views[0]["nodes"]]
        self.assertTrue(all(v["nodes"] == views[0]["nodes"] for v in views), views)
        ports = sorted(int(e.rsplit(":", 1)[1]) for e in endpoints)
        self.assertNotIn(0, ports, endpoints)
        self.assertEqual(len(set(ports)), 3, endpoints)
        self.assertIn(seed_port, ports)

        # The serving node's store agent is its gossip socket: a port-0 node's real port.
        store = serving.env(0)["GOSSIP_RDZV_STORE"]
        self.assertIn(store, endpoints)
        self.assertNotEqual(store, seed[0])
        result = subprocess.run(
            [self.cluster.bin, "members", "--seed", store, "--run-id", "cluster-test",
             "--format", "json", "--timeout", "10s"],
            capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        listed = {m["endpoint"] for m in json.loads(result.stdout)}
        self.assertEqual(listed, set(endpoints), result.stdout)


if __name__ == "__main__":
    unittest.main()
