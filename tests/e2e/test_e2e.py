"""End to end with real clients: what gossip-rdzv agrees on must form a working torch gloo
process group (init_process_group("gloo", init_method="env://") + all_reduce).

Torch takes 2-4 s to import per process on a 2-core machine, so the deadlines are generous.
Run: GOSSIP_RDZV_BIN=... /usr/bin/python3 -m unittest -v test_e2e
"""
from __future__ import annotations

import json
import os
import signal
import sys
import unittest
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
from cluster import Cluster, check_consistent  # noqa: E402
from testlib import (await_checkpoint, elastic_results, free_ports,  # noqa: E402
                     read_checkpoint, temp_dir, wait_until)

PYTHON = "/usr/bin/python3"  # Debian's python3 with python3-torch
WORKER = str(HERE / "worker.py")
ELASTIC_WORKER = str(HERE / "elastic_worker.py")
NODES, NPROC = 4, 2
WORLD = NODES * NPROC
TORCH_TIMEOUT = 240.0


class TorchJobTest(unittest.TestCase):
    """A cluster of nodes under a temporary directory whose workers write to self.out
    (GR_E2E_OUT, inherited by the nodes, then the workers)."""

    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-e2e-")
        self.cluster = Cluster(self.tmp)
        self.addCleanup(self.cluster.close)
        self.out = self.tmp / "results"
        self.out.mkdir()
        self.setenv("GR_E2E_OUT", str(self.out))

    def setenv(self, name: str, value: str) -> None:
        """Sets a variable the nodes started from now on (and their workers) inherit."""
        os.environ[name] = value
        self.addCleanup(os.environ.pop, name, None)


class E2ETest(TorchJobTest):

    def check_results(self, logs: str) -> None:
        results = [json.loads((self.out / f"rank{r}.json").read_text())
                   for r in range(WORLD) if (self.out / f"rank{r}.json").exists()]
        self.assertEqual(len(results), WORLD, f"only {len(results)} of {WORLD} workers "
                         f"reported\n{logs}")
        expected_sum = WORLD * (WORLD + 1) // 2
        for result in results:
            self.assertEqual(result["world_size"], WORLD)
            self.assertEqual(result["sum"], expected_sum)
            self.assertEqual(sorted(result["node_ranks_seen"]),
                             sorted([n for n in range(NODES) for _ in range(NPROC)]))

    def test_env_files_to_gloo_workers(self):
        """gossip-rdzv writes env files and exits; we start the workers from those files."""
        nodes = self.cluster.start_nodes(NODES, nprocs=[NPROC] * NODES)
        codes = self.cluster.wait_nodes(nodes, timeout=60)
        self.assertEqual(codes, [0] * NODES, self.cluster.logs())
        check_consistent(self, nodes)

        workers = []
        for node in nodes:
            for local_rank in range(NPROC):
                env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
                env.update(node.env(local_rank))
                env["GR_E2E_OUT"] = str(self.out)
                workers.append(self.cluster.spawn(
                    f"worker-n{node.index}-l{local_rank}", [PYTHON, WORKER], env=env))
        codes = self.cluster.wait(workers, timeout=TORCH_TIMEOUT)
        logs = "\n".join(f"--- {w.name} exit={w.returncode}\n{w.stdout}{w.stderr[-3000:]}"
                         for w in workers)
        self.assertEqual(codes, [0] * WORLD, logs)
        self.check_results(logs)

    def test_join_runs_gloo_workers(self):
        """`gossip-rdzv join ... -- /usr/bin/python3 worker.py`: the CLI starts the workers."""
        nodes = self.cluster.start_nodes(NODES, nprocs=[NPROC] * NODES,
                                         extra=["--", PYTHON, WORKER])
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = "\n".join(f"--- node{n.index} exit={n.proc.returncode}\n{n.proc.stdout}"
                         f"{n.proc.stderr[-3000:]}" for n in nodes)
        self.assertEqual(codes, [0] * NODES, logs)
        check_consistent(self, nodes)
        self.check_results(logs)


