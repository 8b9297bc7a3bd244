"""python/gossip_rdzv over the C API, in one process: two nodes on loopback (gossip_rdzv.Node),
the Store's operations and errors, and the torch.distributed.Store subclass.

Run: GOSSIP_RDZV_LIBRARY=build/libgossip_rdzv.so PYTHONPATH=python \
     /usr/bin/python3 -m unittest -v test_python_package      (from tests/store)
"""
import os
import sys
import threading
import unittest
from pathlib import Path

import gossip_rdzv

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import free_port  # noqa: E402


class PythonPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        seed = f"127.0.0.1:{free_port()}"
        common = dict(run_id="py-test", seeds=[seed], nnodes="2", timing="local",
                      join_timeout="20s", nproc_per_node="2")
        cls.nodes = [gossip_rdzv.Node(listen=seed, **common).start(),
                     gossip_rdzv.Node(listen="127.0.0.1:0", **common).start()]
        cls.assignments = [node.wait() for node in cls.nodes]

    @classmethod
    def tearDownClass(cls):
        for node in cls.nodes:
            node.stop()

    def test_assignment(self):
        first, second = self.assignments
        self.assertEqual(first.world_size, 4)
        self.assertEqual([n["endpoint"] for n in first.nodes], [n["endpoint"] for n in second.nodes])
        self.assertEqual(sorted([first.my_node_rank, second.my_node_rank]), [0, 1])
        env = second.env(1)
        self.assertEqual(env["RANK"], str(second.my_node_rank * 2 + 1))
        self.assertEqual(env["WORLD_SIZE"], "4")

    def test_store_operations(self):
        a, b = self.nodes[0].store(10), self.nodes[1].store(10)
        a.set("py/k", b"\x00bytes")
        self.assertEqual(b.get("py/k"), b"\x00bytes")
        self.assertEqual(a.add("py/n", 2), 2)
        self.assertEqual(b.add("py/n", 3), 5)
        self.assertTrue(b.check(["py/k", "py/n"]))
        self.assertFalse(b.check(["py/k", "py/none"]))
        self.assertEqual(a.compare_set("py/c", b"", b"x"), b"x")
        self.assertEqual(b.compare_set("py/c", b"x", b"y"), b"y")
        self.assertTrue(a.delete_key("py/c"))
        self.assertFalse(a.delete_key("py/c"))
        b.wait(["py/k", "py/n"])

    def test_blocking_get_released_by_a_later_set(self):
        result = {}
        reader = self.nodes[1].store(10)
        thread = threading.Thread(target=lambda: result.setdefault("v", reader.get("py/late")))
        thread.start()
        thread.join(0.3)
        self.assertTrue(thread.is_alive())
        self.nodes[0].store(10).set("py/late", "now")
        thread.join(10)
        self.assertEqual(result.get("v"), b"now")

    def test_timeout_names_key_and_home(self):
        store = self.nodes[0].store(10)
        with self.assertRaises(gossip_rdzv.StoreTimeout) as caught:
            store.get("py/never", timeout=0.2)
        self.assertIn("py/never", str(caught.exception))
        self.assertIn("node rank", str(caught.exception))
        self.assertEqual(caught.exception.name, "store_timeout")

    def test_member_stats_count_what_each_home_served(self):
        store = self.nodes[0].store(10)
        before = store.member_stats()
        self.assertEqual([m["member"] for m in before],
                         sorted(node.endpoint for node in self.nodes))
        for i in range(40):
            store.set(f"py/stats/{i}", b"v")
        after = store.member_stats()
        served = [a["home_requests"] - b["home_requests"] for a, b in zip(after, before)]
        self.assertEqual(sum(served), 40)  # the stats requests themselves are not counted
        self.assertTrue(all(n > 0 for n in served), served)  # 40 keys over 2 homes
        self.assertGreaterEqual(sum(m["keys"] for m in after), 40)

    def test_from_env_without_variable_says_so(self):
        import os
        saved = os.environ.pop("GOSSIP_RDZV_STORE", None)
        try:
            with self.assertRaises(gossip_rdzv.GossipRdzvError) as caught:
                gossip_rdzv.Store.from_env()
            self.assertIn("GOSSIP_RDZV_STORE", str(caught.exception))
        finally:
            if saved is not None:
                os.environ["GOSSIP_RDZV_STORE"] = saved

    def test_a_key_file_that_does_not_exist_is_a_usage_error(self):
        missing = "/nonexistent/gossip-rdzv/job.key"
        with self.assertRaises(gossip_rdzv.GossipRdzvError) as caught:
            gossip_rdzv.Node(seeds="127.0.0.1:1", nnodes="1", key_file=missing)
        self.assertEqual(caught.exception.name, "usage")
        self.assertIn(missing, str(caught.exception))
        with self.assertRaises(gossip_rdzv.GossipRdzvError) as caught:
            gossip_rdzv.Store(agent="127.0.0.1:1", key_file=missing)
        self.assertEqual(caught.exception.name, "usage")
        self.assertIn(missing, str(caught.exception))

    def test_round_calls_on_a_job_that_is_not_elastic_are_usage_errors(self):
        node, assignment = self.nodes[0], self.assignments[0]
        calls = [lambda: node.round_over(assignment), lambda: node.round_change,
                 lambda: node.wait_next(assignment), node.report_workers_failed,
                 node.report_workers_finished, lambda: node.wait_job_finished(0),
                 lambda: node.report_job_failed(0, 1), node.job_failure]
        for call in calls:
            with self.assertRaises(gossip_rdzv.GossipRdzvError) as caught:
                call()
            self.assertEqual(caught.exception.name, "usage")
            self.assertIn("not elastic", str(caught.exception))
        with self.assertRaises(ValueError):
            node.wait_job_finished(None)
        with self.assertRaises(gossip_rdzv.GossipRdzvError) as caught:
            gossip_rdzv.Node(seeds="127.0.0.1:1", elastic="maybe")
        self.assertIn("elastic", str(caught.exception))

    def test_a_job_failure_reported_by_one_elastic_node_reaches_the_other(self):
        seed = f"127.0.0.1:{free_port()}"
        common = dict(run_id="py-job-failure", seeds=[seed], nnodes="2", timing="local",
                      join_timeout="20s", elastic=True)
        nodes = [gossip_rdzv.Node(listen=seed, **common).start(),
                 gossip_rdzv.Node(listen="127.0.0.1:0", **common).start()]
        try:
            assignments = [node.wait() for node in nodes]
            self.assertEqual([node.listed_as_seed for node in nodes], [True, False])
            self.assertIsNone(nodes[1].job_failure())
            nodes[0].report_job_failed(rank=1, status=137)
            with self.assertRaises(gossip_rdzv.GossipRdzvError) as caught:
                nodes[1].wait_next(assignments[1])
            self.assertEqual(caught.exception.name, "job_over")
            self.assertTrue(nodes[1].round_over(assignments[1]))
            failure = nodes[1].job_failure()
            self.assertEqual((failure.rank, failure.status), (1, 137))
            self.assertIn(nodes[0].endpoint, failure.message)
            self.assertIn("signal 9", failure.message)
        finally:
            for node in nodes:
                node.stop()

    def test_torch_store_subclass(self):
        if os.environ.get("GOSSIP_RDZV_TEST_NO_TORCH") == "1":
            # scripts/sanitize.sh thread: torch's own threads race in every TSan report.
            self.skipTest("torch is not run under ThreadSanitizer")
        import torch.distributed as dist
        from gossip_rdzv.torch import GossipRdzvStore
        store = GossipRdzvStore(self.nodes[1].store(10))
        self.assertIsInstance(store, dist.Store)
        store.set("py/t", "v")
        self.assertEqual(store.get("py/t"), b"v")
        self.assertEqual(store.add("py/t2", 4), 4)
        store.wait(["py/t"])
        # A one-rank gloo group through it (torch calls set/get/add/wait from C++).
        dist.init_process_group("gloo", store=dist.PrefixStore("py-pg", store), rank=0, world_size=1)
        try:
            import torch
            value = torch.tensor([3.0])
            dist.all_reduce(value)
            self.assertEqual(value.item(), 3.0)
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()
