"""Many real `gossip-rdzv` processes on loopback: they must agree, and every file they write
must describe one and the same assignment. Failures must exit with the documented code and a
message naming the cause.

Run: GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv /usr/bin/python3 -m unittest -v test_cluster
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster, check_consistent  # noqa: E402
from testlib import REPO, free_port, free_ports, parse_env_file, temp_dir, wait_until  # noqa: E402

# Seconds a healthy rendezvous of up to 8 local nodes may take, generously (2 shared cores,
# other tests running in parallel).
CONVERGE_TIMEOUT = 60.0


class ClusterTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-cluster-")
        self.cluster = Cluster(self.tmp)
        self.addCleanup(self.cluster.close)

    def members_at(self, node, expected) -> bool:
        result = self.cluster.run([self.cluster.bin, "members", "--seed", node.endpoint,
                                   "--run-id", "cluster-test", "--format", "json",
                                   "--timeout", "2s"], timeout=15)
        return result.returncode == 0 and all(n.endpoint in result.stdout for n in expected)

    def converge(self, nodes, timeout: float = CONVERGE_TIMEOUT):
        codes = self.cluster.wait_nodes(nodes, timeout=timeout)
        self.assertEqual(codes, [0] * len(nodes), self.cluster.logs(nodes))
        return check_consistent(self, nodes)

    def assert_natural_order(self, nodes, membership):
        """Without hints, node ranks follow natural order of (hostname, host, endpoint): on one
        machine, the port number."""
        by_port = sorted(nodes, key=lambda n: n.port)
        self.assertEqual([e["endpoint"] for e in membership["nodes"]],
                         [n.endpoint for n in by_port])


class SizesTest(ClusterTest):
    """N nodes, node 1 the seed of all (the seed names itself, as on a real cluster)."""

    def run_size(self, count: int):
        nodes = self.cluster.start_nodes(count)
        membership = self.converge(nodes)
        self.assert_natural_order(nodes, membership)
        for node in nodes:
            stdout = node.proc.stdout
            self.assertIn(f"WORLD_SIZE={count}", stdout, f"node{node.index} stdout: {stdout}")
            self.assertIn("MASTER_ADDR=127.0.0.1", stdout)

    def test_two_nodes(self):
        self.run_size(2)

    def test_four_nodes(self):
        self.run_size(4)

    def test_eight_nodes(self):
        self.run_size(8)

    def test_single_node_seeding_itself(self):
        nodes = self.cluster.start_nodes(1)
        self.converge(nodes)

    def test_seed_is_not_the_first_node(self):
        nodes = self.cluster.start_nodes(3, seed_index=2)
        self.converge(nodes)

    def test_several_member_seeds(self):
        """Eight nodes run the same command with `--seed A,B,C,D`: four of them are the seeds
        and must meet each other (docs/protocol.md, "Several seeds")."""
        ports = free_ports(8)
        seeds = [f"127.0.0.1:{port}" for port in ports[:4]]
        nodes = [self.cluster.add_node(seeds, "8", port=port, start=False) for port in ports]
        for node in nodes:
            self.cluster.start_node(node)
        membership = self.converge(nodes)
        self.assert_natural_order(nodes, membership)


class MixedTest(ClusterTest):
    def test_mixed_nproc_per_node(self):
        nodes = self.cluster.start_nodes(4, nprocs=[1, 2, 3, 2])
        membership = self.converge(nodes)
        self.assertEqual(membership["world_size"], 8)
        for node in nodes:
            for local_rank in range(node.nproc):
                env = node.env(local_rank)
                self.assertEqual(env["LOCAL_WORLD_SIZE"], str(node.nproc))
                self.assertEqual(env["WORLD_SIZE"], "8")

    def test_min_max_with_last_call(self):
        nodes = self.cluster.start_nodes(3, nnodes="2:4", extra=["--last-call", "1s"])
        membership = self.converge(nodes)
        self.assertEqual(membership["nnodes"], 3)
        self.assertEqual(membership["world_size"], 3)

    def test_output_formats(self):
        ports = free_ports(3)
        seed = [f"127.0.0.1:{ports[0]}"]
        nodes = [
            self.cluster.add_node(seed, "3", port=ports[0], extra=["--format", "json"]),
            self.cluster.add_node(seed, "3", port=ports[1], extra=["--format", "export"]),
            self.cluster.add_node(seed, "3", port=ports[2], extra=["--format", "env"]),
        ]
        self.converge(nodes)
        as_json = json.loads(nodes[0].proc.stdout)
        self.assertIn("3", json.dumps(as_json))  # parses; the content is the assignment
        self.assertIn("export WORLD_SIZE=3", nodes[1].proc.stdout)
        self.assertIn("WORLD_SIZE=3", nodes[2].proc.stdout)
        self.assertNotIn("export ", nodes[2].proc.stdout)


class DedicatedSeedTest(ClusterTest):
    """`gossip-rdzv seed`: introduces joiners, is not a member, and is not needed afterwards."""

    def start_seed(self, port=None, seed_list=()):
        port = port or free_port()
        args = [self.cluster.bin, "seed", "--listen", f"127.0.0.1:{port}", "--run-id",
                "cluster-test", "--profile", "local"]
        if seed_list:
            args += ["--seed", ",".join(seed_list)]
        seed = self.cluster.spawn("seed", args)
        return seed, f"127.0.0.1:{port}"

    def start_three_seeds(self):
        """Three dedicated seeds that know each other: the job's quorum base."""
        ports = free_ports(3)
        endpoints = [f"127.0.0.1:{p}" for p in ports]
        seeds = [self.start_seed(p, endpoints)[0] for p in ports]
        return seeds, endpoints

    def members_listed(self, seed_endpoint: str, nodes) -> bool:
        """Whether `gossip-rdzv members` at the seed lists every node of `nodes`."""
        result = self.cluster.run([self.cluster.bin, "members", "--seed", seed_endpoint,
                                   "--run-id", "cluster-test", "--format", "json",
                                   "--timeout", "2s"], timeout=15)
        return result.returncode == 0 and all(n.endpoint in result.stdout for n in nodes)

    def members_listed_anywhere(self, nodes) -> bool:
        return all(self.members_at(n, nodes) for n in nodes)

    def test_nodes_converge_after_one_of_three_seeds_is_killed(self):
        seeds, endpoints = self.start_three_seeds()
        nodes = [self.cluster.add_node(endpoints, "4") for _ in range(4)]
        wait_until(lambda: self.members_listed_anywhere(nodes)
                   or all(n.proc.poll() is not None for n in nodes),
                   timeout=CONVERGE_TIMEOUT, interval=0.05, what="every node to know all 4")
        self.cluster.kill(seeds[0], signal.SIGKILL)
        self.converge(nodes)
        seeds[0].popen.wait(timeout=10)
        self.assertIsNotNone(seeds[0].poll(), "the killed seed is still running")

    def test_last_node_joins_after_one_of_three_seeds_is_killed(self):
        # 3 of 4 nodes join; one seed dies; the 4th names the same three seeds. The view can
        # only complete after that seed is gone, witnessed by the two left.
        seeds, endpoints = self.start_three_seeds()
        first = [self.cluster.add_node(endpoints, "4") for _ in range(3)]
        wait_until(lambda: self.members_listed_anywhere(first), timeout=CONVERGE_TIMEOUT,
                   interval=0.05, what="the first 3 nodes to know each other")
        self.cluster.kill(seeds[1], signal.SIGKILL)
        seeds[1].popen.wait(timeout=10)
        for node in first:
            self.assertIsNone(node.proc.poll(), "a node exited before the view was complete:\n"
                              + self.cluster.logs(first))
        last = self.cluster.add_node(endpoints, "4")
        self.converge(first + [last])

    def test_the_only_seed_killed_before_the_commit_stops_the_round_and_names_it(self):
        # With one seed, the seed list's majority is that seed: nobody can tell its death
        # from a partition behind which it agrees with others, so the round waits and the
        # timeout says so (docs/protocol.md, "Quorum base").
        seed, seed_endpoint = self.start_seed()
        first = [self.cluster.add_node([seed_endpoint], "2:3", join_timeout="8s",
                                       extra=["--last-call", "3s"]) for _ in range(2)]
        wait_until(lambda: self.members_listed(seed_endpoint, first), timeout=CONVERGE_TIMEOUT,
                   interval=0.05, what="the seed to list the first 2 nodes")
        self.cluster.kill(seed, signal.SIGKILL)  # during the last call: nothing agreed yet
        seed.popen.wait(timeout=10)
        codes = self.cluster.wait([n.proc for n in first], timeout=30)
        self.assertEqual(codes, [5, 5], self.cluster.logs(first))
        for node in first:
            self.assertFalse(node.files_written(), "an env file was written without the seed")
            self.assertIn("majority of the seed list", node.proc.stderr, node.proc.stderr)
            self.assertIn(seed_endpoint, node.proc.stderr, node.proc.stderr)

    def run_elastic_job_then_a_late_node(self, worker: str):
        """Two nodes run an elastic job of `worker` to its end through a dedicated seed; then a
        third node starts with the same run id. Returns the job's codes, the late node's code
        and its log."""
        _, seed = self.start_seed()
        extra = ["--max-restarts", "1", "--", "sh", "-c", worker]
        nodes = [self.cluster.add_node([seed], "2", extra=extra) for _ in range(2)]
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        late = self.cluster.add_node([seed], "2", extra=extra)
        late_code = self.cluster.wait_nodes([late], timeout=CONVERGE_TIMEOUT)[0]
        return codes, late_code, self.cluster.logs([late]) + self.cluster.logs(nodes)

    def test_a_node_started_after_the_job_finished_is_told_so(self):
        codes, late_code, logs = self.run_elastic_job_then_a_late_node("exit 0")
        self.assertEqual(codes, [0, 0], logs)
        self.assertEqual(late_code, 12, logs)  # job_over, not a join timeout
        self.assertIn("the job of this run id already finished", logs)

    def test_a_node_started_after_the_job_failed_is_told_who_failed_it(self):
        codes, late_code, logs = self.run_elastic_job_then_a_late_node("exit 3")
        self.assertEqual(codes, [3, 3], logs)
        self.assertEqual(late_code, 12, logs)
        self.assertIn("the job failed: rank ", logs)
        self.assertIn("failed with exit status 3", logs)

    def test_seed_is_not_a_member(self):
        seed, seed_endpoint = self.start_seed()
        nodes = [self.cluster.add_node([seed_endpoint], "2") for _ in range(2)]
        membership = self.converge(nodes)
        self.assertNotIn(seed_endpoint, [e["endpoint"] for e in membership["nodes"]])
        self.assertIsNone(seed.poll(), "the dedicated seed must run until it is stopped")
        self.cluster.kill(seed, signal.SIGTERM)
        self.assertEqual(self.cluster.wait([seed], timeout=15), [0], seed.stderr)


