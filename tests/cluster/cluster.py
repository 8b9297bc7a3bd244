"""A harness that runs many real `gossip-rdzv` processes on loopback and checks what they wrote.

Used by the cluster tests (tests/cluster), the end-to-end and store tests (tests/e2e,
tests/store), the network-namespace lab (tests/netns: binary, wait_until) and the benchmarks
(bench/: free_ports, the process harness). Standard library only; run with /usr/bin/python3.

Every process is started with a log file for stdout and stderr, waited for with a deadline,
and killed by `Cluster.close()` (call it from tearDown / a `with` block), so a hung node can
never outlive its test.
"""
from __future__ import annotations

import json
import os
import random
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# Every variable a per-rank env file holds (DESIGN.md "Output"); GLOO_SOCKET_IFNAME is
# checked separately since it is only written where the interface can be known.
RANK_VARS = (
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "GROUP_RANK", "GROUP_WORLD_SIZE", "NODE_RANK", "NNODES", "ROLE_NAME", "ROLE_RANK",
    "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
)
NODE_KEYS = ("node_rank", "rank_offset", "nproc", "host", "endpoint", "hostname", "node_id",
             "generation")


def binary() -> str:
    """The gossip-rdzv binary under test: $GOSSIP_RDZV_BIN (set by CTest), else build/."""
    path = os.environ.get("GOSSIP_RDZV_BIN")
    if not path:
        for build in ("build", "build-e2e", "build-lead"):
            candidate = REPO / build / "tools" / "gossip-rdzv" / "gossip-rdzv"
            if candidate.exists():
                path = str(candidate)
                break
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(
            f"gossip-rdzv binary not found ({path!r}); build it or set GOSSIP_RDZV_BIN")
    return path