class ElasticTest(TorchJobTest):
    """`join --max-restarts K -- CMD`: failures re-form the job instead of ending it."""

    def results(self, world: int, logs: str) -> list:
        found = [json.loads((self.out / f"rank{r}.json").read_text())
                 for r in range(world) if (self.out / f"rank{r}.json").exists()]
        self.assertEqual(len(found), world, f"only {len(found)} of {world} ranks finished\n{logs}")
        return found

    def test_a_worker_crash_restarts_every_node_and_the_job_finishes(self):
        self.setenv("GR_CRASH_RANK", "1")
        nodes = self.cluster.start_nodes(
            3, extra=["--max-restarts", "2", "--", PYTHON, str(HERE / "elastic_worker.py")])
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs(nodes)
        self.assertEqual(codes, [0, 0, 0], logs)
        for result in self.results(3, logs):
            self.assertEqual(result["world_size"], 3)
            self.assertEqual(result["restart_count"], 1)  # TORCHELASTIC_RESTART_COUNT
            self.assertGreater(result["resumed_from"], 0)  # from its checkpoint
            self.assertEqual(result["sum"], 6)
        self.assertIn("restart 1 of 2", logs)

    def test_restarts_exhausted_end_the_agent_with_the_failure(self):
        self.setenv("GR_CRASH_RANK", "0")
        self.setenv("GR_CRASH_EVERY_ROUND", "1")
        nodes = self.cluster.start_nodes(
            2, extra=["--max-restarts", "1", "--", PYTHON, str(HERE / "elastic_worker.py")])
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs(nodes)
        # The node that hosts RANK 0 (node ranks follow the natural order of the endpoints,
        # not the start order) ends the job after its one restart; the other stops its
        # workers, names that failure and ends with the same status.
        rank0 = min(range(2), key=lambda i: nodes[i].port)
        self.assertEqual(codes, [1, 1], logs)
        self.assertIn("local rank 0 (rank 0) on this node failed with exit status 1; "
                      "restarts exhausted (1 of 1 used)", self.cluster.logs([nodes[rank0]]))
        self.assertIn("the job failed: rank 0 on node", self.cluster.logs([nodes[1 - rank0]]))


