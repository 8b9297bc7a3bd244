"""gossip-rdzv across network namespaces that act as separate machines on one LAN (netns.py):
the plain case up to a torch gloo group, a firewall, a wrong seed address, a closed seed port,
a busy listen port, another run id, 10% packet loss, and an IPv6-only LAN — each with what
`join` says and what `doctor` says — and a LAN split in two halves during the round, where
only one job may come out.

Needs root; run with /usr/bin/python3 (Debian's python3-torch) -m unittest.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import unittest
from pathlib import Path
from typing import Dict, List, Sequence

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "support")]
from netns import Lab, Process, missing_requirements  # noqa: E402
from testlib import binary, parse_env_file, wait_until  # noqa: E402

PYTHON = os.environ.get("GR_TEST_PYTHON", "/usr/bin/python3")
REQUIREMENT = missing_requirements()
RUN_ID = "netns"


def has_torch() -> bool:
    try:
        return subprocess.run([PYTHON, "-c", "import torch.distributed"], timeout=120,
                              capture_output=True).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@unittest.skipIf(REQUIREMENT is not None, REQUIREMENT or "")
class NetnsCase(unittest.TestCase):
    hosts = 4
    ipv6 = False
    names: Dict[str, Sequence[int]] = {}  # hosts-file names with several hosts' addresses

    def setUp(self) -> None:
        self.bin = binary()
        self.lab = Lab(self.hosts, ipv6=self.ipv6, names=self.names)
        self.addCleanup(self.lab.close)

    # ---- helpers ----------------------------------------------------------------------------

    def join(self, host: int, seed: str, *extra: str, nnodes: int = 4,
             timeout: str = "60s", run_id: str = RUN_ID) -> Process:
        args = [self.bin, "join", "--seed", seed, "--nnodes", str(nnodes), "--run-id", run_id,
                "--join-timeout", timeout, *extra]
        return self.lab.start(host, args, name=f"join-{self.lab.hostname(host)}")

    def seed(self, host: int, run_id: str = RUN_ID) -> Process:
        """A dedicated seed on host's port 29400, running once this returns."""
        process = self.lab.start(host, [self.bin, "seed", "--listen", ":29400", "--run-id",
                                        run_id], name=f"seed-{self.lab.hostname(host)}")
        wait_until(lambda: "seed listening on" in process.output() or not process.running(),
                   timeout=20, what="the dedicated seed")
        self.assertTrue(process.running(), process.output())
        return process

    def finish(self, process: Process, timeout: float) -> int:
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.fail(f"{process.name} still running after {timeout}s:\n{process.output()}")

    def doctor(self, host: int, seed: str, *extra: str,
               run_id: str = RUN_ID) -> tuple[int, dict]:
        """Runs doctor --format json in host; returns its exit code and the parsed report."""
        result = self.lab.exec(host, [self.bin, "doctor", "--seed", seed, "--run-id", run_id,
                                      "--format", "json", *extra], timeout=60)
        try:
            report = json.loads(result.stdout)
        except json.JSONDecodeError:
            self.fail(f"doctor printed no JSON (exit {result.returncode}):\n"
                      f"{result.stdout}\n{result.stderr}")
        self.assertEqual(result.returncode, report["exit_code"], result.stdout)
        return result.returncode, report

    def check(self, report: dict, name: str) -> dict:
        found = [c for c in report["checks"] if c["check"] == name]
        self.assertTrue(found, f"no '{name}' check in {json.dumps(report, indent=1)}")
        return found[0]