def _ephemeral_range() -> range:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return range(low, high + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


# Ports we hand out come from below the kernel's ephemeral range: the OS never gives those to
# outgoing connections or to bind(port 0) (which is how nodes pick a free MASTER_PORT), so a
# port that was free when we checked it stays free until the node binds it, even with many
# nodes connecting to each other and other tests running side by side. 29400-29499 is left
# to the demo and to users.
_PORT_POOL = [p for p in range(20000, 32768) if not 29400 <= p < 29500
              and p not in _ephemeral_range()]
_rng = random.Random(os.getpid() ^ time.monotonic_ns())


def free_ports(count: int) -> List[int]:
    """`count` distinct loopback TCP ports, outside the ephemeral range, free right now."""
    ports: List[int] = []
    for candidate in _rng.sample(_PORT_POOL, min(len(_PORT_POOL), 50 * count + 50)):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
        ports.append(candidate)
        if len(ports) == count:
            return ports
    raise RuntimeError(f"could not find {count} free loopback ports")


def wait_until(predicate: Callable[[], bool], timeout: float, what: str = "condition",
               interval: float = 0.02) -> None:
    """Polls `predicate` until it holds; raises TimeoutError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(interval)


def parse_env_file(path: Path) -> Dict[str, str]:
    """Reads KEY=VALUE or `export KEY=VALUE` lines; values may be shell-quoted."""
    result: Dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):]
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{path}: not a KEY=VALUE line: {line!r}")
        words = shlex.split(value) if value else [""]
        result[key] = words[0] if words else ""
    return result


@dataclass
class Proc:
    """One process started by the cluster, with its logs."""
    name: str
    args: List[str]
    popen: subprocess.Popen
    stdout_path: Path
    stderr_path: Path
    started: float
    returncode: Optional[int] = None
    ended: Optional[float] = None
    rusage: Optional[object] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            # os.wait4 reaps the child and gives its peak RSS (the benchmark reports it).
            try:
                pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
            except ChildProcessError:
                pid = 0
                code = self.popen.poll()
                if code is not None:
                    self.returncode, self.ended = code, time.monotonic()
                return self.returncode
            if pid != 0:
                self.returncode = os.waitstatus_to_exitcode(status)
                self.popen.returncode = self.returncode
                self.ended = time.monotonic()
                self.rusage = usage
        return self.returncode

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@dataclass
class Node:
    """A `gossip-rdzv join` process and the files it writes."""
    index: int
    port: int
    nproc: int
    dir: Path
    args: List[str] = field(default_factory=list)
    proc: Optional[Proc] = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def env_template(self) -> Path:
        return self.dir / "rank{local_rank}.env"

    def set_arg(self, flag: str, value: str) -> None:
        """Replaces the value of `flag` in the command line (before the node starts)."""
        self.args[self.args.index(flag) + 1] = value

    def env_path(self, local_rank: int) -> Path:
        return self.dir / f"rank{local_rank}.env"

    @property
    def membership_path(self) -> Path:
        return self.dir / "membership.json"

    def files_written(self) -> bool:
        return self.membership_path.exists() and all(
            self.env_path(r).exists() for r in range(self.nproc))

    def env(self, local_rank: int) -> Dict[str, str]:
        return parse_env_file(self.env_path(local_rank))

    def membership(self) -> dict:
        return json.loads(self.membership_path.read_text())


@dataclass
class Cluster:
    """Starts gossip-rdzv processes under `workdir` and cleans them up in `close()`."""
    workdir: Path
    bin: str = field(default_factory=binary)
    procs: List[Proc] = field(default_factory=list)
    nodes: List[Node] = field(default_factory=list)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- processes -------------------------------------------------------------------------
    def spawn(self, name: str, args: Sequence[str], env: Optional[dict] = None) -> Proc:
        """Starts `args` with stdout/stderr in workdir/<name>.out|.err."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        out = self.workdir / f"{name}.out"
        err = self.workdir / f"{name}.err"
        with open(out, "wb") as fout, open(err, "wb") as ferr:
            popen = subprocess.Popen(list(args), stdin=subprocess.DEVNULL, stdout=fout,
                                     stderr=ferr, env=env, start_new_session=True)
        proc = Proc(name, list(args), popen, out, err, time.monotonic())
        self.procs.append(proc)
        return proc

    def run(self, args: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Runs a short command (usage errors, `members`) to completion, bounded."""
        return subprocess.run(list(args), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)

    def add_node(self, seeds: Iterable[str], nnodes: str, nproc: int = 1,
                 port: Optional[int] = None, extra: Sequence[str] = (),
                 run_id: str = "cluster-test", join_timeout: str = "30s",
                 profile: str = "local", start: bool = True) -> Node:
        """Declares (and by default starts) one `gossip-rdzv join` node on 127.0.0.1."""
        index = len(self.nodes) + 1
        if port is None:
            port = free_ports(1)[0]
        node = Node(index, port, nproc, self.workdir / f"node{index}")
        node.dir.mkdir(parents=True, exist_ok=True)
        node.args = [
            self.bin, "join",
            "--seed", ",".join(seeds),
            "--listen", node.endpoint,
            "--nnodes", nnodes,
            "--nproc-per-node", str(nproc),
            "--run-id", run_id,
            "--profile", profile,
            "--join-timeout", join_timeout,
            "--env-file", str(node.env_template),
            "--membership-file", str(node.membership_path),
            *extra,
        ]
        self.nodes.append(node)
        if start:
            self.start_node(node)
        return node

    def start_node(self, node: Node) -> None:
        node.proc = self.spawn(f"node{node.index}", node.args)

    def start_nodes(self, count: int, nnodes: Optional[str] = None,
                    nprocs: Optional[Sequence[int]] = None, seed_index: int = 0,
                    extra: Sequence[str] = (), **kwargs) -> List[Node]:
        """Starts `count` nodes on fresh ports; node `seed_index` (0-based) is every node's
        seed. `nprocs` gives each node's --nproc-per-node (default 1)."""
        ports = free_ports(count)
        nprocs = list(nprocs) if nprocs is not None else [1] * count
        seed = f"127.0.0.1:{ports[seed_index]}"
        nodes = [self.add_node([seed], nnodes or str(count), nproc=nprocs[i], port=ports[i],
                               extra=extra, start=False, **kwargs) for i in range(count)]
        for node in nodes:
            self.start_node(node)
        return nodes

    def wait(self, procs: Iterable[Proc], timeout: float) -> List[int]:
        """Waits until every process in `procs` exited; raises TimeoutError (with the logs of
        the ones still running) after `timeout` seconds."""
        procs = list(procs)
        try:
            wait_until(lambda: all(p.poll() is not None for p in procs), timeout,
                       what="processes to exit")
        except TimeoutError:
            running = [p for p in procs if p.poll() is None]
            details = "\n".join(f"--- {p.name} still running; stderr:\n{p.stderr[-3000:]}"
                                for p in running)
            raise TimeoutError(
                f"{len(running)} of {len(procs)} processes still running after {timeout}s\n"
                f"{details}") from None
        return [p.returncode for p in procs]  # type: ignore[misc]

    def wait_nodes(self, nodes: Optional[Iterable[Node]] = None, timeout: float = 60.0) -> List[int]:
        nodes = list(nodes) if nodes is not None else self.nodes
        return self.wait([n.proc for n in nodes], timeout)  # type: ignore[misc]

    def kill(self, proc: Proc, sig: int = signal.SIGKILL) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.popen.pid, sig)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        """Kills (SIGKILL, whole process group) and reaps every process still running."""
        for proc in self.procs:
            self.kill(proc)
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.popen.wait(timeout=10)
                except (subprocess.TimeoutExpired, ChildProcessError):
                    pass

    def logs(self, nodes: Optional[Iterable[Node]] = None) -> str:
        """Every node's exit status and stderr, for assertion messages."""
        parts = []
        for node in (nodes if nodes is not None else self.nodes):
            if node.proc is None:
                continue
            parts.append(f"--- node{node.index} {node.endpoint} exit={node.proc.poll()}\n"
                         f"{node.proc.stderr[-4000:]}")
        return "\n".join(parts)


def check_consistent(test, nodes: Sequence[Node], run_id: str = "cluster-test",
                     master_addr: str = "127.0.0.1") -> dict:
    """Asserts (through the unittest.TestCase `test`) that every file every node wrote
    describes one and the same assignment, and returns the membership JSON."""
    world_size = sum(n.nproc for n in nodes)
    all_files = []
    node_ranks = []
    for node in nodes:
        test.assertTrue(node.files_written(), f"node{node.index} did not write its files")
        envs = [node.env(r) for r in range(node.nproc)]
        for local_rank, env in enumerate(envs):
            where = f"node{node.index} rank{local_rank}.env"
            for key in RANK_VARS:
                test.assertIn(key, env, f"{where} lacks {key}: {env}")
            test.assertEqual(int(env["LOCAL_RANK"]), local_rank, where)
            test.assertEqual(int(env["LOCAL_WORLD_SIZE"]), node.nproc, where)
            test.assertEqual(env["GROUP_RANK"], env["NODE_RANK"], where)
            test.assertEqual(int(env["GROUP_WORLD_SIZE"]), len(nodes), where)
            test.assertEqual(int(env["NNODES"]), len(nodes), where)
            test.assertEqual(env["ROLE_RANK"], env["RANK"], where)
            test.assertEqual(env["ROLE_WORLD_SIZE"], env["WORLD_SIZE"], where)
            test.assertEqual(env["ROLE_NAME"], "default", where)
            test.assertEqual(env["TORCHELASTIC_RUN_ID"], run_id, where)
            test.assertEqual(env["MASTER_ADDR"], master_addr, where)
            if master_addr == "127.0.0.1":
                # The advertised address is on loopback: its interface is known.
                test.assertEqual(env.get("GLOO_SOCKET_IFNAME"), "lo", where)
            all_files.append((where, env))
        test.assertEqual(len({e["NODE_RANK"] for e in envs}), 1,
                         f"node{node.index}: local ranks disagree on NODE_RANK")
        node_ranks.append(int(envs[0]["NODE_RANK"]))
        offsets = [int(e["RANK"]) - int(e["LOCAL_RANK"]) for e in envs]
        test.assertEqual(len(set(offsets)), 1, f"node{node.index}: ranks not contiguous")

    for key in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                "TORCHELASTIC_RESTART_COUNT"):
        values = {env[key] for _, env in all_files}
        test.assertEqual(len(values), 1, f"files disagree on {key}: {values}")
    test.assertEqual(int(all_files[0][1]["WORLD_SIZE"]), world_size)
    master_port = int(all_files[0][1]["MASTER_PORT"])
    test.assertTrue(0 < master_port < 65536, f"MASTER_PORT {master_port}")
    ranks = sorted(int(env["RANK"]) for _, env in all_files)
    test.assertEqual(ranks, list(range(world_size)), "RANKs are not exactly 0..W-1")
    test.assertEqual(sorted(node_ranks), list(range(len(nodes))),
                     "NODE_RANKs are not a permutation")

    memberships = [n.membership() for n in nodes]
    for node, m in zip(nodes[1:], memberships[1:]):
        test.assertEqual(m, memberships[0],
                         f"node{node.index}'s membership differs from node{nodes[0].index}'s")
    m = memberships[0]
    env0 = all_files[0][1]
    test.assertEqual(m["run_id"], run_id)
    test.assertEqual(str(m["round"]), env0["TORCHELASTIC_RESTART_COUNT"])
    test.assertEqual(m["world_size"], world_size)
    test.assertEqual(m["master_addr"], env0["MASTER_ADDR"])
    test.assertEqual(m["master_port"], master_port)
    test.assertEqual(m["nnodes"], len(nodes))
    test.assertEqual(len(m["nodes"]), len(nodes))
    test.assertEqual([e["node_rank"] for e in m["nodes"]], list(range(len(nodes))))
    offset = 0
    for entry in m["nodes"]:
        for key in NODE_KEYS:
            test.assertIn(key, entry)
        test.assertEqual(entry["rank_offset"], offset)
        offset += entry["nproc"]
    test.assertEqual(m["nodes"][0]["host"], m["master_addr"])
    by_endpoint = {e["endpoint"]: e for e in m["nodes"]}
    for node in nodes:
        entry = by_endpoint.get(node.endpoint)
        test.assertIsNotNone(entry, f"node{node.index} ({node.endpoint}) not in membership")
        env = node.env(0)
        test.assertEqual(entry["node_rank"], int(env["NODE_RANK"]))
        test.assertEqual(entry["rank_offset"], int(env["RANK"]))
        test.assertEqual(entry["nproc"], node.nproc)
    return m
