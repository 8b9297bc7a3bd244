"""`gossip-rdzv join --watch [--on-round CMD]` with real processes on loopback: env-file mode
for an elastic job whose workers something else supervises (docs/cli.md, "Watching rounds").

Every wait polls a file or a process with a deadline; nothing sleeps hoping for an outcome.
Run: GOSSIP_RDZV_BIN=... python3 -m unittest -v test_watch
"""
from __future__ import annotations

import signal
import sys
import threading
import unittest
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import RANK_VARS, Cluster, Node, check_consistent  # noqa: E402
from testlib import parse_env_file, temp_dir, wait_until  # noqa: E402

# The machine may be loaded: a dead node is declared in ~1-2 s with --profile local, and
# the next round then waits --last-call for more nodes up to MAX; round 0 must not commit
# before every node of a test started, even on a loaded machine.
DEADLINE = 60.0
LAST_CALL = "5s"

# Appends one line per run to hook.log beside the env file, and keeps a copy of the env file
# as the command saw it: the round, then the variables the command got.
ON_ROUND = (
    'dir=$(dirname "$GOSSIP_RDZV_ENV_FILES"); '
    'cp "$GOSSIP_RDZV_ENV_FILES" "$dir/seen-$GOSSIP_RDZV_ROUND.env"; '
    'echo "$GOSSIP_RDZV_ROUND $WORLD_SIZE $RANK $MASTER_ADDR $MASTER_PORT '
    '$TORCHELASTIC_RESTART_COUNT $GOSSIP_RDZV_MEMBERSHIP_FILE" >> "$dir/hook.log"'
)


def hook_runs(node: Node) -> List[List[str]]:
    path = node.dir / "hook.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


class WatchTest(unittest.TestCase):
    def setUp(self) -> None:
        self.cluster = Cluster(temp_dir(self, "gossip-rdzv-watch-"))
        self.addCleanup(self.cluster.close)

    def start(self, count: int, nnodes: str, on_round: str = ON_ROUND, **kwargs) -> List[Node]:
        return self.cluster.start_nodes(
            count, nnodes=nnodes,
            extra=["--watch", "--on-round", on_round, "--last-call", LAST_CALL], **kwargs)

    def await_runs(self, nodes: List[Node], rounds: int) -> None:
        wait_until(lambda: all(len(hook_runs(n)) >= rounds for n in nodes), DEADLINE,
                   f"--on-round to run for {rounds} round(s) on every node\n"
                   + self.cluster.logs())

    def test_a_killed_node_rewrites_the_survivors_files_and_runs_on_round_again(self):
        nodes = self.start(3, "2:3")
        self.await_runs(nodes, 1)
        check_consistent(self, nodes)
        for node in nodes:
            self.assertIsNone(node.proc.poll(), f"node{node.index} exited\n{self.cluster.logs()}")

        # A consumer polling the env files meanwhile must only ever read complete files.
        survivors, victim = nodes[:2], nodes[2]
        stop_reading = threading.Event()
        torn: List[str] = []

        def read_continuously() -> None:
            while not stop_reading.is_set():
                for node in survivors:
                    try:
                        env = parse_env_file(node.env_path(0))
                    except (OSError, ValueError) as error:
                        torn.append(f"node{node.index}: {error}")
                        continue
                    missing = [key for key in RANK_VARS if key not in env]
                    if missing:
                        torn.append(f"node{node.index}: lacks {missing}")

        reader = threading.Thread(target=read_continuously)
        reader.start()
        self.addCleanup(stop_reading.set)
        self.cluster.kill(victim.proc, signal.SIGKILL)
        self.await_runs(survivors, 2)
        stop_reading.set()
        reader.join()
        self.assertEqual(torn, [], "a reader saw a half-written env file")

        membership = check_consistent(self, survivors)
        self.assertEqual(membership["round"], 1)
        envs = [node.env(0) for node in survivors]
        for node, env in zip(survivors, envs):
            self.assertEqual(env["TORCHELASTIC_RESTART_COUNT"], "1")
            self.assertEqual(env["WORLD_SIZE"], "2")
            runs = hook_runs(node)
            # Once per round, with that round's variables.
            self.assertEqual([run[0] for run in runs], ["0", "1"], self.cluster.logs())
            self.assertEqual(runs[0][1], "3")
            self.assertEqual(runs[1], ["1", "2", env["RANK"], env["MASTER_ADDR"],
                                       env["MASTER_PORT"], "1", str(node.membership_path)])
            # The command ran after the round's files were complete.
            self.assertEqual(parse_env_file(node.dir / "seen-1.env"), env)
            self.assertIsNone(node.proc.poll(), f"node{node.index} exited\n{self.cluster.logs()}")
        self.assertIn("round 1: wrote the outputs (2 nodes, WORLD_SIZE 2)", self.cluster.logs())

    def test_a_node_arriving_below_max_joins_the_next_round(self):
        nodes = self.start(2, "2:3")
        self.await_runs(nodes, 1)
        newcomer = self.cluster.add_node(
            [nodes[0].endpoint], "2:3",
            extra=["--watch", "--on-round", ON_ROUND, "--last-call", LAST_CALL])
        everyone = nodes + [newcomer]
        wait_until(lambda: all(any(run[0] == "1" for run in hook_runs(n)) for n in everyone),
                   DEADLINE, "round 1 on every node\n" + self.cluster.logs())
        membership = check_consistent(self, everyone)
        self.assertEqual(membership["round"], 1)
        self.assertEqual([run[:2] for run in hook_runs(newcomer)], [["1", "3"]])
        for node in nodes:
            self.assertEqual([run[:2] for run in hook_runs(node)], [["0", "2"], ["1", "3"]])

    def test_sigterm_leaves_the_job_and_the_other_node_follows(self):
        # A failing --on-round is reported and the watch goes on.
        nodes = self.start(2, "2", on_round="exit 3")
        wait_until(lambda: all("--on-round failed with status 3 for round 0" in n.proc.stderr
                               for n in nodes), DEADLINE, "the --on-round failure to be reported")
        self.assertEqual([n.proc.poll() for n in nodes], [None, None], self.cluster.logs())

        self.cluster.kill(nodes[0].proc, signal.SIGTERM)
        codes = self.cluster.wait_nodes(nodes, timeout=DEADLINE)
        logs = self.cluster.logs()
        self.assertEqual(codes, [0, 0], logs)
        self.assertIn("Terminated: leaving the job in round 0", nodes[0].proc.stderr)
        # It left on purpose: the other node ended with the job instead of re-forming.
        self.assertIn("every other node of round 0 left the job", nodes[1].proc.stderr)
        self.assertNotIn("round 1", logs)

    def test_fewer_than_min_nodes_end_the_watch_at_the_join_timeout(self):
        nodes = self.start(2, "2", join_timeout="4s")
        self.await_runs(nodes, 1)
        self.cluster.kill(nodes[1].proc, signal.SIGKILL)
        codes = self.cluster.wait_nodes(nodes[:1], timeout=DEADLINE)
        self.assertEqual(codes, [5], self.cluster.logs())  # join_timeout
        self.assertIn("still missing", nodes[0].proc.stderr)
        self.assertEqual(len(hook_runs(nodes[0])), 1)


if __name__ == "__main__":
    unittest.main()