class PlainTest(NetnsCase):
    def test_converges_and_a_gloo_group_forms(self) -> None:
        out = Path(self.lab.workdir)
        seed = "n0:29400"  # a name, resolved through each host's /etc/hosts
        nodes = [self.join(h, seed, "--env-file", str(out / f"{h}" / "rank{local_rank}.env"),
                           "--membership-file", str(out / f"{h}" / "members.json"))
                 for h in range(self.hosts)]
        for node in nodes:
            self.assertEqual(self.finish(node, 60), 0, node.output())
        envs = [parse_env_file(out / f"{h}" / "rank0.env") for h in range(self.hosts)]
        self.assertEqual({e["WORLD_SIZE"] for e in envs}, {str(self.hosts)})
        self.assertEqual(len({(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs}), 1)
        self.assertEqual(sorted(int(e["RANK"]) for e in envs), list(range(self.hosts)))
        self.assertIn(envs[0]["MASTER_ADDR"], [self.lab.address(h) for h in range(self.hosts)])
        for h, env in enumerate(envs):
            self.assertEqual(env["GLOO_SOCKET_IFNAME"], "eth0", env)
        membership = json.loads((out / "0" / "members.json").read_text())
        self.assertEqual(sorted(n["hostname"] for n in membership["nodes"]),
                         [self.lab.hostname(h) for h in range(self.hosts)])
        if not has_torch():
            self.skipTest(f"{PYTHON} has no torch: the gloo half of this test cannot run")
        workers = [self.lab.start(h, [PYTHON, str(HERE / "gloo_worker.py")], name=f"worker{h}",
                                  env=envs[h]) for h in range(self.hosts)]
        for worker in workers:
            self.assertEqual(self.finish(worker, 180), 0, worker.output())
            self.assertRegex(worker.output(), rf"sum {self.hosts * (self.hosts + 1) // 2} ")


class FirewallTest(NetnsCase):
    def test_host_that_drops_the_seed_port(self) -> None:
        firewalled = 3
        self.lab.drop_port(firewalled, 29400)
        nodes = [self.join(h, "n0:29400", timeout="8s") for h in range(self.hosts)]
        # Meanwhile, doctor on both sides of the firewall.
        code, report = self.doctor(firewalled, "n0:29400", "--timeout", "2s")
        self.assertEqual(code, 4, report)
        reach = self.check(report, "reach")
        self.assertEqual(reach["verdict"], "fail")
        self.assertIn("does not answer", reach["finding"])
        self.assertIn("firewall", reach["finding"])
        code, report = self.doctor(1, "n0:29400", "--timeout", "2s")
        self.assertEqual(self.check(report, "handshake")["verdict"], "pass", report)
        self.assertEqual(report["advertise"], self.lab.address(1))
        self.assertEqual(report["gloo_socket_ifname"], "eth0")
        self.assertEqual(code, 0, report)  # its own listen port is held by its join: a WARN

        self.assertEqual(self.finish(nodes[firewalled], 30), 4, nodes[firewalled].output())
        message = nodes[firewalled].output()
        self.assertIn("no seed answered within", message)
        self.assertIn("does not answer: a firewall may drop traffic to port 29400", message)
        for h in range(self.hosts - 1):
            self.assertEqual(self.finish(nodes[h], 30), 5, nodes[h].output())
            text = nodes[h].output()
            self.assertIn("3 of 4 nodes joined", text)
            self.assertIn("1 still missing", text)
            self.assertNotIn(self.lab.address(firewalled), text.split("still missing")[0])

    def test_host_whose_gossip_port_is_closed_to_the_others(self) -> None:
        # The firewall on n3 drops only what comes in to port 29400: n3 can announce itself
        # through the seed, so the others know it, but nobody can answer it on its address.
        # Before peer-reported reachability, n3 said the seed "accepts connections but never
        # answered"; now the seed tells it, over n3's own connection, that n3 is the problem.
        firewalled = 3
        bad = self.lab.endpoint(firewalled)
        self.lab.drop_port(firewalled, 29400, inbound=True, outbound=False)
        nodes = [self.join(h, "n0:29400", timeout="15s") for h in range(self.hosts)]
        self.assertEqual(self.finish(nodes[firewalled], 40), 4, nodes[firewalled].output())
        own = nodes[firewalled].output()
        self.assertIn(f"{self.lab.endpoint(0)} cannot reach this node at {bad}", own)  # the log
        self.assertIn(f"no seed let this node join within 15 s: peers cannot reach this node at "
                      f"{bad}: {self.lab.endpoint(0)} got no answer there; advertise an address "
                      "they can reach (--advertise) or open inbound TCP port 29400", own)
        self.assertNotIn("never answered", own)
        for h in range(self.hosts - 1):
            self.assertEqual(self.finish(nodes[h], 40), 5, nodes[h].output())
            text = nodes[h].output()
            self.assertIn("3 of 4 nodes joined", text)
            # The missing host is named, with its address and what was heard of it.
            self.assertIn("Seen and then silent: n3 " + bad, text)
        # The seed, the one node n3 talks to, hears it and knows its address is what fails.
        self.assertRegex(nodes[0].output(),
                         r"This node gets no answer at the advertised address of "
                         rf"n3 {re.escape(bad)} \(\d+ messages unanswered over [0-9.]+ s while "
                         r"it kept sending; it was told\)")


    def test_host_closed_to_the_other_workers_but_not_to_the_seed(self) -> None:
        # n3 drops inbound gossip from n1 and n2 only: it joins through n0, and indirect
        # probes through n0 keep it alive, so membership alone would never say that n1 and n2
        # cannot reach it (gloo needs every pair). Whatever the round does, n3 must hear from
        # both that its address fails them, and both must say so about n3.
        bad = self.lab.endpoint(3)
        others = ", ".join(self.lab.address(h) for h in (1, 2))
        self.lab.nft(3, "table inet grtest {\n"
                        "  chain input { type filter hook input priority 0; "
                        f"ip saddr {{ {others} }} tcp dport 29400 drop; }}\n"
                        "}\n")
        # Workers that outlive the commit keep the nodes (and their probes) running.
        nodes = [self.join(h, "n0:29400", "--", "sleep", "60", timeout="60s")
                 for h in range(self.hosts)]

        def told_by_both() -> bool:
            text = nodes[3].output()
            return all(f"{self.lab.endpoint(h)} cannot reach this node at {bad}" in text
                       for h in (1, 2))

        try:
            wait_until(told_by_both, 45, "n3 to be told by n1 and n2")
        except TimeoutError:
            self.fail("\n".join(f"--- {n.name}\n{n.output()}" for n in nodes))
        for h in (1, 2):
            self.assertIn(f"{bad} sends to this node but does not answer at that address",
                          nodes[h].output())
        self.assertNotIn(f"{bad} sends to this node", nodes[0].output())  # n0 reaches it
        self.assertNotIn(f"{self.lab.endpoint(0)} cannot reach this node", nodes[3].output())


class ReachabilityTest(NetnsCase):
    hosts = 3

    def test_host_advertising_an_address_that_only_works_locally(self) -> None:
        # n2 advertises 127.0.0.1: its messages reach the others, but what they send to
        # "127.0.0.1:29400" lands on themselves. n2 must be told, with the address and who
        # tried it; the others must name n2 and that address.
        bad_host, bad = 2, "127.0.0.1:29400"
        nodes = [self.join(h, "n0:29400", *(["--advertise", "127.0.0.1"] if h == bad_host else []),
                           nnodes=3, timeout="12s") for h in range(self.hosts)]
        self.assertEqual(self.finish(nodes[bad_host], 40), 4, nodes[bad_host].output())
        own = nodes[bad_host].output()
        self.assertIn(f"peers cannot reach this node at {bad}: {self.lab.endpoint(0)} got no "
                      "answer there; 127.0.0.1 is a loopback address, which on every other "
                      "machine means that machine itself", own)
        self.assertIn(f"; peers cannot reach this node at {bad}: {self.lab.endpoint(0)}", own)
        for h in range(bad_host):
            self.assertEqual(self.finish(nodes[h], 40), 5, nodes[h].output())
            text = nodes[h].output()
            self.assertIn("2 of 3 nodes joined", text)
            # Their pings to 127.0.0.1 came back to themselves, never taken for n2's answers
            # (were they, n2 would look alive here).
            self.assertRegex(text, rf"Seen and then silent: n2 {re.escape(bad)} \((dead|suspect), ")
        # The seed hears n2's joins: it names n2 as reachable one way only, in its progress
        # line and its timeout error.
        seed_text = nodes[0].output()
        self.assertIn("; no answer at the address of n2", seed_text)
        self.assertIn(f"This node gets no answer at the advertised address of n2 {bad} (", seed_text)


class WrongSeedTest(NetnsCase):
    hosts = 2

    def test_unused_address(self) -> None:
        seed = self.lab.endpoint(0).replace(self.lab.address(0), self.lab.unused_address())
        node = self.join(1, seed, nnodes=2, timeout="5s")
        code, report = self.doctor(1, seed)
        self.assertEqual(code, 4, report)
        reach = self.check(report, "reach")
        self.assertIn("no route to " + self.lab.unused_address(), reach["finding"])
        self.assertIn("the address is wrong", reach["finding"])
        self.assertEqual(self.finish(node, 30), 4, node.output())
        self.assertIn("no route to " + self.lab.unused_address(), node.output())
        self.assertNotIn("firewall", node.output())

    def test_closed_port(self) -> None:
        seed = self.lab.endpoint(0, port=29401)  # host n0 is up, nothing listens there
        node = self.join(1, seed, nnodes=2, timeout="5s")
        code, report = self.doctor(1, seed)
        self.assertEqual(code, 4, report)
        self.assertIn("nothing listens on " + seed, self.check(report, "reach")["finding"])
        self.assertEqual(self.finish(node, 30), 4, node.output())
        self.assertIn("nothing listens on " + seed + ": start the seed first", node.output())

    def test_unresolvable_name(self) -> None:
        node = self.join(1, "n9:29400", nnodes=2, timeout="5s")
        self.assertEqual(self.finish(node, 30), 11, node.output())
        self.assertIn("seed name 'n9' does not resolve", node.output())
        code, report = self.doctor(1, "n9:29400")
        self.assertEqual(code, 11, report)
        self.assertIn("does not resolve", self.check(report, "resolve")["finding"])

    def test_seed_of_another_run(self) -> None:
        self.seed(0, run_id="another-job")
        node = self.join(1, "n0:29400", nnodes=2, timeout="10s")
        self.assertEqual(self.finish(node, 30), 6, node.output())
        self.assertIn("belongs to run 'another-job'", node.output())
        self.assertIn("Use the same --run-id on every node", node.output())
        code, report = self.doctor(1, "n0:29400")
        self.assertEqual(code, 6, report)
        self.assertIn("another-job", self.check(report, "handshake")["finding"])


class ServiceNameTest(NetnsCase):
    """Issue 26: one seed name with several addresses, as a Kubernetes headless Service's name
    resolves to its pods (here a hosts-file name on three lines): each address is a seed."""
    hosts = 4
    names = {"rdzv-seeds": (0, 1, 2)}

    def test_every_address_of_the_name_is_a_seed(self) -> None:
        seed = "rdzv-seeds:29400"
        addresses = ", ".join(self.lab.address(h) for h in (0, 1, 2))
        # Before any node runs, doctor checks each address the name stands for.
        code, report = self.doctor(3, seed)
        self.assertEqual(code, 4, report)
        self.assertIn(f"join takes each of {addresses} as a seed",
                      self.check(report, "resolve")["finding"])
        reached = sorted(c["subject"] for c in report["checks"] if c["check"] == "reach")
        self.assertEqual(reached, [f"{seed} ({self.lab.address(h)})" for h in (0, 1, 2)])

        # n0, the name's lowest address, never starts: nodes that dialled only one address
        # of the name could not rely on it; with each address a seed, n1 and n2 carry the job
        # (two of the three seeds are a majority of the quorum base).
        out = Path(self.lab.workdir)
        nodes = {h: self.join(h, seed, "-v", "--env-file", str(out / f"{h}.env"), nnodes=3)
                 for h in (1, 2, 3)}
        for node in nodes.values():
            self.assertEqual(self.finish(node, 60), 0, node.output())
            self.assertIn(f"seed '{seed}' resolves to 3 addresses; each is a seed: {addresses}",
                          node.output())
        envs = [parse_env_file(out / f"{h}.env") for h in nodes]
        self.assertEqual({e["WORLD_SIZE"] for e in envs}, {"3"})
        self.assertEqual(sorted(int(e["RANK"]) for e in envs), [0, 1, 2])
        self.assertEqual(len({(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs}), 1)


class KubernetesExampleTest(NetnsCase):
    """examples/kubernetes/train.yaml as this rig can run it: its headless Service is a
    hosts-file name of three seed hosts, its pods are hosts, and each pod runs the manifest's
    own commands (its init container's wait, the seeds' and the Indexed Job's command lines),
    with the key file and the training script swapped for this machine's."""
    hosts = 7
    names = {"train-seeds": (0, 1, 2)}

    def test_the_manifests_commands_form_the_job(self) -> None:
        import yaml  # Debian's python3-yaml, beside python3-torch
        manifest = list(yaml.safe_load_all((HERE.parents[1] / "examples" / "kubernetes" /
                                            "train.yaml").read_text()))

        def pod(kind: str) -> dict:
            return next(d for d in manifest if d["kind"] == kind)["spec"]["template"]["spec"]

        service = next(d for d in manifest if d["kind"] == "Service")
        self.assertTrue(service["spec"]["publishNotReadyAddresses"])
        key = Path(self.lab.workdir) / "job.key"
        made = subprocess.run([self.bin, "keygen", str(key)], capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)

        def here(words: List[str]) -> List[str]:
            """The manifest's command with this machine's binary, key file and worker."""
            out = []
            for word in words:
                word = self.bin if word == "gossip-rdzv" else word
                word = word.replace("exec gossip-rdzv ", f"exec {self.bin} ")
                word = word.replace("/etc/gossip-rdzv/job.key", str(key))
                word = word.replace("python3 /app/train.py", f"{PYTHON} {HERE / 'gloo_worker.py'}")
                out.append(word)
            return out

        # The init container returns once the name lists the three seed hosts.
        wait = pod("Job")["initContainers"][0]["command"]
        waited = self.lab.exec(3, ["timeout", "20", *wait], timeout=30)
        self.assertEqual(waited.returncode, 0, waited.stdout + waited.stderr)

        seed_command = here(pod("StatefulSet")["containers"][0]["command"])
        seeds = [self.lab.start(h, seed_command, name=f"seed-pod-{h}") for h in (0, 1, 2)]
        for seed in seeds:
            wait_until(lambda: "seed listening on" in seed.output() or not seed.running(),
                       timeout=20, what="a seed pod")
            self.assertTrue(seed.running(), seed.output())
        job_command = here(pod("Job")["containers"][0]["command"])
        self.assertIn(str(key), job_command[-1])
        self.assertIn(str(HERE / "gloo_worker.py"), job_command[-1])
        if not has_torch():
            self.skipTest(f"{PYTHON} has no torch: the job's workers cannot run")
        pods = [self.lab.start(3 + index, job_command, name=f"train-{index}",
                               env={"JOB_COMPLETION_INDEX": str(index)}) for index in range(4)]
        for index, job_pod in enumerate(pods):
            self.assertEqual(self.finish(job_pod, 180), 0, job_pod.output())
            self.assertRegex(job_pod.output(), rf"rank {index}/4 on n{3 + index} .*: sum 10 ")


class IntruderTest(NetnsCase):
    """Issue 23: a job of three hosts with a key; a fourth host on the same bridge, without
    the key, tries to join (with the job's run id and with guessed ones), to read the
    membership, to use the store and doctor. Nothing it sends is accepted, it learns no
    member's address but the seed's it was given, and the job is undisturbed."""

    hosts = 4

    def test_a_host_without_the_key_gets_nothing_in_and_nothing_out(self) -> None:
        out = Path(self.lab.workdir)
        key = out / "job.key"
        made = subprocess.run([self.bin, "keygen", str(key)], capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)
        seed = self.lab.endpoint(0)
        job = [self.join(h, seed, "--key-file", str(key), "--serve-store",
                         "--env-file", str(out / f"{h}" / "rank{local_rank}.env"), nnodes=3)
               for h in range(3)]
        wait_until(lambda: all((out / f"{h}" / "rank0.env").exists() for h in range(3)),
                   timeout=60, what="the keyed job to agree")

        intruder = 3
        said = []
        for run_id in (RUN_ID, "default", "job"):
            node = self.join(intruder, seed, nnodes=3, timeout="20s", run_id=run_id)
            self.assertEqual(self.finish(node, 60), 13, node.output())
            self.assertIn("authentication failed", node.output())
            said.append(node.output())
        members = self.lab.exec(intruder, [self.bin, "members", "--seed", seed, "--run-id",
                                           RUN_ID, "--format", "json"])
        self.assertEqual(members.returncode, 13, members.stdout + members.stderr)
        said.append(members.stdout + members.stderr)
        store = self.lab.exec(intruder, [PYTHON, "-c", STORE_PROBE, seed, RUN_ID])
        self.assertEqual(store.returncode, 0, store.stdout + store.stderr)
        self.assertEqual(store.stdout.split(), ["refused"] * 3, store.stdout + store.stderr)
        said.append(store.stdout + store.stderr)
        code, report = self.doctor(intruder, seed)
        self.assertEqual(code, 13, report)
        said.append(json.dumps(report))
        # Gossip messages (claims travel in them) under guessed run ids, written by hand:
        # each is answered with a refusal notice and nothing else.
        raw = self.lab.exec(intruder, [PYTHON, "-c", RAW_GOSSIP, self.lab.address(0), "29400",
                                       RUN_ID, "default", "job"])
        self.assertEqual(raw.returncode, 0, raw.stdout + raw.stderr)
        self.assertEqual(raw.stdout.split(), ["notices", "3"], raw.stdout + raw.stderr)
        said.append(raw.stdout + raw.stderr)
        for host in (1, 2):
            for text in said:
                self.assertNotIn(self.lab.address(host), text, "the intruder learned an address")

        # The job is undisturbed: its nodes still serve, a holder of the key reads and writes,
        # and the membership is the three hosts.
        for node in job:
            self.assertTrue(node.running(), node.output())
        holder = self.lab.exec(1, [PYTHON, "-c", STORE_HOLDER, self.lab.endpoint(1), RUN_ID,
                                   str(key)])
        self.assertEqual(holder.stdout.split(), ["ok"], holder.stdout + holder.stderr)
        listed = self.lab.exec(1, [self.bin, "members", "--seed", seed, "--run-id", RUN_ID,
                                   "--format", "json", "--key-file", str(key)])
        self.assertEqual(listed.returncode, 0, listed.stdout + listed.stderr)
        self.assertEqual(sorted(m["endpoint"] for m in json.loads(listed.stdout)),
                         sorted(self.lab.endpoint(h) for h in range(3)))
        self.assertIn("does not hold this job's key", job[0].output())  # the seed's side


# Run by the intruder: three store requests without a key; prints "refused" for each refused
# one (StoreError store_refused naming the key), anything else as it is.
STORE_PROBE = r"""
import sys
from gossip_rdzv import Store, StoreError
agent, run_id = sys.argv[1], sys.argv[2]
for attempt in ("get", "set", "add"):
    store = Store(agent=agent, run_id=run_id, timeout=10)
    try:
        {"get": lambda: store.get("MASTER_ADDR", timeout=2), "set": lambda: store.set("x", "1"),
         "add": lambda: store.add("x", 1)}[attempt]()
        print("accepted", attempt)
    except StoreError as error:
        print("refused" if error.name == "store_refused" and "authentication failed" in str(error)
              else f"other:{error.name}:{error}")
"""

# Run by the intruder: a ZMTP connection to HOST:PORT sending one Gossip message (type 6,
# the message claims travel in) per RUN_ID, unsealed, from a made-up sender; prints how many
# refusal notices ("GRDN") came back, and any other message as "other".
RAW_GOSSIP = r"""
import socket, sys, time
host, port, run_ids = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def s(text):
    return bytes([0xa0 | len(text)]) + text.encode()
greeting = b"\xff" + b"\x00" * 7 + b"\x01\x7f\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
ready = b"\x05READY\x0bSocket-Type" + (6).to_bytes(4, "big") + b"DEALER\x08Identity" + bytes(4)
sock = socket.create_connection((host, port), timeout=10)
sock.sendall(greeting + bytes([0x04, len(ready)]) + ready)
for run_id in run_ids:
    message = b"\x97" + s("GRDZ") + b"\x03" + s(run_id) + s("10.9.9.9:29400") + b"\x01\x06\x90"
    sock.sendall(bytes([0x00, len(message)]) + message)
data, frames, deadline = b"", [], time.monotonic() + 10
sock.settimeout(0.5)
while time.monotonic() < deadline and sum(f.startswith(b"GRDN") for f in frames) < len(run_ids):
    try:
        chunk = sock.recv(4096)
    except socket.timeout:
        continue
    if not chunk:
        break
    data += chunk
    at = 64  # the greeting; then frames: flags, length (1 or 8 bytes), body
    frames = []
    while at + 2 <= len(data):
        long = data[at] & 0x02
        size = int.from_bytes(data[at + 1:at + 9], "big") if long else data[at + 1]
        head = 9 if long else 2
        if at + head + size > len(data):
            break
        if not data[at] & 0x04:
            frames.append(data[at + head:at + head + size])
        at += head + size
notices = sum(f.startswith(b"GRDN") for f in frames)
others = [f for f in frames if not f.startswith(b"GRDN") and not f.startswith(b"GRDC")]
print("notices", notices)
for f in others:
    print("other", f[:40])
"""

# Run by a member host with the key: a set and a get through its own agent.
STORE_HOLDER = r"""
import sys
from gossip_rdzv import Store
agent, run_id, key_file = sys.argv[1:4]
store = Store(agent=agent, run_id=run_id, timeout=20, key_file=key_file)
store.set("holder", "yes")
print("ok" if store.get("holder", timeout=10) == b"yes" else "wrong value")
"""


class PortBusyTest(NetnsCase):
    hosts = 2

    def test_listen_port_held_by_another_process(self) -> None:
        self.seed(0)
        holder = self.lab.start(1, [PYTHON, "-c",
                                    "import socket, time\n"
                                    "s = socket.socket(); s.bind(('0.0.0.0', 29400)); s.listen()\n"
                                    "print('listening', flush=True); time.sleep(120)"],
                                name="holder")
        wait_until(lambda: "listening" in holder.output() or not holder.running(), 30,
                   "the process holding port 29400")
        node = self.join(1, "n0:29400", nnodes=2, timeout="10s")
        self.assertEqual(self.finish(node, 30), 3, node.output())
        text = node.output()
        self.assertIn("cannot listen on 0.0.0.0:29400: the port is already in use by pid "
                      f"{holder.popen.pid}", text)
        self.assertIn("--listen :PORT", text)
        code, report = self.doctor(1, "n0:29400", "--listen", ":29400")
        self.assertEqual(code, 3, report)
        listen = self.check(report, "listen port")
        self.assertEqual(listen["verdict"], "fail")
        self.assertIn(f"is already in use by pid {holder.popen.pid}", listen["finding"])
        self.assertEqual(self.check(report, "handshake")["verdict"], "pass")


class LossTest(NetnsCase):
    def test_converges_with_ten_percent_loss_on_every_host(self) -> None:
        for host in range(self.hosts):
            self.lab.random_loss(host, 10)
        out = Path(self.lab.workdir)
        nodes = [self.join(h, "n0:29400", "--profile", "lan", "--env-file",
                           str(out / f"{h}.env"), timeout="90s") for h in range(self.hosts)]
        for node in nodes:
            self.assertEqual(self.finish(node, 120), 0, node.output())
        envs = [parse_env_file(out / f"{h}.env") for h in range(self.hosts)]
        self.assertEqual(len({(e["MASTER_ADDR"], e["MASTER_PORT"], e["WORLD_SIZE"])
                              for e in envs}), 1)
        self.assertEqual(sorted(int(e["RANK"]) for e in envs), list(range(self.hosts)))


class IPv6Test(NetnsCase):
    ipv6 = True

    def test_ipv6_only_lan_converges(self) -> None:
        out = Path(self.lab.workdir)
        seed = self.lab.endpoint(0)  # "[fd77::1]:29400"
        self.assertEqual(seed, "[fd77::1]:29400")
        listen = ("--listen", "[::]:29400")  # explicit on the seed; the others use the default
        first = self.join(0, seed, *listen, "--env-file", str(out / "0.env"))
        reports = []

        def seed_answers() -> bool:
            reports.append(self.doctor(1, seed, "--timeout", "2s"))
            return self.check(reports[-1][1], "reach")["verdict"] == "pass"

        wait_until(seed_answers, 20, "the seed node to listen", interval=0.2)
        code, report = reports[-1]
        self.assertEqual(self.check(report, "handshake")["verdict"], "pass", report)
        self.assertEqual(report["advertise"], self.lab.address(1))
        # The default listen address (0.0.0.0) becomes [::] when every seed is IPv6, in join
        # and in doctor alike, so the check passes without --listen.
        self.assertEqual(self.check(report, "listen port")["subject"], "[::]:29400", report)
        self.assertEqual(code, 0, report)
        nodes = [first] + [self.join(h, seed, "--env-file", str(out / f"{h}.env"))
                           for h in range(1, self.hosts)]
        for node in nodes:
            self.assertEqual(self.finish(node, 60), 0, node.output())
        envs = [parse_env_file(out / f"{h}.env") for h in range(self.hosts)]
        self.assertEqual(len({(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs}), 1)
        self.assertIn(envs[0]["MASTER_ADDR"], [self.lab.address(h) for h in range(self.hosts)])
        self.assertTrue(all(e["GLOO_SOCKET_IFNAME"] == "eth0" for e in envs), envs)



class PartitionTest(NetnsCase):
    """The LAN splits in two halves after every node joined and before the round closed
    (issue 21, disjoint groups): whatever each half does, every env file written by any host
    must describe one and the same job (world size, master address and port) and no rank may
    be given twice. Only the half that holds the seed (n0, the only one) may commit; the
    other half waits until the partition heals and is then told it was not admitted (exit
    9), or gives up at --join-timeout (5). The partition is one nftables rule set on the
    bridge, removed once each half has declared the other dead (observed with `members`)."""

    hosts = 0  # each test builds a lab of its own size
    JOIN_TIMEOUT = 30  # s: the half without the seed exits by then at the latest

    def setUp(self) -> None:
        self.bin = binary()
        self.started = time.monotonic()
        self.timeline: List[str] = []

    def note(self, event: str) -> None:
        self.timeline.append(f"{time.monotonic() - self.started:.1f} s {event}")

    def build_lab(self, hosts: int) -> None:
        self.lab = Lab(hosts)
        self.addCleanup(self.lab.close)

    # ---- helpers ----------------------------------------------------------------------------

    def start_node(self, host: int, nnodes: str, last_call: str) -> Process:
        out = self.lab.workdir
        return self.lab.start(host, [
            self.bin, "join", "--seed", "n0:29400", "--nnodes", nnodes, "--last-call", last_call,
            "--run-id", RUN_ID, "--join-timeout", f"{self.JOIN_TIMEOUT}s",
            "--env-file", str(out / f"{host}.env"),
            "--membership-file", str(out / f"{host}.json")], name=f"join-n{host}")

    def table(self, host: int) -> Dict[str, str]:
        """host's own membership table, {address: status}, through `members` run on host
        itself (never across the partition); {} when the node no longer answers."""
        result = self.lab.exec(host, [self.bin, "members", "--seed", self.lab.endpoint(host),
                                      "--run-id", RUN_ID, "--format", "json", "--timeout", "2s"],
                               timeout=20)
        if result.returncode != 0:
            return {}
        try:
            rows = json.loads(result.stdout)
        except json.JSONDecodeError:
            return {}
        return {row["endpoint"].rsplit(":", 1)[0]: row["status"] for row in rows}

    def await_known(self, asked: Sequence[int], known: Sequence[int], timeout: float) -> None:
        """Until every host in `asked` lists every host in `known` as alive or suspect."""
        addresses = [self.lab.address(h) for h in known]

        def all_known() -> bool:
            for host in asked:
                table = self.table(host)
                if any(table.get(a) not in ("alive", "suspect") for a in addresses):
                    return False
            return True

        try:
            wait_until(all_known, timeout, f"{list(asked)} to know {list(known)}", interval=0.1)
        except TimeoutError as error:
            self.fail(f"{error}\n{self.logs()}")

    def committed(self, host: int) -> bool:
        return (self.lab.workdir / f"{host}.env").exists()

    def buried_or_done(self, host: int, others: Sequence[int], node: Process) -> bool:
        """host committed, exited, or declared every host of `others` dead."""
        if self.committed(host) or not node.running():
            return True
        table = self.table(host)
        return bool(table) and all(table.get(self.lab.address(h)) == "dead" for h in others)

    def no_env_file_yet(self) -> None:
        written = sorted(p.name for p in self.lab.workdir.glob("*.env"))
        self.assertFalse(written, "the round closed before the partition (env files "
                         f"{written}): the test did not set up the split\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.output()}" for p in self.lab.processes)

    def partitioned_round(self, nodes: Dict[int, Process], side_a: Sequence[int],
                          side_b: Sequence[int]) -> None:
        """With the partition in place: waits until each half buried the other (or closed),
        lets the half without the seed commit if it is going to, heals, waits for every
        process, then checks the outcome of the round across all hosts."""
        # lan profile: suspect after two missed probe rounds (a few s), dead 4 s later (the
        # suspicion timeout up to 10 members); typically 6-10 s, bounded generously for load.
        bury = 30

        def each_half_buried_the_other() -> bool:
            return (all(self.buried_or_done(h, side_b, nodes[h]) for h in side_a) and
                    all(self.buried_or_done(h, side_a, nodes[h]) for h in side_b))

        try:
            wait_until(each_half_buried_the_other, bury, "each half to bury the other",
                       interval=0.2)
            self.note("each half buried the other (or closed)")
        except TimeoutError:  # heal anyway: what matters is what the round wrote
            self.note(f"the halves did not both bury the other within {bury} s")
        # Without the quorum base the half without the seed would commit right after burying
        # the other: give it the time to (a few gossip periods), so that the heal cannot
        # pre-empt it.
        try:
            wait_until(lambda: all(self.committed(h) or not nodes[h].running() for h in nodes),
                       3, "every node to commit or stop", interval=0.1)
        except TimeoutError:
            pass
        self.lab.heal()
        self.note("healed")
        codes = {h: self.finish(node, self.JOIN_TIMEOUT + 30) for h, node in nodes.items()}
        self.check_one_outcome(codes, side_a, side_b)

    def check_one_outcome(self, codes: Dict[int, int], side_a: Sequence[int],
                          side_b: Sequence[int]) -> None:
        out = self.lab.workdir
        envs = {h: parse_env_file(out / f"{h}.env") for h in codes if self.committed(h)}
        lines = [f"n{h} ({'seed half' if h in side_a else 'other half'}): exit {codes[h]}, " +
                 (f"RANK={envs[h]['RANK']} WORLD_SIZE={envs[h]['WORLD_SIZE']} "
                  f"MASTER={envs[h]['MASTER_ADDR']}:{envs[h]['MASTER_PORT']}"
                  if h in envs else "no env file") for h in sorted(codes)]
        self.note("every process exited")
        summary = "\n".join(lines + ["timeline: " + ", ".join(self.timeline)])
        print(f"\n{self.id()}:\n{summary}", file=sys.stderr)
        context = f"\n{summary}\n{self.logs()}"

        # Safety: one job. Every env file written by any host names the same world size,
        # master address and master port, and no rank is handed out twice.
        jobs = {(e["WORLD_SIZE"], e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs.values()}
        self.assertLessEqual(len(jobs), 1, f"split brain: {len(jobs)} different jobs" + context)
        ranks = [e["RANK"] for e in envs.values()]
        self.assertEqual(len(ranks), len(set(ranks)), "split brain: a rank given twice" + context)

        # The scenario really happened: the outcome was not a view across the partition
        # (that would mean the round closed before it was cut).
        for h, env in envs.items():
            self.assertLessEqual(int(env["WORLD_SIZE"]), max(len(side_a), len(side_b)),
                                 f"n{h} committed a view across the partition: the round "
                                 "closed before the cut, the test proved nothing" + context)
        # Every process ended as documented: 0 with its env file, 9 (not admitted) or 5 (join
        # timeout) without one.
        for h, code in codes.items():
            self.assertEqual(code == 0, h in envs, f"n{h}: exit {code}" + context)
            self.assertIn(code, (0, 5, 9), f"n{h}: exit {code}" + context)
        # Liveness where it is possible: the half holding the seed commits, all of it.
        self.assertEqual(sorted(envs), sorted(side_a), "the seed's half did not commit alone"
                         + context)
        self.assertEqual(sorted(int(envs[h]["RANK"]) for h in side_a),
                         list(range(len(side_a))), context)
        for h in side_a:
            members = json.loads((out / f"{h}.json").read_text())
            self.assertEqual(sorted(n["hostname"] for n in members["nodes"]),
                             [self.lab.hostname(a) for a in side_a], context)

    # ---- tests ------------------------------------------------------------------------------

    def test_two_halves_of_two_during_the_last_call(self) -> None:
        # --nnodes 2:8, four hosts: once two are in, a last call of 6 s waits for more. The
        # LAN splits {n0, n1} | {n2, n3} during it, after all four joined: each half has MIN
        # nodes once it buries the other.
        self.build_lab(4)
        side_a, side_b = [0, 1], [2, 3]
        last_call = 6.0
        self.started = time.monotonic()  # no node's last call can start before this
        nodes = {h: self.start_node(h, "2:8", f"{last_call:g}s") for h in range(4)}
        # Every node knows all four (asking each node its own table).
        self.await_known(range(4), range(4), timeout=last_call)
        self.note("all joined")
        self.lab.partition(side_a, side_b)
        self.note("cut")
        cut = time.monotonic() - self.started
        # No node's last call (which starts after that node's launch) has ended yet.
        self.assertLess(cut, last_call, "the partition came after the last call: the test "
                        f"did not set up the split (cut at {cut:.1f} s)\n{self.logs()}")
        self.no_env_file_yet()
        self.partitioned_round(nodes, side_a, side_b)

    def test_two_groups_of_three_out_of_six_processes(self) -> None:
        # --nnodes 3:4, six hosts: MAX is 4, so six nodes that all joined close a view of the
        # first four at once, within a fraction of a second: too fast to cut the LAN in
        # between from outside. n2 (one of those four) therefore stalls (SIGSTOP) from just
        # before n3-n5 start until the LAN is cut {n0, n1, n2} | {n3, n4, n5}; without its
        # bits the view of four cannot close. A stall of ~2 s is far below the time to be
        # declared dead, so n2 is still a member on both sides when the cut comes.
        self.build_lab(6)
        side_a, side_b = [0, 1, 2], [3, 4, 5]
        stalled = 2
        nodes = {h: self.start_node(h, "3:4", "5s") for h in side_a}
        # The seed's half joins first: three nodes is MIN, so a last call starts (5 s).
        self.await_known(side_a, side_a, timeout=5)
        nodes[stalled].pause()
        self.note(f"n{stalled} stalled")
        try:
            nodes.update({h: self.start_node(h, "3:4", "5s") for h in side_b})
            # Every running node knows all six; the stalled one is still alive or suspect.
            self.await_known([h for h in nodes if h != stalled], range(6), timeout=10)
            self.note("all joined")
            self.lab.partition(side_a, side_b)
            self.note("cut")
        finally:
            nodes[stalled].resume()
            self.note(f"n{stalled} resumed")
        self.no_env_file_yet()
        self.partitioned_round(nodes, side_a, side_b)


if __name__ == "__main__":
    unittest.main()
