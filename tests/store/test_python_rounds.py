"""Elastic rounds through the Python API, with real processes: three rounds_node.py processes
(gossip_rdzv.Node(elastic=True).rounds()) on loopback.

  - one reports its workers failed: every node gets the next round, with the same assignment;
  - a key set in that first round is not visible in the next one (docs/store.md, "Rounds"),
    and a torch gloo group forms over the new round's store;
  - one node is killed (SIGKILL): the survivors get a round without it, and finish the job.

Run: GOSSIP_RDZV_LIBRARY=build/libgossip_rdzv.so PYTHONPATH=python \\
     /usr/bin/python3 -m unittest -v test_python_rounds      (from tests/store)
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "support"))
from testlib import free_port  # noqa: E402

# Generous: the machine may be loaded; every wait ends as soon as its event arrives.
TIMEOUT = 90.0


def runs_torch():
    """False only under scripts/sanitize.sh thread: torch's own threads race in every TSan
    report (docs/hardening.md); elsewhere torch must be there (Debian's python3-torch)."""
    return os.environ.get("GOSSIP_RDZV_TEST_NO_TORCH") != "1"


class NodeProcess:
    """A rounds_node.py process: send() a command, next_event() awaits its next JSON line."""

    def __init__(self, name, seed, listen):
        self.name = name
        env = dict(os.environ)
        env.setdefault("PYTHONPATH", str(HERE.parents[1] / "python"))
        env["GLOO_SOCKET_IFNAME"] = "lo"
        self.popen = subprocess.Popen(
            [sys.executable, str(HERE / "rounds_node.py"), seed, listen], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.events = queue.Queue()
        self.stderr = []
        self.readers = [threading.Thread(target=self._read, daemon=True),
                        threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self.readers:
            reader.start()

    def _read(self):
        for line in self.popen.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"event": "noise", "line": line})
        self.events.put({"event": "exit"})

    def _read_stderr(self):
        for line in self.popen.stderr:
            self.stderr.append(line)

    def send(self, *command):
        self.popen.stdin.write(" ".join(command) + "\n")
        self.popen.stdin.flush()

    def next_event(self, kind, timeout=TIMEOUT, **match):
        """The next event of `kind` whose fields equal `match`, skipping others; fails the
        test after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                event = self.events.get(timeout=max(0.0, left))
            except queue.Empty:
                raise AssertionError(f"{self.name}: no {kind} event within {timeout} s; "
                                     f"stderr:\n{''.join(self.stderr[-30:])}") from None
            if event["event"] == kind and all(event.get(k) == v for k, v in match.items()):
                return event
            if event["event"] == "exit":
                raise AssertionError(f"{self.name} exited (status {self.popen.wait()}) waiting "
                                     f"for {kind}; stderr:\n{''.join(self.stderr[-30:])}")

    def kill(self):
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()
        for reader in self.readers:  # the pipes reach end of file once the process is gone
            reader.join(TIMEOUT)
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            try:
                pipe.close()
            except BrokenPipeError:
                pass


class PythonRoundsTest(unittest.TestCase):
    def setUp(self):
        seed = f"127.0.0.1:{free_port()}"
        self.nodes = [NodeProcess("node0", seed, seed)]
        self.nodes += [NodeProcess(f"node{i}", seed, "127.0.0.1:0") for i in (1, 2)]
        for node in self.nodes:
            self.addCleanup(node.kill)

    def full_round(self, nodes, size):
        """Each node's next round events until all of `nodes` are in one round of `size` nodes;
        returns those events."""
        rounds = [node.next_event("round") for node in nodes]
        while True:
            target = max(r["round"] for r in rounds)
            for i, node in enumerate(nodes):
                while rounds[i]["round"] < target:
                    rounds[i] = node.next_event("round")
            if all(r["round"] == target for r in rounds):
                if len(rounds[0]["nodes"]) == size:
                    return rounds
                rounds = [node.next_event("round") for node in nodes]

    def assert_same_assignment(self, rounds):
        first = rounds[0]
        for other in rounds[1:]:
            for field in ("round", "nodes", "master_addr", "master_port", "world_size"):
                self.assertEqual(other[field], first[field], field)
        self.assertEqual(sorted(r["my_node_rank"] for r in rounds), list(range(len(rounds))))

    def test_failure_then_kill(self):
        start = self.full_round(self.nodes, 3)
        self.assert_same_assignment(start)
        r0 = start[0]["round"]

        # A key of this round, visible to every node while the round lasts.
        self.nodes[0].send("set", "round-key", "old")
        self.nodes[0].next_event("set")
        self.nodes[2].send("get", "round-key", "30")
        self.assertEqual(self.nodes[2].next_event("get").get("value"), "old")

        # A failure now, with every member listening, would be node0's own.
        self.nodes[0].send("explain")
        self.assertEqual(self.nodes[0].next_event("explained"),
                         {"event": "explained", "round": r0, "explained": False})

        # node1's workers fail: every node gets the next round, the same assignment.
        self.nodes[1].send("fail")
        self.nodes[1].next_event("failed")
        for i in (0, 2):
            self.nodes[i].next_event("round_over", round=r0)
        after = [node.next_event("round") for node in self.nodes]
        self.assert_same_assignment(after)
        self.assertEqual(after[0]["round"], r0 + 1)
        self.assertEqual(sorted(after[0]["nodes"]), sorted(start[0]["nodes"]))
        self.assertIn("workers failed", after[1]["change"])

        # The key of the last round is gone in this one.
        for node in self.nodes:
            node.send("check", "round-key")
            self.assertFalse(node.next_event("check")["set"])
        self.nodes[1].send("get", "round-key", "0.5")
        self.assertEqual(self.nodes[1].next_event("get").get("error"), "store_timeout")
        self.nodes[1].send("set", "round-key", "new")
        self.nodes[1].next_event("set")
        self.nodes[0].send("get", "round-key", "30")
        self.assertEqual(self.nodes[0].next_event("get").get("value"), "new")

        if runs_torch():  # a gloo group over the new round's store, as torch's own would be
            for node in self.nodes:
                node.send("gloo")
            for node in self.nodes:
                self.assertEqual(node.next_event("gloo", timeout=180)["sum"], 6.0)

        # node2 dies: the survivors get a round without it.
        gone = after[2]["endpoint"]
        self.nodes[2].kill()
        # A failure of node0's workers at once (as gloo's would be) is explained by the death,
        # which the membership declares meanwhile: it would use no restart.
        self.nodes[0].send("explain")
        self.assertEqual(self.nodes[0].next_event("explained", timeout=60),
                         {"event": "explained", "round": r0 + 1, "explained": True})
        survivors = self.nodes[:2]
        for node in survivors:
            node.next_event("round_over", round=r0 + 1)
        last = [node.next_event("round") for node in survivors]
        self.assert_same_assignment(last)
        self.assertGreater(last[0]["round"], r0 + 1)
        self.assertEqual(len(last[0]["nodes"]), 2)
        self.assertNotIn(gone, last[0]["nodes"])
        self.assertIn("dead", last[0]["change"])

        for node in survivors:
            node.send("finish")
        for node in survivors:
            self.assertTrue(node.next_event("finished")["ok"])
            self.assertEqual(node.popen.wait(timeout=TIMEOUT), 0)


if __name__ == "__main__":
    unittest.main()