def group_alive(pgid: int) -> bool:
    """Whether any process is left in process group `pgid`."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class JobEndStayTest(ClusterTest):
    """Issue #22: with member seeds only, once every agent of an elastic job exited, the seed
    node's stay (`--stay-after-job`) still tells a node started late that the job is over."""

    def run_job(self, worker: str, stay: str = "60s"):
        """Two nodes, the first the only seed, run an elastic job of `worker` to its end.
        Returns the nodes, their codes and the seed list."""
        ports = free_ports(2)
        seed = [f"127.0.0.1:{ports[0]}"]
        extra = ["--max-restarts", "1", "--stay-after-job", stay, "--", "sh", "-c", worker]
        nodes = [self.cluster.add_node(seed, "2", port=port, extra=extra) for port in ports]
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        return nodes, codes, seed

    def late_node(self, seed, worker: str, **kwargs):
        late = self.cluster.add_node(seed, "2", extra=["--max-restarts", "1", "--", "sh", "-c",
                                                       worker], **kwargs)
        return late, self.cluster.wait_nodes([late], timeout=CONVERGE_TIMEOUT)[0]

    def test_a_node_started_after_every_agent_exited_is_told_the_job_finished(self):
        nodes, codes, seed = self.run_job("exit 0")
        logs = self.cluster.logs(nodes)
        self.assertEqual(codes, [0, 0], logs)
        self.assertRegex(logs, r"a process of this seed node \(pid \d+\) stays 60 s in the "
                               r"background")
        self.assertNotIn("stays", nodes[1].proc.stderr, "a node the seed list does not name "
                         "has no late starters to tell")
        late, code = self.late_node(seed, "exit 0")
        logs = self.cluster.logs([late] + nodes)
        self.assertEqual(code, 12, logs)  # job_over, not a join timeout
        self.assertIn("the job of this run id already finished", late.proc.stderr, logs)
        # SIGTERM ends the stay at once.
        self.assertTrue(group_alive(nodes[0].proc.popen.pid), "the stay is gone already")
        os.killpg(nodes[0].proc.popen.pid, signal.SIGTERM)
        wait_until(lambda: not group_alive(nodes[0].proc.popen.pid), timeout=10,
                   interval=0.05, what="the stay to end on SIGTERM")

    def test_a_node_started_after_every_agent_exited_is_told_who_failed_the_job(self):
        nodes, codes, seed = self.run_job("exit 3")
        self.assertEqual(codes, [3, 3], self.cluster.logs(nodes))
        late, code = self.late_node(seed, "exit 0")
        logs = self.cluster.logs([late] + nodes)
        self.assertEqual(code, 12, logs)
        self.assertIn("the job failed: rank ", late.proc.stderr, logs)
        self.assertIn("failed with exit status 3", late.proc.stderr, logs)

    def test_the_stay_ends_after_its_time_leaving_nothing_running(self):
        nodes, codes, seed = self.run_job("exit 0", stay="1s")
        self.assertEqual(codes, [0, 0], self.cluster.logs(nodes))
        wait_until(lambda: not group_alive(nodes[0].proc.popen.pid), timeout=20,
                   interval=0.05, what="the seed node's stay to end")
        # The documented limit: after the stay nobody answers, and a late node times out.
        late, code = self.late_node(seed, "exit 0", join_timeout="2s")
        self.assertEqual(code, 4, self.cluster.logs([late]))
        self.assertIn("--stay-after-job", late.proc.stderr)  # the error names the limit

    def test_sigterm_while_waiting_for_the_others_to_finish_ends_the_agent_without_a_stay(self):
        ports = free_ports(2)
        seed = [f"127.0.0.1:{ports[0]}"]
        ready = self.tmp / "ready"
        quick = ["--max-restarts", "1", "--", "sh", "-c", "exit 0"]
        slow = ["--max-restarts", "1", "--", "sh", "-c", f"touch {ready}; sleep 60"]
        first = self.cluster.add_node(seed, "2", port=ports[0], extra=quick)
        second = self.cluster.add_node(seed, "2", port=ports[1], extra=slow)
        wait_until(lambda: "waiting for the other nodes' to finish" in first.proc.stderr,
                   timeout=CONVERGE_TIMEOUT, what="the first node to wait for the second")
        self.cluster.kill(first.proc, signal.SIGTERM)  # its group: join and its child
        self.assertEqual(self.cluster.wait_nodes([first], timeout=15), [128 + signal.SIGTERM],
                         self.cluster.logs([first]))
        self.assertIn("interrupted by Terminated while waiting for the other nodes",
                      first.proc.stderr)
        self.assertNotIn("stays", first.proc.stderr)
        self.assertIsNone(second.proc.poll())

    def test_the_job_started_again_on_the_seed_node_ends_the_stay(self):
        # Started again with the same run id while the seed node's stay runs: the new agent on
        # the seed's port ends the stay and a new job forms (the seed node starting first, as
        # the stay would tell an earlier node that the job is over).
        nodes, codes, seed = self.run_job("exit 0")
        self.assertEqual(codes, [0, 0], self.cluster.logs(nodes))
        for node in nodes:
            self.cluster.start_node(node)
            if node is nodes[0]:
                wait_until(lambda: "ended that and took the port" in nodes[0].proc.stderr,
                           timeout=CONVERGE_TIMEOUT, interval=0.05,
                           what="the new seed node to take its port from the stay")
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        self.assertEqual(codes, [0, 0], self.cluster.logs(nodes))


