"""An elastic job across network namespaces (issue #22, test 7): three hosts run
`join --nnodes 2:3 -- elastic_worker.py` (real torch gloo workers that all_reduce in a loop
and resume from a checkpoint); one host is cut off the LAN by nftables mid-job. The other
two re-form without it and go on; when the cut heals, the cut-off host learns it was left
out, stops its workers of the old round, and the job grows back to three hosts and finishes.

Needs root; run with /usr/bin/python3 (Debian's python3-torch) -m unittest.
"""
from __future__ import annotations

import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "support")]
from netns import Lab, missing_requirements  # noqa: E402
from test_netns import has_torch  # noqa: E402
from testlib import (assert_one_round_at_a_time, await_checkpoint, binary,  # noqa: E402
                     elastic_results, read_checkpoint, wait_until)

PYTHON = os.environ.get("GR_TEST_PYTHON", "/usr/bin/python3")
ELASTIC_WORKER = HERE.parent / "e2e" / "elastic_worker.py"
REQUIREMENT = missing_requirements()
TIMEOUT = 240.0  # s: torch imports take seconds per process on two cores


@unittest.skipIf(REQUIREMENT is not None, REQUIREMENT or "")
class CutOffTest(unittest.TestCase):
    # 160 steps of 0.25 s: the job is still running when the cut heals (the survivors need a
    # suspicion timeout and a torch start-up to re-form, the woken host as long again).
    STEPS, STEP_SECONDS, CUT_STEP = 160, 0.25, 4

    def setUp(self) -> None:
        if not has_torch():
            self.skipTest(f"{PYTHON} has no torch: the job's workers cannot run")
        self.lab = Lab(3)
        self.addCleanup(self.lab.close)
        self.out = self.lab.workdir / "results"
        self.out.mkdir()

    def checkpoint(self) -> dict:
        return read_checkpoint(self.out / "checkpoint.json")

    def await_step(self, step: int, min_restart: int, logs) -> None:
        await_checkpoint(self.out / "checkpoint.json", step, min_restart, TIMEOUT, logs, 0.1)

    def test_a_host_cut_off_mid_job_is_left_out_then_rejoins_when_the_cut_heals(self) -> None:
        env = {"GR_E2E_OUT": str(self.out), "GR_STEPS": str(self.STEPS),
               "GR_STEP_SECONDS": str(self.STEP_SECONDS)}
        args = [binary(), "join", "--seed", "n0:29400", "--listen", ":29400", "--nnodes", "2:3",
                "--run-id", "cut", "--join-timeout", "120s", "--max-restarts", "1", "--",
                PYTHON, str(ELASTIC_WORKER)]
        nodes = [self.lab.start(h, args, name=f"join-n{h}", env=env) for h in range(3)]

        def logs() -> str:
            return "\n".join(f"--- {n.name}\n{n.output()[-4000:]}" for n in nodes)

        self.await_step(self.CUT_STEP, 0, logs)
        self.assertEqual(self.checkpoint().get("world"), 3, logs())
        self.lab.partition([0, 1], [2])
        # n0 and n1 declare n2 dead and go on in a round of two; n2 cannot form a round alone
        # (--nnodes 2:3) and its workers lose their peers.
        self.await_step(self.CUT_STEP + 4, 1, logs)
        self.assertEqual(self.checkpoint().get("world"), 2, logs())
        self.assertTrue(all(n.running() for n in nodes), logs())
        self.lab.heal()
        # Back on the LAN below MAX: the job moves to a round that holds n2 again.
        wait_until(lambda: self.checkpoint().get("world") == 3 and
                   self.checkpoint().get("restart", 0) >= 2, TIMEOUT,
                   lambda: f"a round of three after the heal (checkpoint {self.checkpoint()})\n"
                   f"{logs()}",
                   interval=0.1)
        codes = [n.wait(TIMEOUT) for n in nodes]
        self.assertEqual(codes, [0, 0, 0], logs())
        found = elastic_results(self, self.out, 3, logs())
        for result in found:
            self.assertGreaterEqual(result["restart_count"], 2, logs())
            self.assertGreater(result["resumed_from"], self.CUT_STEP, logs())
        # n2 was told its round was over and stopped the workers it ran in round 0 (no
        # restart used: a membership change).
        self.assertIn("stopped this node's workers of round 0 (no restart used)",
                      nodes[2].output(), logs())
        assert_one_round_at_a_time(self, self.out / "journal")


if __name__ == "__main__":
    unittest.main()
