"""The store of a job with a key (docs/security.md): two `gossip-rdzv join --serve-store`
agents holding the key, clients in processes of their own (the Python package over the C API).
A client without the key, or with another, can neither read nor write; the job's key is
rotated (keys install, use, remove on every agent's key file) while a client keeps working,
and no request fails.

Run: GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv \
     GOSSIP_RDZV_LIBRARY=build/libgossip_rdzv.so PYTHONPATH=python \
     /usr/bin/python3 -m unittest -v test_store_keys      (from tests/store)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
import cluster  # noqa: E402
import testlib  # noqa: E402

import gossip_rdzv  # noqa: E402

RUN_ID = "store-keys"
LOOP = HERE / "store_loop_proc.py"
DEADLINE = 60.0  # seconds any single step may take on a loaded 2-core machine


class StoreKeysTest(unittest.TestCase):
    def setUp(self):
        self.bin = os.environ["GOSSIP_RDZV_BIN"]
        self.tmp = testlib.temp_dir(self, "store-keys-")
        self.cluster = cluster.Cluster(self.tmp)
        self.addCleanup(self.cluster.close)
        # One key file per agent, as on two machines; the same key in both.
        self.key_files = [self.tmp / "node1.key", self.tmp / "node2.key"]
        self.gossip_rdzv("keygen", str(self.key_files[0]))
        shutil.copy(self.key_files[0], self.key_files[1])
        shutil.copy(self.key_files[0], self.tmp / "original.key")
        self.old_id = self.key_ids(self.key_files[0])[0]
        ports = testlib.free_ports(2)
        seed = f"127.0.0.1:{ports[0]}"
        self.nodes = [
            self.cluster.add_node([seed], "2", port=ports[i], run_id=RUN_ID,
                                  extra=["--serve-store", "-v", "--key-file",
                                         str(self.key_files[i])])
            for i in range(2)]
        try:
            testlib.wait_until(lambda: all(n.files_written() for n in self.nodes), DEADLINE,
                               what="every agent to write its env file")
        except TimeoutError:
            self.fail(self.cluster.logs())
        self.endpoints = [n.env(0)["GOSSIP_RDZV_STORE"] for n in self.nodes]
        for i, node in enumerate(self.nodes):
            self.assertEqual(node.env(0)["GOSSIP_RDZV_KEY_FILE"], str(self.key_files[i]))

    def gossip_rdzv(self, *args):
        done = subprocess.run([self.bin, *args], capture_output=True, text=True, timeout=30)
        self.assertEqual(done.returncode, 0, f"{args}: {done.stdout}{done.stderr}")
        return done.stdout

    def key_ids(self, key_file):
        """The key ids of `key_file`, the primary first."""
        return re.findall(r"\b[0-9a-f]{16}\b", self.gossip_rdzv("keys", "list", "--key-file",
                                                               str(key_file)))

    def store(self, key_file=None, timeout=DEADLINE):
        kwargs = {"key_file": str(key_file)} if key_file else {}
        return gossip_rdzv.Store(agent=self.endpoints[0], run_id=RUN_ID, timeout=timeout,
                                 **kwargs)

    def await_agents_log(self, text):
        testlib.wait_until(lambda: all(text in n.proc.stderr for n in self.nodes), DEADLINE,
                           what=f"every agent to log {text!r}")

    def assert_refused(self, store, operation):
        with self.assertRaises(gossip_rdzv.StoreError) as caught:
            operation(store)
        self.assertEqual(caught.exception.name, "store_refused", str(caught.exception))
        self.assertIn("authentication failed", str(caught.exception))
        self.assertIn("--key-file", str(caught.exception))

    def test_a_client_without_the_key_or_with_another_can_neither_read_nor_write(self):
        holder = self.store(self.key_files[0])
        holder.set("secret", "42")
        other_key = self.tmp / "other.key"
        self.gossip_rdzv("keygen", str(other_key))
        for stranger in (self.store(None, timeout=10), self.store(other_key, timeout=10)):
            self.assert_refused(stranger, lambda s: s.get("secret", timeout=5))
            self.assert_refused(stranger, lambda s: s.set("secret", "forged"))
            self.assert_refused(stranger, lambda s: s.add("secret", 1))
        self.assertEqual(holder.get("secret", timeout=10), b"42")
        for node in self.nodes:
            self.assertIsNone(node.proc.poll(), "a refused client must not end the agent")
        self.assertIn("does not hold this job's key", self.nodes[0].proc.stderr)

    def test_rotating_the_key_while_a_client_works_loses_no_request(self):
        stop = self.tmp / "stop"
        client = self.cluster.spawn(
            "loop", [sys.executable, str(LOOP), self.endpoints[0], RUN_ID,
                     str(self.key_files[0]), str(stop)],
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))

        def ops():
            counts = [json.loads(line)["ops"] for line in client.stdout.splitlines()
                      if line.startswith("{")]
            return counts[-1] if counts else 0

        def await_progress():
            before = ops()
            testlib.wait_until(lambda: ops() > before or client.poll() is not None, DEADLINE,
                               what="the client to make progress")
            self.assertIsNone(client.poll(), client.stderr)

        await_progress()
        new_key = self.gossip_rdzv("keygen").strip()
        for key_file in self.key_files:
            self.gossip_rdzv("keys", "install", "--key-file", str(key_file), new_key)
        self.await_agents_log("2 key(s), primary key id " + self.old_id)
        await_progress()
        new_id = self.key_ids(self.key_files[0])[1]
        for key_file in self.key_files:
            self.gossip_rdzv("keys", "use", "--key-file", str(key_file), new_id)
        self.await_agents_log("2 key(s), primary key id " + new_id)
        await_progress()
        for key_file in self.key_files:
            self.gossip_rdzv("keys", "remove", "--key-file", str(key_file), self.old_id)
        self.await_agents_log("1 key(s), primary key id " + new_id)
        await_progress()
        stop.touch()
        self.cluster.wait([client], DEADLINE)
        result = json.loads(client.stdout.strip().splitlines()[-1])
        self.assertEqual(result["errors"], [], client.stderr)
        self.assertEqual(result["counter"], result["adds"], "an add was lost or counted twice")
        self.assertGreater(result["adds"], 0)

        # The old key no longer gets in.
        self.assert_refused(self.store(self.tmp / "original.key", timeout=10),
                            lambda s: s.get("loop/0", timeout=5))

if __name__ == "__main__":
    unittest.main()