def children(pid: int):
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class SplitAgentTest(ClusterTest):
    """An elastic agent is two processes (tools/gossip-rdzv/handoff.hpp): `join`, which only
    waits, and its child, which runs the node and the workers. The caller must see one."""

    def start_one(self, worker: str, pass_fds=()):
        port = free_port()
        seed = [f"127.0.0.1:{port}"]
        args = [self.cluster.bin, "join", "--seed", seed[0], "--listen", seed[0], "--nnodes",
                "1", "--run-id", "split-test", "--profile", "local", "--max-restarts", "1",
                "--", "sh", "-c", worker]
        out = self.tmp / f"agent-{port}.err"
        with open(out, "wb") as stderr:
            popen = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=stderr, start_new_session=True, pass_fds=pass_fds)
        self.addCleanup(lambda: (os.killpg(popen.pid, signal.SIGKILL)
                                 if group_alive(popen.pid) else None, popen.wait()))
        return popen, out

    def test_a_child_killed_by_a_signal_shows_as_join_killed_by_it(self):
        ready = self.tmp / "ready"
        popen, _ = self.start_one(f"touch {ready}; sleep 60")
        wait_until(ready.exists, timeout=CONVERGE_TIMEOUT, what="the worker to start")
        (child,) = children(popen.pid)
        os.kill(child, signal.SIGKILL)
        self.assertEqual(popen.wait(timeout=30), -signal.SIGKILL)

    def test_a_signal_passed_on_by_join_and_sent_to_the_child_as_well_reaches_workers_once(self):
        # A signal to the whole process group reaches `join` and its child; `join` passes its
        # copy on. The launcher takes the two as one: the worker logs one SIGTERM for them,
        # and a later one again.
        log, ready = self.tmp / "terms", self.tmp / "ready"
        worker = (f"trap 'date +%s.%N >> {log}; [ $(wc -l < {log}) -ge 2 ] && exit 0' TERM; "
                  f"touch {ready}; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done")
        popen, err = self.start_one(worker)
        wait_until(ready.exists, timeout=CONVERGE_TIMEOUT, what="the worker to start")
        (child,) = children(popen.pid)
        os.kill(child, signal.SIGTERM)  # as the group's signal reaches the child
        wait_until(lambda: log.exists() and log.read_text().count("\n") >= 1, timeout=10,
                   interval=0.02, what="the worker to get the first SIGTERM")
        os.kill(popen.pid, signal.SIGTERM)  # join's copy, which it passes on
        time.sleep(1.2)  # past the window in which a copy from join counts as the same signal
        third = time.time()
        os.kill(child, signal.SIGTERM)  # a new signal: it reaches the worker
        self.assertIsNotNone(popen.wait(timeout=30), err.read_text())
        stamps = [float(line) for line in log.read_text().split()]
        self.assertEqual(len(stamps), 2, stamps)
        self.assertGreaterEqual(stamps[1], third - 0.05, "join's copy reached the worker as a "
                                "second SIGTERM")

    def test_a_signal_to_join_then_to_its_group_reaches_workers_once(self):
        # What coreutils' `timeout` does when its time is up: SIGTERM to join's pid, then to
        # the whole group. join passes the first on, gets the second too, and its child gets
        # that one directly. The worker logs each SIGTERM and, after the first, waits two
        # seconds for a second before it exits.
        log, ready = self.tmp / "terms", self.tmp / "ready"
        worker = (f"trap 'date +%s.%N >> {log}; n=1' TERM; n=0; touch {ready}; i=0; "
                  f"while [ $i -lt 600 ] && [ $n -eq 0 ]; do sleep 0.1; i=$((i+1)); done; "
                  f"i=0; while [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done")
        popen, err = self.start_one(worker)
        wait_until(ready.exists, timeout=CONVERGE_TIMEOUT, what="the worker to start")
        os.kill(popen.pid, signal.SIGTERM)
        wait_until(lambda: log.exists() and log.read_text().count("\n") >= 1, timeout=10,
                   interval=0.01, what="join to pass the SIGTERM on to the worker")
        os.killpg(popen.pid, signal.SIGTERM)  # within the second in which it counts as one
        popen.wait(timeout=30)  # the worker exits 0 after its two seconds, and so does join
        self.assertEqual(len(log.read_text().split()), 1, err.read_text())

    def test_the_stay_holds_no_descriptor_of_the_caller_and_ignores_a_hang_up(self):
        read_end, write_end = os.pipe()
        popen, err = self.start_one("exit 0", pass_fds=(write_end,))
        os.close(write_end)
        self.assertEqual(popen.wait(timeout=CONVERGE_TIMEOUT), 0, err.read_text())
        # The stay (60 s) runs on, yet the pipe the caller passed down is closed.
        readable, _, _ = select.select([read_end], [], [], 20)
        self.assertEqual(readable, [read_end], "the stay still holds the caller's pipe")
        self.assertEqual(os.read(read_end, 1), b"")
        os.close(read_end)
        stay = int(re.search(r"\(pid (\d+)\)", err.read_text()).group(1))
        os.kill(stay, signal.SIGHUP)  # its terminal hung up when `join` exited
        late = self.cluster.add_node([f"127.0.0.1:{popen.args[5].rpartition(':')[2]}"], "1",
                                     run_id="split-test",
                                     extra=["--max-restarts", "1", "--", "true"])
        self.assertEqual(self.cluster.wait_nodes([late], timeout=CONVERGE_TIMEOUT), [12],
                         self.cluster.logs([late]))


