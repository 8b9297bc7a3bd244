"""Kills the first node of a two-node job (SIGKILL) the moment its env file appears, restarts
it at once on the same port, many times over: whatever the timing, the outcomes of one round
agree (issue 21), and no worker of the killed agent outlives it.

Run: GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv /usr/bin/python3 -m unittest -v test_kill_loop
GOSSIP_RDZV_KILL_LOOP_ITERATIONS=N sets the number of iterations (default 20: about 20 s, plus
20 s for each restart that ends in a join timeout).
"""
from __future__ import annotations

import collections
import os
import signal
import sys
import time
import unittest
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster, Node  # noqa: E402
from testlib import free_ports, parse_env_file, signal_group, temp_dir, wait_until  # noqa: E402

ITERATIONS = int(os.environ.get("GOSSIP_RDZV_KILL_LOOP_ITERATIONS", "20"))
# How each iteration goes, in turn: node 1 runs workers and is killed the moment its env
# file appears (usually before it started them); it is killed once its workers recorded
# their pids (so there is something that must die with it); no workers (env-file mode, where
# the agent exits right after the outcome is known), killed at the env file.
MODES = ("workers, kill at env file", "workers, kill once they run", "env file only")
JOIN_TIMEOUT = "20s"
# Bound on one iteration's processes: the join timeout, the seed's stay and slack for a
# loaded machine.
ITERATION_TIMEOUT = 60.0
# Exit codes a node that was not killed may end with: committed (0), the round closed
# without it (9), or the join timed out (5: liveness may be lost when the killed node had
# committed; safety may not). 143: committed, and its workers were stopped by this test.
SURVIVOR_CODES = (0, 5, 9)
STOPPED_BY_TEST = 128 + signal.SIGTERM
# The fields every outcome of one round must agree on.
AGREED_KEYS = ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
               "TORCHELASTIC_RESTART_COUNT")


