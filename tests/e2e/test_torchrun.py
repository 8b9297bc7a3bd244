"""torchrun with the gossip rendezvous (python3 -m gossip_rdzv.run, issue #26): torchrun's own
agent, flags and restarts over Debian's torch 1.13, with gloo workers (elastic_worker.py)
on loopback. With --rdzv_backend c10d the store lives on the --rdzv_endpoint host, and the
job dies with it; here --rdzv_endpoint is a seed list and no host is special.

Run: GOSSIP_RDZV_LIBRARY=build/libgossip_rdzv.so PYTHONPATH=python \\
     /usr/bin/python3 -m unittest -v test_torchrun          (from tests/e2e)
"""
from __future__ import annotations

import json
import os
import signal
import sys
import unittest
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
from testlib import (Processes, elastic_results, free_ports, signal_group,  # noqa: E402
                     temp_dir, wait_until)

PYTHON = "/usr/bin/python3"  # Debian's python3 with python3-torch
ELASTIC_WORKER = str(HERE / "elastic_worker.py")
TIMEOUT = 240.0  # generous: torch takes seconds to import on a loaded 2-core machine


class TorchrunGossipTest(unittest.TestCase):

    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-torchrun-")
        self.out = self.tmp / "results"
        self.out.mkdir()
        self.procs = Processes(self.tmp / "logs")
        self.addCleanup(self.procs.close)
        self.env = dict(os.environ, GR_E2E_OUT=str(self.out), GLOO_SOCKET_IFNAME="lo")
        self.env.setdefault("PYTHONPATH", str(HERE.parents[1] / "python"))

    def launch(self, index: int, ports: List[int], seeds: List[int], nnodes: str):
        """One torchrun agent (node `index`, gossip port ports[index]) with one worker."""
        endpoint = ",".join(f"127.0.0.1:{p}" for p in seeds)
        return self.procs.spawn(f"node{index}", [
            PYTHON, "-m", "gossip_rdzv.run", "--nnodes", nnodes, "--nproc_per_node", "1",
            "--max_restarts", "1", "--monitor_interval", "0.5", "--rdzv_endpoint", endpoint,
            "--rdzv_id", "torchrun-e2e",
            "--rdzv_conf", f"listen=127.0.0.1:{ports[index]},join_timeout=90",
            ELASTIC_WORKER], env=self.env)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} exit={p.returncode}\n{p.stderr[-4000:]}"
                         for p in self.procs.procs)

    def results(self, world: int) -> List[dict]:
        """Every rank's report (testlib.elastic_results). torchrun counts restarts per agent
        (TORCHELASTIC_RESTART_COUNT = restarts this agent spent), so after a failure agents
        may differ: one whose own worker also failed on the broken group spent one, one that
        saw the job move on first (num_nodes_waiting) did not. With the c10d backend too."""
        return elastic_results(self, self.out, world, self.logs(), same_restart_count=False)

    def test_two_agents_form_a_gloo_job(self):
        self.env.update(GR_STEPS="4")
        ports = free_ports(2)
        nodes = [self.launch(i, ports, ports[:1], "2") for i in range(2)]
        self.assertEqual(self.procs.wait(nodes, TIMEOUT), [0, 0], self.logs())
        found = self.results(2)
        self.assertEqual(found[0]["restart_count"], 0, self.logs())
        # An agent done first keeps serving its keys: the exit barrier of the others reads them.
        self.assertNotIn("Error waiting on exit barrier", self.logs())

    def test_a_failed_worker_restarts_both_agents_on_one_restart(self):
        # Rank 1 exits 1 at step 2 of round 0: its agent spends its restart and asks for the
        # next round; the other agent sees the job move on (num_nodes_waiting) and follows.
        self.env.update(GR_STEPS="6", GR_CRASH_RANK="1", GR_CRASH_STEP="2")
        ports = free_ports(2)
        nodes = [self.launch(i, ports, ports[:1], "2") for i in range(2)]
        self.assertEqual(self.procs.wait(nodes, TIMEOUT), [0, 0], self.logs())
        found = self.results(2)
        # The failing rank's agent spent the one restart; no agent spent more.
        self.assertEqual(max(r["restart_count"] for r in found), 1, self.logs())
        self.assertGreater(min(r["resumed_from"] for r in found), 0, self.logs())

    def test_the_first_endpoint_host_killed_mid_job_leaves_two_that_finish(self):
        # The host c10d would keep its store on (the first --rdzv_endpoint) is killed, agent
        # and worker, once the job saved step 4: the other two form a round without it.
        self.env.update(GR_STEPS="40", GR_STEP_SECONDS="0.25")
        ports = free_ports(3)
        nodes = [self.launch(i, ports, ports, "2:3") for i in range(3)]

        def saved_step() -> int:
            if all(n.poll() is not None for n in nodes):
                self.fail(f"every agent exited\n{self.logs()}")
            try:
                return json.loads((self.out / "checkpoint.json").read_text())["step"]
            except (OSError, ValueError, KeyError):
                return 0
        wait_until(lambda: saved_step() >= 4, TIMEOUT, lambda: f"step 4 saved\n{self.logs()}",
                   0.05)
        signal_group(nodes[0].popen.pid, signal.SIGKILL)
        self.assertEqual(self.procs.wait(nodes[1:], TIMEOUT), [0, 0], self.logs())
        self.assertEqual(nodes[0].poll(), -signal.SIGKILL, self.logs())
        found = self.results(2)
        self.assertGreater(min(r["resumed_from"] for r in found), 0, self.logs())