class RestartTest(ClusterTest):
    """A node that dies and restarts on the same endpoint (new incarnation) mid-round, and a
    joiner that arrives at the very end of the last call: agreement must still hold."""

    def test_node_restarts_mid_round(self):
        ports = free_ports(4)
        seed = [f"127.0.0.1:{ports[0]}"]
        first = [self.cluster.add_node(seed, "4", port=p) for p in ports[:3]]
        wait_until(lambda: self.members_at(first[0], first), timeout=CONVERGE_TIMEOUT,
                   interval=0.05, what="node 1 to know the first 3 nodes")
        victim = first[1]
        self.cluster.kill(victim.proc, signal.SIGKILL)
        self.cluster.wait([victim.proc], timeout=10)
        self.cluster.start_node(victim)  # same endpoint, same files, new process
        last = self.cluster.add_node(seed, "4", port=ports[3])
        membership = self.converge(first + [last])
        self.assertEqual(membership["nnodes"], 4)

    def test_joiner_at_the_end_of_the_last_call(self):
        # Whether the third node makes it into the round is a race on purpose; what must
        # hold either way: the nodes that succeed agree, and exactly they form the view.
        ports = free_ports(3)
        seed = [f"127.0.0.1:{ports[0]}"]
        extra = ["--last-call", "1s"]
        first = [self.cluster.add_node(seed, "2:3", port=p, extra=extra, join_timeout="8s")
                 for p in ports[:2]]
        wait_until(lambda: self.members_at(first[0], first), timeout=CONVERGE_TIMEOUT,
                   interval=0.02, what="node 1 to know both nodes")
        start_late = time.monotonic() + 0.95  # just before the 1 s last call ends
        wait_until(lambda: time.monotonic() >= start_late, timeout=5, interval=0.005,
                   what="the end of the last call")
        late = self.cluster.add_node(seed, "2:3", port=ports[2], extra=extra,
                                     join_timeout="8s")
        nodes = first + [late]
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        logs = self.cluster.logs()
        self.assertEqual(codes[:2], [0, 0], logs)
        self.assertIn(codes[2], (0, 5, 9), logs)
        committed = [n for n, c in zip(nodes, codes) if c == 0]
        membership = check_consistent(self, committed)
        self.assertEqual(sorted(e["endpoint"] for e in membership["nodes"]),
                         sorted(n.endpoint for n in committed), logs)


