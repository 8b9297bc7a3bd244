"""bench/bench_elastic.py: one smoke trial (worker-exit, gossip-rdzv only, --profile local)
runs and its table and JSON parse; the workers' log parser and the summary of trials that
did not recover, on made-up input. Figures are the benchmark's business, never asserted.

Run by CTest (labels cluster, e2e) with GOSSIP_RDZV_BIN set, or by hand from the repository
root:
  GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv \\
      /usr/bin/python3 -m unittest -v tests/cluster/test_bench_elastic.py
"""
import json
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import REPO, binary_or_skip, temp_dir  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
import bench_elastic  # noqa: E402

TORCH_PYTHON = "/usr/bin/python3"


def torch_or_skip() -> None:
    found = subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed"],
                           capture_output=True, timeout=120)
    if found.returncode != 0:
        raise unittest.SkipTest(f"{TORCH_PYTHON} has no torch (Debian's python3-torch)")


class ParseTest(unittest.TestCase):
    def test_log_lines_make_worker_runs_and_a_partial_line_is_ignored(self):
        log = temp_dir(self, "gossip-rdzv-bench-elastic-test-") / "agent0.log"
        log.write_text("start 10 0 2 3 100.0\n"
                       "ar 10 0 2 3 0 100.5\n"
                       "ar 10 0 2 3 1 100.6\n"
                       "exit 10 101.0\n"
                       "start 11 1 0 2 103.0\n"
                       "ar 11 1 0 2 0 104.25\n"
                       "ar 11 1 0")  # being written
        runs = bench_elastic.parse_log(log)
        self.assertEqual([(r.pid, r.restart, r.world, len(r.reduces), r.exited) for r in runs],
                         [(10, 0, 3, 2, 101.0), (11, 1, 2, 1, None)])
        first = bench_elastic.first_reduce_after(runs, 101.0)
        self.assertEqual((first.pid, first.reduces[0]), (11, 104.25))
        self.assertIsNone(bench_elastic.first_reduce_after(runs, 103.5))  # no worker since

    def test_a_trial_without_recovery_is_counted_and_named(self):
        summary = bench_elastic.summarize([
            {"status": "recovered", "seconds": 2.0, "started_s": 1.0, "world": [2],
             "restart_count": [1]},
            {"status": "no recovery", "detail": "no recovery within 120 s",
             "recovered_survivors": 1, "survivors": 2, "world": [2], "restart_count": [1]},
            {"status": "agents exited", "exit_codes": [1], "exited_s": 1.1,
             "error": "RendezvousConnectionError", "recovered_survivors": 0, "survivors": 2},
            {"status": "agents exited", "exit_codes": [1], "exited_s": 2.5,
             "error": "RendezvousConnectionError", "recovered_survivors": 0, "survivors": 2}])
        self.assertEqual((summary["runs"], summary["recovered"], summary["median_s"],
                          summary["started_median_s"]), (4, 1, 2.0, 1.0))
        self.assertEqual(summary["notes"], [
            "1 of 4: no recovery within 120 s; 1 of 2 survivors recovered",
            "2 of 4: every survivor's agent exited 1 (RendezvousConnectionError), "
            "1.1-2.5 s after the fault"])


class SmokeTest(unittest.TestCase):
    def test_one_worker_exit_trial_of_gossip_rdzv(self):
        binary = binary_or_skip()
        torch_or_skip()
        figures = temp_dir(self, "gossip-rdzv-bench-elastic-test-") / "figures.json"
        run = subprocess.run(
            [TORCH_PYTHON, str(REPO / "bench" / "bench_elastic.py"), "--faults", "worker-exit",
             "--systems", "gossip", "--repeats", "1", "--profile", "local",
             "--setup-timeout", "120", "--recovery-timeout", "60", "--binary", binary,
             "--json", str(figures)],
            capture_output=True, text=True, timeout=240)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        data = json.loads(figures.read_text())
        self.assertEqual([(r["fault"], r["system"]) for r in data["results"]],
                         [("worker-exit", "gossip")])
        trial = data["results"][0]["runs"][0]
        self.assertEqual(trial["status"], "recovered", run.stdout)
        self.assertEqual(trial["world"], [3])  # every agent came back
        self.assertEqual(trial["restart_count"], [1])  # TORCHELASTIC_RESTART_COUNT
        self.assertEqual(len(trial["per_survivor_s"]), 3)
        self.assertAlmostEqual(trial["seconds"], max(trial["per_survivor_s"].values()), places=2)
        self.assertLess(trial["started_s"], trial["seconds"])  # a worker starts, then reduces
        summary = data["results"][0]["summary"]
        self.assertEqual((summary["runs"], summary["recovered"]), (1, 1))
        self.assertLessEqual(summary["min_s"], summary["median_s"])
        self.assertIn("| worker-exit | gossip-rdzv | 1/1 |", run.stdout)


if __name__ == "__main__":
    unittest.main()