class HandlerParametersTest(unittest.TestCase):
    """How torchrun's rendezvous parameters become a node's configuration."""

    def fields(self, endpoint="a:29400,b:29400", min_nodes=2, max_nodes=4, **config):
        from torch.distributed.elastic.rendezvous import RendezvousParameters

        from gossip_rdzv import elastic
        return elastic._fields(RendezvousParameters("gossip", endpoint, "job42", min_nodes,
                                                    max_nodes, **config))

    def test_torchrun_options_map_onto_the_node(self):
        fields = self.fields(timeout=900, listen=":29401", last_call_timeout="20",
                             key_file="/k", read_timeout=60)
        self.assertEqual(fields, {"seeds": "a:29400,b:29400", "run_id": "job42", "nnodes": "2:4",
                                  "elastic": True, "join_timeout": "900s", "listen": ":29401",
                                  "last_call": "20s", "key_file": "/k"})
        self.assertEqual(self.fields(min_nodes=3, max_nodes=3, join_timeout="5m")["nnodes"], "3")
        self.assertEqual(self.fields(timeout=900, join_timeout="5m")["join_timeout"], "5m")

    def test_a_missing_seed_list_or_an_unknown_option_is_named(self):
        with self.assertRaisesRegex(ValueError, "--rdzv_endpoint HOST:PORT"):
            self.fields(endpoint="")
        with self.assertRaisesRegex(ValueError, "--rdzv_conf lissen=:1: not an option .*listen"):
            self.fields(lissen=":1")

    def test_master_addr_is_the_agreed_address_not_the_agents_host_name(self):
        from gossip_rdzv import elastic

        class Recorder:
            def __init__(self):
                self.sets = []

            def set(self, key, value):
                self.sets.append((key, value))

        recorder = Recorder()
        store = elastic._AgentStore(recorder, "10.0.0.5")
        store.set("MASTER_ADDR", b"trainer-07.cluster.local")  # what torchrun's rank 0 writes
        store.set("MASTER_PORT", b"29500")
        self.assertEqual(recorder.sets, [("MASTER_ADDR", "10.0.0.5"), ("MASTER_PORT", b"29500")])

    def test_the_backend_defaults_to_gossip_and_gets_nproc_per_node(self):
        from gossip_rdzv import run
        args = run.parse_args(["--nnodes", "2", "--nproc_per_node", "3",
                               "--rdzv_endpoint", "a:1", "train.py", "--rdzv_backend", "x"])
        self.assertEqual(args.rdzv_backend, "gossip")
        self.assertEqual(args.training_script_args, ["--rdzv_backend", "x"])
        self.assertEqual(args.rdzv_conf, "nproc_per_node=3")
        args = run.parse_args(["--rdzv_backend", "c10d", "--rdzv_endpoint", "a:1", "t.py"])
        self.assertEqual((args.rdzv_backend, args.rdzv_conf), ("c10d", ""))


if __name__ == "__main__":
    unittest.main()