class AdmissionTest(ClusterTest):
    def test_more_nodes_than_max(self):
        nodes = self.cluster.start_nodes(5, nnodes="4")
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        self.assertEqual(sorted(codes), [0, 0, 0, 0, 9], self.cluster.logs())
        admitted = [n for n, c in zip(nodes, codes) if c == 0]
        rejected = [n for n, c in zip(nodes, codes) if c == 9][0]
        membership = check_consistent(self, admitted)
        self.assertEqual(membership["nnodes"], 4)
        self.assertNotIn(rejected.endpoint, [e["endpoint"] for e in membership["nodes"]])
        self.assertIn("not admitted", rejected.proc.stderr.lower())
        self.assertFalse(rejected.env_path(0).exists(), "a node not admitted wrote an env file")

    def test_more_nodes_than_max_with_min_max(self):
        nodes = self.cluster.start_nodes(5, nnodes="3:4", extra=["--last-call", "1s"])
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        self.assertEqual(sorted(codes), [0, 0, 0, 0, 9], self.cluster.logs())
        admitted = [n for n, c in zip(nodes, codes) if c == 0]
        self.assertEqual(check_consistent(self, admitted)["nnodes"], 4)

    def test_a_node_arriving_at_max_while_an_elastic_job_runs_is_not_admitted(self):
        # The workers run until the test lets them finish (a file), so the third node arrives
        # while round 0 runs at MAX.
        done = Path(self.tmp) / "done"
        worker = (f'touch "{self.tmp}/running.$RANK"; '
                  f'while [ ! -e "{done}" ]; do sleep 0.05; done')
        ports = free_ports(3)
        seed = [f"127.0.0.1:{ports[0]}"]
        extra = ["--max-restarts", "1", "--", "sh", "-c", worker]
        first = [self.cluster.add_node(seed, "2", port=p, extra=extra) for p in ports[:2]]
        wait_until(lambda: all((Path(self.tmp) / f"running.{r}").exists() for r in (0, 1)),
                   timeout=CONVERGE_TIMEOUT, interval=0.05, what="both workers of round 0")
        late = self.cluster.add_node(seed, "2", port=ports[2], extra=extra)
        late_code = self.cluster.wait_nodes([late], timeout=CONVERGE_TIMEOUT)[0]
        logs = self.cluster.logs()
        self.assertEqual(late_code, 9, logs)
        self.assertIn("not admitted", late.proc.stderr.lower(), logs)
        self.assertFalse((Path(self.tmp) / "running.2").exists(), logs)
        # The running job is not disturbed: still round 0, and it finishes.
        self.assertEqual([n.proc.poll() for n in first], [None, None], logs)
        done.touch()
        codes = self.cluster.wait_nodes(first, timeout=CONVERGE_TIMEOUT)
        logs = self.cluster.logs()
        self.assertEqual(codes, [0, 0], logs)
        self.assertNotIn("round 1", logs)

    def test_run_id_mismatch(self):
        port = free_port()
        seed = [f"127.0.0.1:{port}"]
        alpha = self.cluster.add_node(seed, "2", port=port, run_id="alpha-run",
                                      join_timeout="10s")
        wait_until(lambda: self.port_listening(port) or alpha.proc.poll() is not None,
                   timeout=15, what="node alpha to listen")
        beta = self.cluster.add_node(seed, "2", run_id="beta-run", join_timeout="10s")
        self.assertEqual(self.cluster.wait([beta.proc], timeout=30), [6],
                         self.cluster.logs([beta]))
        self.assertIn("alpha-run", beta.proc.stderr)
        self.assertIn("beta-run", beta.proc.stderr)
        # The other side says so too (DESIGN.md: "a message that says so on both sides").
        self.cluster.wait([alpha.proc], timeout=30)
        self.assertNotEqual(alpha.proc.returncode, 0)
        self.assertIn("beta-run", alpha.proc.stderr, self.cluster.logs([alpha]))
        # Its timeout error names the node it refused and the fix, not just "1 still missing".
        error = [line for line in alpha.proc.stderr.splitlines()
                 if line.startswith("gossip-rdzv: error:")]
        self.assertEqual(len(error), 1, alpha.proc.stderr)
        self.assertIn("refused a node of another run", error[0])
        self.assertIn("beta-run", error[0])
        self.assertIn("--run-id alpha-run", error[0])

    def test_nnodes_mismatch_is_said_once_on_each_side(self):
        port = free_port()
        seed = [f"127.0.0.1:{port}"]
        two = self.cluster.add_node(seed, "2", port=port, join_timeout="10s")
        wait_until(lambda: self.port_listening(port) or two.proc.poll() is not None,
                   timeout=15, what="the seed node to listen")
        three = self.cluster.add_node(seed, "3", join_timeout="10s")
        self.assertEqual(self.cluster.wait([two.proc, three.proc], timeout=30), [2, 2],
                         self.cluster.logs([two, three]))
        for node in (two, three):
            stderr = node.proc.stderr
            self.assertEqual(stderr.count("with the same --nnodes"), 1, stderr)
            self.assertNotIn("--help", stderr)  # the command line was valid

    @staticmethod
    def port_listening(port: int) -> bool:
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0