def descendants(pid: int) -> List[int]:
    """Every process below `pid` (its workers, their children, the launcher's watchdog)."""
    children: Dict[int, List[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The parent pid follows the command name, which may hold spaces: after ')'.
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def signal_node(node, sig: int) -> None:
    """`sig` to a node's agent and everything below it, as a dying or frozen machine: the
    workers run in process groups of their own, so the agent's group alone would miss them."""
    for pid in [node.proc.popen.pid, *descendants(node.proc.popen.pid)]:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class ElasticFaultTest(TorchJobTest):
    """Issue #22: an elastic job (`--nnodes 2:3`, one gloo worker per node) survives a node
    that dies mid-job. The workers run GR_STEPS slow steps, so each fault
    lands mid-job; each test awaits the checkpoint that says the job got that far."""

    STEPS, STEP_SECONDS = 50, 0.25
    # Faults land once round 0 saved this step.
    FAULT_STEP = 4

    def setUp(self) -> None:
        super().setUp()
        self.setenv("GR_STEPS", str(self.STEPS))
        self.setenv("GR_STEP_SECONDS", str(self.STEP_SECONDS))
        # Default --last-call (30 s): it holds round 0 only (three nodes reach MAX at once);
        # the round the survivors re-form waits five gossip periods, not 30 s.
        self.args = ["--max-restarts", "1", "--", PYTHON, ELASTIC_WORKER]

    def checkpoint(self) -> dict:
        return read_checkpoint(self.out / "checkpoint.json")

    def await_step(self, step: int, min_restart: int = 0, timeout: float = TORCH_TIMEOUT) -> None:
        """Waits until the job saved `step` in round `min_restart` or later."""
        await_checkpoint(self.out / "checkpoint.json", step, min_restart, timeout,
                         self.cluster.logs, running=lambda: any(
                             n.proc.poll() is None for n in self.cluster.nodes))

    def check_finished(self, world: int, logs: str, min_restart: int = 1) -> List[dict]:
        """Every rank of the last round reported: world size `world`, resumed from a checkpoint
        and the sum of a full group."""
        found = elastic_results(self, self.out, world, logs)
        for result in found:
            self.assertGreaterEqual(result["restart_count"], min_restart, logs)
            self.assertGreater(result["resumed_from"], 0, logs)  # from the checkpoint
        return found

    def start_three(self, join_timeout: str = "60s", all_seeds: bool = False) -> list:
        """Three nodes of `--nnodes 2:3`; the first is the seed (every one with `all_seeds`)."""
        ports = free_ports(3)
        seeds = [f"127.0.0.1:{p}" for p in (ports if all_seeds else ports[:1])]
        nodes = [self.cluster.add_node(seeds, "2:3", port=port, extra=self.args,
                                       join_timeout=join_timeout, start=False)
                 for port in ports]
        for node in nodes:
            self.cluster.start_node(node)
        return nodes

    def test_a_killed_node_leaves_two_survivors_that_finish(self):
        # The survivors' workers fail first (their gloo connections to the dead node reset):
        # that is the membership change, not a worker failure, and uses no restart.
        nodes = self.start_three()
        self.await_step(self.FAULT_STEP)
        victim = nodes[2]  # not the seed
        signal_node(victim, signal.SIGKILL)
        survivors = nodes[:2]
        codes = self.cluster.wait_nodes(survivors, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs()
        self.assertEqual(codes, [0, 0], logs)
        self.assertEqual(victim.proc.poll(), -signal.SIGKILL, logs)
        self.check_finished(2, logs)
        for node in survivors:
            self.assertIn("of round 0", node.proc.stderr, logs)
            self.assertIn("(no restart used)", node.proc.stderr, logs)
        # Their workers failed before the death was declared, and that was put down to it.
        self.assertTrue(any("which that change explains" in n.proc.stderr for n in survivors),
                        logs)
        self.assertNotIn("restart 1 of 1", logs)

    def test_a_frozen_node_is_left_out_and_its_workers_stop_when_it_wakes(self):
        # The survivors re-form without it; when it wakes while they run, its old workers
        # fail, and that must neither use its restart nor end the survivors' job (it was
        # left out of their round). A longer job, so that it wakes with most of it to run.
        self.setenv("GR_STEPS", str(2 * self.STEPS))
        nodes = self.start_three()
        self.await_step(self.FAULT_STEP)
        victim = nodes[2]
        signal_node(victim, signal.SIGSTOP)
        # The survivors go on in round 1 without it.
        self.await_step(self.FAULT_STEP + 4, min_restart=1)
        self.assertEqual(self.checkpoint().get("world"), 2)
        frozen_workers = descendants(victim.proc.popen.pid)
        signal_node(victim, signal.SIGCONT)
        # It learns it was left out and stops (or finds failed) its round-0 workers, never
        # running them next to the survivors' round; the job has room, so it joins a later
        # round (an arrival: no restart) and the three finish together.
        for pid in frozen_workers:
            wait_until(lambda: not pid_alive(pid), 30, f"worker {pid} of the woken node to stop")
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs()
        self.assertEqual(codes, [0, 0, 0], logs)
        self.assertIn("of round 0", victim.proc.stderr, logs)
        self.assertIn("(no restart used)", victim.proc.stderr, logs)
        self.assertNotIn("restart 1 of 1", logs)
        self.check_finished(3, logs, min_restart=2)

    def test_a_node_arriving_below_max_grows_the_job_and_uses_no_restart(self):
        # The third node's worker, rank 1 of round 1 or later, crashes once in round 1: the job
        # recovers only if the arrival did not use the one restart allowed.
        self.setenv("GR_CRASH_RANK", "1")
        self.setenv("GR_CRASH_ROUND", "1")
        self.setenv("GR_CRASH_STEP", str(self.FAULT_STEP + 8))
        self.args = ["--last-call", "1s", *self.args]
        # The arrival gets the lowest port: by natural order alone it would take node rank 0.
        ports = sorted(free_ports(3))
        seeds = [f"127.0.0.1:{ports[1]}"]
        first_two = [self.cluster.add_node(seeds, "2:3", port=port, extra=self.args,
                                           join_timeout="60s") for port in ports[1:]]
        self.await_step(self.FAULT_STEP)
        self.assertEqual(self.checkpoint().get("world"), 2)
        round0 = json.loads(first_two[0].membership_path.read_text())
        self.assertEqual(round0["round"], 0)
        arrival = self.cluster.add_node(seeds, "2:3", port=ports[0], extra=self.args,
                                        join_timeout="60s")
        nodes = first_two + [arrival]
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs()
        self.assertEqual(codes, [0, 0, 0], logs)
        found = self.check_finished(3, logs, min_restart=2)
        self.assertEqual(found[0]["restart_count"], 2, logs)  # growth, then the crash
        # Stable ranks: the two survivors in their round-0 order, the arrival after them.
        last = json.loads(arrival.membership_path.read_text())
        self.assertEqual(last["round"], 2, logs)
        self.assertEqual([n["endpoint"] for n in last["nodes"]],
                         [n["endpoint"] for n in round0["nodes"]] + [arrival.endpoint], logs)

    def test_the_seed_killed_mid_job_and_restarted_rejoins_and_the_job_goes_on(self):
        # The seed's death is a membership change (the survivors' workers that fail first, as
        # gloo's connections reset, use no restart), its return an arrival below MAX.
        # Three seeds: a round needs a majority of the seed list (docs/protocol.md, "Quorum
        # base"), so with one seed its death would stop the survivors until it returns.
        nodes = self.start_three(all_seeds=True)
        self.await_step(self.FAULT_STEP)
        seed = nodes[0]
        signal_node(seed, signal.SIGKILL)
        self.cluster.wait([seed.proc], timeout=30)
        # The survivors go on without it, then it comes back on its port with its command.
        self.await_step(self.FAULT_STEP + 4, min_restart=1)
        self.assertEqual(self.checkpoint().get("world"), 2)
        self.cluster.start_node(seed)
        codes = self.cluster.wait_nodes(nodes, timeout=TORCH_TIMEOUT)
        logs = self.cluster.logs()
        self.assertEqual(codes, [0, 0, 0], logs)
        self.check_finished(3, logs, min_restart=2)
        self.assertNotIn("restart 1 of 1", logs)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
