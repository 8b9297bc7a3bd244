"""bench/sim_figures.py on tiny runs: its options reach gossip-rdzv-sim and its output parses
(--seed-nodes, --seed-nodes-per, --codec off leaving bytes unmeasured), and --from-csv still reads
CSVs written before the seed_nodes column. Figures are the benchmark's business, not asserted.

Run by CTest (label sim) with GOSSIP_RDZV_SIM set, or by hand from the repository root:
  GOSSIP_RDZV_SIM=build/tools/gossip-rdzv-sim/gossip-rdzv-sim \\
      /usr/bin/python3 -m unittest -v tests/sim/test_sim_figures.py
"""
import csv
import os
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import REPO, built_tool, temp_dir  # noqa: E402

SCRIPT = REPO / "bench" / "sim_figures.py"
SIM = built_tool("gossip-rdzv-sim", "GOSSIP_RDZV_SIM") or ""


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120)


def read_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@unittest.skipUnless(os.access(SIM, os.X_OK),
                     "gossip-rdzv-sim is not built (or set GOSSIP_RDZV_SIM)")
class SimFiguresTest(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_dir(self, "gossip-rdzv-sim-figures-")

    def out(self, name: str) -> str:
        return str(self.tmp / name)

    def test_seed_nodes_per_and_codec_off(self):
        # N=10 and P=4: K = ceil(10 / 4) = 3; N=3: K = 1.
        res = run_script("--sim", SIM, "--nodes", "3", "10", "--loss", "0", "--seeds", "1",
                         "--seed-nodes-per", "4", "--codec", "off", "--out", self.out("off"))
        self.assertEqual(res.returncode, 0, res.stderr)
        rows = read_csv(self.out("off.csv"))
        self.assertEqual([(r["nodes"], r["seed_nodes"], r["status"]) for r in rows],
                         [("3", "1", "ok"), ("10", "3", "ok")])
        for r in rows:
            self.assertEqual((r["bytes_mean"], r["bytes_max"], r["seed_bytes_per_join"]),
                             ("", "", ""))
            self.assertGreater(int(r["msgs_mean"]), 0)
        md = Path(self.out("off.md")).read_text()
        self.assertIn("| 10 | 3 | 0% | 1 |", md)
        self.assertIn("| n/a | n/a |", md)

    def test_seed_nodes_with_bytes_and_old_csv(self):
        res = run_script("--sim", SIM, "--nodes", "10", "--loss", "0", "--seeds", "1",
                         "--seed-nodes", "2", "--out", self.out("new"))
        self.assertEqual(res.returncode, 0, res.stderr)
        (new,) = read_csv(self.out("new.csv"))
        self.assertEqual((new["seed_nodes"], new["status"]), ("2", "ok"))
        self.assertGreater(float(new["bytes_mean"]), 0)
        self.assertGreater(float(new["seed_bytes_per_join"]), 0)

        # A CSV of the column set before seed_nodes: the same row with N=20, without the column.
        old_row = {k: v for k, v in new.items() if k != "seed_nodes"}
        old_row["nodes"] = "20"
        with open(self.out("old.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(old_row))
            writer.writeheader()
            writer.writerow(old_row)
        res = run_script("--from-csv", self.out("old.csv"), self.out("new.csv"),
                         "--out", self.out("all"))
        self.assertEqual(res.returncode, 0, res.stderr)
        both = read_csv(self.out("all.csv"))
        self.assertEqual(sorted((r["nodes"], r["seed_nodes"]) for r in both),
                         [("10", "2"), ("20", "1")])
        md = Path(self.out("all.md")).read_text()
        self.assertIn("| 10 | 2 | 0% | 1 |", md)
        self.assertIn("| 20 | 1 | 0% | 1 |", md)

    def test_from_log_adds_a_run_saved_by_hand(self):
        res = run_script("--sim", SIM, "--nodes", "5", "--loss", "0", "--seeds", "1",
                         "--out", self.out("base"))
        self.assertEqual(res.returncode, 0, res.stderr)
        # A long run started by hand (as for N = 10,000), its output saved to a file.
        saved = subprocess.run([SIM, "--scenario", "bench", "--nodes", "12", "--seed", "2",
                                "--seed-nodes", "2", "--loss", "0.1", "--codec", "off",
                                "--no-fork"], capture_output=True, text=True, timeout=120)
        Path(self.out("run12.txt")).write_text(saved.stdout)
        res = run_script("--from-csv", self.out("base.csv"), "--from-log",
                         "0.1:off:2:" + self.out("run12.txt"), "--out", self.out("with_log"))
        self.assertEqual(res.returncode, 0, res.stderr)
        rows = {r["nodes"]: r for r in read_csv(self.out("with_log.csv"))}
        self.assertEqual(sorted(rows), ["12", "5"])
        self.assertEqual((rows["12"]["seed_nodes"], rows["12"]["loss"], rows["12"]["seed"]),
                         ("2", "0.1", "2"))
        self.assertEqual(rows["12"]["bytes_mean"], "")  # --codec off: not measured
        self.assertIn("| 12 | 2 | 10% | 1 |", Path(self.out("with_log.md")).read_text())
        # A file without a summary line is an error, not an empty row.
        Path(self.out("empty.txt")).write_text("nothing here\n")
        res = run_script("--from-csv", self.out("base.csv"), "--from-log",
                         "0:off:1:" + self.out("empty.txt"), "--out", self.out("bad"))
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("no summary line", res.stderr)

    def test_bad_seed_nodes_is_an_error(self):
        for args in (["--seed-nodes", "0"], ["--seed-nodes-per", "0"],
                     ["--seed-nodes", "2", "--seed-nodes-per", "4"], ["--codec", "full"]):
            res = run_script("--sim", SIM, "--nodes", "10", *args, "--out", self.out("bad"))
            self.assertEqual(res.returncode, 2, args)
            self.assertIn("error", res.stderr)
            self.assertFalse(os.path.exists(self.out("bad.csv")), args)


if __name__ == "__main__":
    unittest.main()