class RankHintTest(ClusterTest):
    def test_hints_are_honoured(self):
        hints = [2, None, 0, None]
        ports = free_ports(4)
        seed = [f"127.0.0.1:{ports[0]}"]
        nodes = [self.cluster.add_node(seed, "4", port=p,
                                       extra=[] if h is None else ["--node-rank", str(h)])
                 for p, h in zip(ports, hints)]
        self.converge(nodes)
        for node, hint in zip(nodes, hints):
            if hint is not None:
                self.assertEqual(node.env(0)["NODE_RANK"], str(hint))
        # The unhinted nodes fill ranks 1 and 3 in natural (port) order.
        free = sorted((n for n, h in zip(nodes, hints) if h is None), key=lambda n: n.port)
        self.assertEqual([n.env(0)["NODE_RANK"] for n in free], ["1", "3"])

    def test_conflicting_hints(self):
        ports = free_ports(2)
        seed = [f"127.0.0.1:{ports[0]}"]
        nodes = [self.cluster.add_node(seed, "2", port=p, extra=["--node-rank", "0"])
                 for p in ports]
        codes = self.cluster.wait_nodes(nodes, timeout=CONVERGE_TIMEOUT)
        self.assertEqual(codes, [8, 8], self.cluster.logs())
        for node in nodes:
            for other in nodes:
                self.assertIn(str(other.port), node.proc.stderr,
                              f"node{node.index} does not name node{other.index}:\n"
                              + node.proc.stderr)
            self.assertFalse(node.env_path(0).exists())


