"""A smoke run of bench/bench_store.py at N=2 (one repeat, a few calls): the command works on
both stores and what it prints and writes parses. The figures themselves are not checked
(speed is measured by the benchmark, never asserted in tests); their consistency is.

Run: GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv /usr/bin/python3 -m unittest -v \
     test_bench_store      (from tests/store)
"""
import json
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import REPO, binary_or_skip, temp_dir  # noqa: E402

TORCH_PYTHON = "/usr/bin/python3"
OPS = 5


class BenchStoreSmokeTest(unittest.TestCase):
    def test_two_processes_one_repeat(self):
        binary_or_skip()  # the benchmark finds it the same way
        figures = temp_dir(self, "gossip-rdzv-bench-store-test-") / "figures.json"
        run = subprocess.run(
            [TORCH_PYTHON, str(REPO / "bench" / "bench_store.py"), "2", "--ops", str(OPS),
             "--repeats", "1", "--timeout", "120", "--json", str(figures)],
            capture_output=True, text=True, timeout=180)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        data = json.loads(figures.read_text())
        self.assertEqual([(r["n"], r["store"]) for r in data["results"]],
                         [(2, "gossip"), (2, "tcp")])
        for result in data["results"]:
            self.assertGreater(result["setup_s"]["median"], 0)
            for op in ("set", "get", "add"):
                figures = result["ops"][op]
                self.assertEqual(figures["calls"], 2 * OPS)
                self.assertLessEqual(figures["p50_ms"], figures["p99_ms"])
                self.assertGreater(figures["ops_per_s"], 0)
        load = data["results"][0]["load"]
        self.assertEqual(load["members"], 2)
        # Every op call reached a home; the barriers add a few more.
        self.assertGreaterEqual(load["requests"], 3 * 2 * OPS)
        self.assertEqual(sum(load["per_member"].values()), load["requests"])
        self.assertGreaterEqual(load["busiest_share_pct"], 50.0)
        setup_load = data["results"][0]["setup_load"]
        self.assertEqual(setup_load["members"], 2)
        self.assertGreater(setup_load["requests"], 0)  # the ranks' addresses went through it
        self.assertEqual(sum(setup_load["per_member"].values()), setup_load["requests"])
        for table in ("setup:", "ops:", "load:"):
            self.assertIn(table, run.stdout)
        self.assertIn("TCPStore", run.stdout)


if __name__ == "__main__":
    unittest.main()