def pid_gone(pid: int) -> bool:
    """True when `pid` no longer runs: no such process, or a zombie nobody reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def worker_command(pid_file: Path) -> List[str]:
    """A worker that records its pid and that of a child it starts in its process group (a
    data loader, say), then sleeps long."""
    return ["--", "/bin/sh", "-c",
            f'sleep 600 & echo "$! $$" >> "{pid_file}"; wait']


class KillLoopTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-kill-loop-")
        self.outcomes: collections.Counter = collections.Counter()

    def test_killed_first_node_restarts_and_outcomes_agree(self):
        started = time.monotonic()
        self.workers_checked = 0
        for iteration in range(ITERATIONS):
            mode = MODES[iteration % len(MODES)]
            with Cluster(self.tmp / f"iter{iteration}") as cluster:
                with self.subTest(iteration=iteration, mode=mode):
                    self.run_iteration(cluster, iteration, mode)
        print(f"\n{ITERATIONS} iterations in {time.monotonic() - started:.1f} s; "
              f"outcomes (first, restart, second): {dict(self.outcomes)}; "
              f"killed agents whose workers were checked: {self.workers_checked}")
        if ITERATIONS >= len(MODES):
            self.assertGreater(self.workers_checked, 0, "no killed agent had started workers")

    def run_iteration(self, cluster: Cluster, iteration: int, mode: str) -> None:
        with_workers = mode != "env file only"
        run_id = f"kill-loop-{os.getpid()}-{iteration}"
        ports = free_ports(2)
        seed = [f"127.0.0.1:{ports[0]}"]

        def start(port: int) -> Node:
            # Each process gets a directory of its own (its env files, its workers' pids).
            node = cluster.add_node(seed, "2", port=port, run_id=run_id,
                                    join_timeout=JOIN_TIMEOUT, start=False)
            if with_workers:
                node.args += worker_command(node.dir / "workers.pids")
            cluster.start_node(node)
            return node

        first = start(ports[0])
        second = start(ports[1])
        if mode == "workers, kill once they run":
            ready, what = (lambda: self.worker_pids(first)), "node 1's workers to start"
        else:
            ready, what = (lambda: first.env_path(0).exists()), "node 1's env file"
        wait_until(lambda: ready() or first.proc.poll() is not None,
                   timeout=ITERATION_TIMEOUT, interval=0.002, what=f"{what} or its exit")
        killed = first.proc.poll() is None
        if killed:
            # The agent only, not its process group: its workers must follow on their own.
            os.kill(first.proc.popen.pid, signal.SIGKILL)
        cluster.wait([first.proc], timeout=10)  # reaped: its port is free again
        restart = start(ports[0])
        survivors = [restart, second]
        if with_workers:
            self.stop_workers_once_committed(cluster, survivors)
        codes = cluster.wait([n.proc for n in survivors], timeout=ITERATION_TIMEOUT)
        logs = cluster.logs()
        self.outcomes[(first.proc.returncode, *codes)] += 1

        for node, code in zip(survivors, codes):
            allowed = SURVIVOR_CODES + ((STOPPED_BY_TEST,) if with_workers else ())
            self.assertIn(code, allowed, f"node{node.index} exit {code}\n{logs}")
            if code == STOPPED_BY_TEST:
                self.assertTrue(node.env_path(0).exists(),
                                f"node{node.index} was stopped before it committed\n{logs}")
        if not killed:
            self.assertIn(first.proc.returncode, SURVIVOR_CODES, logs)
        self.check_one_outcome([first, restart, second], logs)
        if with_workers:
            self.check_workers_gone(first, logs)

    @staticmethod
    def stop_workers_once_committed(cluster: Cluster, nodes: List[Node]) -> None:
        """The survivors' workers sleep too; once a survivor committed (its env file is
        there), SIGTERM to it reaches them and it exits 143."""
        pending = list(nodes)

        def step() -> bool:
            for node in list(pending):
                if node.proc.poll() is not None:
                    pending.remove(node)
                elif node.env_path(0).exists():
                    node.proc.popen.send_signal(signal.SIGTERM)
                    pending.remove(node)
            return not pending

        wait_until(step, timeout=ITERATION_TIMEOUT, interval=0.02,
                   what="the survivors to commit or exit")

    def check_one_outcome(self, nodes: List[Node], logs: str) -> None:
        """Every env file of the iteration describes the same round, and no rank is given to
        two processes."""
        envs: Dict[str, Dict[str, str]] = {}
        for node in nodes:
            if node.env_path(0).exists():
                envs[f"node{node.index}"] = parse_env_file(node.env_path(0))
        for key in AGREED_KEYS:
            values = {name: env.get(key) for name, env in envs.items()}
            self.assertEqual(len(set(values.values())), 1 if values else 0,
                             f"two outcomes for one round: {key} {values}\n{logs}")
        owners: Dict[str, str] = {}
        for name, env in envs.items():
            other = owners.setdefault(env["RANK"], name)
            self.assertEqual(other, name,
                             f"RANK {env['RANK']} given to {other} and {name}\n{logs}")

    @staticmethod
    def worker_pids(node: Node) -> List[int]:
        """The pids `node`'s workers recorded, from complete lines only (one echo each)."""
        pid_file = node.dir / "workers.pids"
        if not pid_file.exists():
            return []
        lines = pid_file.read_text().split("\n")[:-1]  # the last one is not finished yet
        return [int(p) for line in lines for p in line.split()]

    def check_workers_gone(self, node: Node, logs: str) -> None:
        pids = self.worker_pids(node)
        self.workers_checked += 1 if pids else 0
        for pid in pids:
            try:
                wait_until(lambda: pid_gone(pid), timeout=5.0, interval=0.02,
                           what=f"process {pid} of the killed agent's worker to die")
            except TimeoutError as error:
                signal_group(os.getpgid(pid))  # leave nothing behind
                self.fail(f"node{node.index}: {error}\n{logs}")


if __name__ == "__main__":
    unittest.main()