class FailureTest(ClusterTest):
    def test_interrupted_while_waiting_says_so_in_one_line(self):
        port = free_port()
        node = self.cluster.add_node([f"127.0.0.1:{port}"], "2", port=port, extra=["-q"])
        wait_until(lambda: AdmissionTest.port_listening(port) or node.proc.poll() is not None,
                   timeout=15, what="the node to listen")
        node.proc.popen.send_signal(signal.SIGINT)
        self.assertEqual(self.cluster.wait([node.proc], timeout=30), [128 + signal.SIGINT])
        # With -q (and no terminal) nothing else is printed: no empty line before it.
        self.assertEqual(node.proc.stderr,
                         "gossip-rdzv: interrupted by Interrupt, leaving the rendezvous\n")

    def test_usage_errors(self):
        bin_ = self.cluster.bin
        seed = "127.0.0.1:1"
        cases = [
            [],
            ["no-such-command"],
            ["join"],
            ["join", "--nnodes", "2"],                                    # no --seed
            ["join", "--seed", seed],                                     # no --nnodes
            ["join", "--seed", seed, "--nnodes", "0"],
            ["join", "--seed", seed, "--nnodes", "4:2"],
            ["join", "--seed", seed, "--nnodes", "two"],
            ["join", "--seed", seed, "--nnodes", "2", "--nproc-per-node", "0"],
            ["join", "--seed", seed, "--nnodes", "2", "--join-timeout", "soon"],
            ["join", "--seed", seed, "--nnodes", "2", "--last-call", "-1s"],
            ["join", "--seed", seed, "--nnodes", "2", "--format", "xml"],
            ["join", "--seed", seed, "--nnodes", "2", "--profile", "moon"],
            ["join", "--seed", seed, "--nnodes", "2", "--listen", "127.0.0.1:99999"],
            ["join", "--seed", seed, "--nnodes", "2", "--node-rank", "-3"],
            ["join", "--seed", seed, "--nnodes", "2", "--node-rank", "2"],  # >= node count
            ["join", "--seed", seed, "--nnodes", "2", "--no-such-flag"],
            ["seed"],                                                     # no --listen
            ["members"],                                                  # no --seed
        ]
        for args in cases:
            with self.subTest(args=args):
                result = self.cluster.run([bin_, *args], timeout=15)
                self.assertEqual(result.returncode, 2,
                                 f"{args}: exit {result.returncode}\n{result.stderr}")
                self.assertTrue(result.stderr.strip(), f"{args}: no message on stderr")
                self.assertNotIn("terminate called", result.stderr)

    def test_help_exits_zero(self):
        for args, expected in ((["--help"], "join"), (["join", "--help"], "--seed"),
                               (["seed", "--help"], "--listen"),
                               (["members", "--help"], "--seed")):
            result = self.cluster.run([self.cluster.bin, *args], timeout=15)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(expected, result.stdout)

    def test_closed_seed_port(self):
        closed = free_port()  # nothing listens there any more
        node = self.cluster.add_node([f"127.0.0.1:{closed}"], "2", join_timeout="2s")
        started = time.monotonic()
        self.assertEqual(self.cluster.wait([node.proc], timeout=30), [4], node.proc.stderr)
        self.assertLess(time.monotonic() - started, 15, "the join timeout was not honoured")
        self.assertIn("nothing listens", node.proc.stderr.lower())
        self.assertIn(str(closed), node.proc.stderr)

    def test_listen_port_in_use(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            port = holder.getsockname()[1]
            node = self.cluster.add_node([f"127.0.0.1:{port}"], "2", port=port)
            self.assertEqual(self.cluster.wait([node.proc], timeout=30), [3], node.proc.stderr)
        self.assertIn(str(port), node.proc.stderr)

    def test_seed_name_does_not_resolve(self):
        node = self.cluster.add_node(["no-such-host.invalid:29400"], "2", join_timeout="5s")
        self.assertEqual(self.cluster.wait([node.proc], timeout=30), [11], node.proc.stderr)
        self.assertIn("no-such-host.invalid", node.proc.stderr)

    def test_join_timeout_names_missing(self):
        # 2 of 3 nodes: the view never completes; the timeout must say how many are missing.
        nodes = self.cluster.start_nodes(2, nnodes="3", join_timeout="3s")
        codes = self.cluster.wait_nodes(nodes, timeout=30)
        self.assertEqual(codes, [5, 5], self.cluster.logs())
        for node in nodes:
            self.assertFalse(node.env_path(0).exists())


class OutputTest(ClusterTest):
    def test_env_file_mode_returns_with_its_files_and_serves_on_detached(self):
        """Without workers, `join` returns once its files are written; a detached child of
        the seed's node answers late starters until its stay ends, then frees its port."""
        nodes = self.cluster.start_nodes(2, profile="lan")
        self.converge(nodes)  # every `join` returned 0 with its files
        seed_port = nodes[0].port
        # The seed's stay (5 s with the LAN profile) is not over: a node started now is told
        # the round closed without it, by the seed's detached child.
        late = self.cluster.add_node([nodes[0].endpoint], "2", profile="lan")
        self.assertEqual(self.cluster.wait_nodes([late], timeout=CONVERGE_TIMEOUT), [9],
                         self.cluster.logs([late]))

        def port_free() -> bool:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                try:
                    probe.bind(("127.0.0.1", seed_port))
                    return True
                except OSError:
                    return False
        wait_until(port_free, timeout=CONVERGE_TIMEOUT, what="the seed's child to end its stay")

    def test_a_node_restarted_on_the_port_of_a_staying_node_takes_it(self):
        """The next job reuses the ports at once: the detached stay of the seed's node yields
        its port instead of failing the new node with 'port in use' (exit 3)."""
        first = self.cluster.start_nodes(2, profile="lan")
        self.converge(first)
        second = [self.cluster.add_node([first[0].endpoint], "2", port=node.port,
                                        profile="lan", run_id="cluster-test-2", start=False)
                  for node in first]
        for node in second:
            self.cluster.start_node(node)
        codes = self.cluster.wait_nodes(second, timeout=CONVERGE_TIMEOUT)
        self.assertEqual(codes, [0, 0], self.cluster.logs(second))
        self.assertIn("ended that and took the port", self.cluster.logs(second[:1]))

    def test_a_node_refused_by_the_previous_jobs_stay_on_its_seed_port_waits_for_the_new_seed(self):
        """A node of the next job that reaches the previous job's stay on the seed's port is
        refused for its run id; that is not final while the seed's new node may still come
        and take the port (one stay): it joins once the new seed is there."""
        first = self.cluster.start_nodes(2, profile="lan")
        self.converge(first)
        early = self.cluster.add_node([first[0].endpoint], "2", profile="lan",
                                      run_id="cluster-test-2")
        wait_until(lambda: "refused this node" in early.proc.stderr
                   or early.proc.poll() is not None,
                   timeout=CONVERGE_TIMEOUT, what="the previous job's stay to refuse the node")
        self.assertIsNone(early.proc.poll(), self.cluster.logs([early]))
        seed = self.cluster.add_node([first[0].endpoint], "2", port=first[0].port,
                                     profile="lan", run_id="cluster-test-2")
        codes = self.cluster.wait_nodes([early, seed], timeout=CONVERGE_TIMEOUT)
        self.assertEqual(codes, [0, 0], self.cluster.logs([early, seed]))

    def test_node_level_env_file(self):
        """Without {local_rank} the env file holds the node-level variables: no RANK when the
        node runs several processes."""
        port = free_port()
        path = self.tmp / "node.env"
        node = self.cluster.add_node([f"127.0.0.1:{port}"], "1", port=port, nproc=2,
                                     start=False)
        node.set_arg("--env-file", str(path))
        self.cluster.start_node(node)
        self.assertEqual(self.cluster.wait([node.proc], timeout=30), [0], node.proc.stderr)
        env = parse_env_file(path)
        self.assertEqual(env["WORLD_SIZE"], "2")
        self.assertEqual(env["LOCAL_WORLD_SIZE"], "2")
        self.assertNotIn("RANK", env)
        self.assertNotIn("LOCAL_RANK", env)

    def test_unwritable_env_file(self):
        port = free_port()
        blocker = self.tmp / "a-file"
        blocker.write_text("not a directory\n")
        path = blocker / "rank{local_rank}.env"  # its parent is a regular file
        node = self.cluster.add_node([f"127.0.0.1:{port}"], "1", port=port, start=False)
        node.set_arg("--env-file", str(path))
        self.cluster.start_node(node)
        self.assertEqual(self.cluster.wait([node.proc], timeout=30), [10], node.proc.stderr)
        self.assertIn(str(blocker), node.proc.stderr)

    def test_listen_on_all_addresses(self):
        """--listen :PORT binds every address; the advertised host is found by the route to
        the seed (here loopback)."""
        ports = free_ports(2)
        seed = [f"127.0.0.1:{ports[0]}"]
        nodes = [self.cluster.add_node(seed, "2", port=p, start=False) for p in ports]
        for node in nodes:
            node.set_arg("--listen", f":{node.port}")
            self.cluster.start_node(node)
        self.converge(nodes)


    def test_serve_store_until_sigterm(self):
        """join --serve-store (no -- CMD): after writing the env files the agents stay up,
        the files name each one's own store endpoint, a key set through one agent is read
        through the other, and SIGTERM ends both with 0."""
        ports = free_ports(2)
        seed = [f"127.0.0.1:{ports[0]}"]
        nodes = [self.cluster.add_node(seed, "2", port=p, nproc=n, extra=["--serve-store"],
                                       start=False) for p, n in zip(ports, (1, 2))]
        for node in nodes:
            self.cluster.start_node(node)
        wait_until(lambda: all(n.files_written() or n.proc.poll() is not None for n in nodes),
                   CONVERGE_TIMEOUT, what="env files of both nodes")
        self.assertEqual([n.proc.poll() for n in nodes], [None, None], self.cluster.logs(nodes))
        for node in nodes:
            for local_rank in range(node.nproc):
                self.assertEqual(node.env(local_rank).get("GOSSIP_RDZV_STORE"), node.endpoint,
                                 f"node{node.index} rank{local_rank}.env")
            # The env output on stdout carries it too (printed just after the files are
            # written: awaited, not assumed).
            line = f"GOSSIP_RDZV_STORE={node.endpoint}"
            wait_until(lambda: line in node.proc.stdout, CONVERGE_TIMEOUT,
                       what=f"node{node.index} to print {line}")
        # That the agents stay up is shown below: the store answers through both of them.

        source = Path(os.environ.get("GOSSIP_RDZV_SOURCE_DIR", REPO))
        env = dict(os.environ, PYTHONPATH=str(source / "python"))
        build = os.environ.get("GOSSIP_RDZV_BUILD_DIR")
        if build:
            env["GOSSIP_RDZV_LIBRARY"] = str(Path(build) / "libgossip_rdzv.so")
        script = (
            "import sys, gossip_rdzv\n"
            "first = gossip_rdzv.Store(agent=sys.argv[1], run_id='cluster-test', timeout=20)\n"
            "second = gossip_rdzv.Store(agent=sys.argv[2], run_id='cluster-test', timeout=20)\n"
            "first.set('serve-store/key', b'through node 1')\n"
            "print(second.get('serve-store/key').decode())\n")
        result = subprocess.run(["/usr/bin/python3", "-c", script, nodes[0].endpoint,
                                 nodes[1].endpoint], env=env, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr + self.cluster.logs(nodes))
        self.assertEqual(result.stdout.strip(), "through node 1")

        for node in nodes:
            self.cluster.kill(node.proc, signal.SIGTERM)
        self.assertEqual(self.cluster.wait_nodes(nodes, timeout=30), [0, 0],
                         self.cluster.logs(nodes))


class WorkerTest(ClusterTest):
    def test_command_exit_status_is_returned(self):
        port = free_port()
        node = self.cluster.add_node(
            [f"127.0.0.1:{port}"], "1", port=port, nproc=2,
            extra=["--", "/bin/sh", "-c", 'test "$LOCAL_RANK" = 1 && exit 3; exit 0'])
        self.assertEqual(self.cluster.wait([node.proc], timeout=60), [3], node.proc.stderr)

    def test_sigterm_reaches_the_workers(self):
        port = free_port()
        marker = self.tmp / "worker-started"
        node = self.cluster.add_node(
            [f"127.0.0.1:{port}"], "1", port=port, nproc=2,
            extra=["--", "/bin/sh", "-c", f'touch "{marker}.$LOCAL_RANK"; exec sleep 120'])
        wait_until(lambda: all(Path(f"{marker}.{r}").exists() for r in range(2))
                   or node.proc.poll() is not None, timeout=30, what="workers to start")
        self.assertIsNone(node.proc.poll(), node.proc.stderr)
        node.proc.popen.send_signal(signal.SIGTERM)  # to gossip-rdzv only, not its group
        codes = self.cluster.wait([node.proc], timeout=30)
        self.assertEqual(codes, [128 + signal.SIGTERM], node.proc.stderr)

    def test_command_gets_the_environment(self):
        port = free_port()
        out = self.tmp / "worker-env"
        node = self.cluster.add_node(
            [f"127.0.0.1:{port}"], "1", port=port, nproc=2,
            extra=["--", "/bin/sh", "-c", f'env > "{out}.$LOCAL_RANK"'])
        self.assertEqual(self.cluster.wait([node.proc], timeout=60), [0], node.proc.stderr)
        for local_rank in range(2):
            env = dict(line.split("=", 1) for line in
                       Path(f"{out}.{local_rank}").read_text().splitlines() if "=" in line)
            self.assertEqual(env["RANK"], str(local_rank))
            self.assertEqual(env["LOCAL_RANK"], str(local_rank))
            self.assertEqual(env["WORLD_SIZE"], "2")
            self.assertEqual(env["MASTER_ADDR"], "127.0.0.1")


if __name__ == "__main__":
    unittest.main()
