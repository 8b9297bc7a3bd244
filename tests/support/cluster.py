"""A harness that runs many real `gossip-rdzv` processes on loopback and checks what they wrote.

Used by the cluster tests (tests/cluster), the end-to-end and store tests (tests/e2e,
tests/store) and the benchmarks (bench/). Built on testlib.py (processes, ports, waiting);
standard library only; run with /usr/bin/python3.

Every process is started with a log file for stdout and stderr, waited for with a deadline,
and killed by `Cluster.close()` (call it from tearDown / a `with` block), so a hung node can
never outlive its test.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from testlib import Proc, Processes, binary, free_port, free_ports, parse_env_file

# Every variable a per-rank env file holds (DESIGN.md "Output"); GLOO_SOCKET_IFNAME is
# checked separately since it is only written where the interface can be known.
RANK_VARS = (
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "GROUP_RANK", "GROUP_WORLD_SIZE", "NODE_RANK", "NNODES", "ROLE_NAME", "ROLE_RANK",
    "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
)
NODE_KEYS = ("node_rank", "rank_offset", "nproc", "host", "endpoint", "hostname", "node_id",
             "generation")


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
class Cluster(Processes):
    """Starts gossip-rdzv nodes (and any other process) under `workdir`; close() ends them."""
    bin: str = field(default_factory=binary)
    nodes: List[Node] = field(default_factory=list)

    def add_node(self, seeds: Iterable[str], nnodes: str, nproc: int = 1,
                 port: Optional[int] = None, extra: Sequence[str] = (),
                 run_id: str = "cluster-test", join_timeout: str = "30s",
                 profile: str = "local", start: bool = True) -> Node:
        """Declares (and by default starts) one `gossip-rdzv join` node on 127.0.0.1."""
        index = len(self.nodes) + 1
        if port is None:
            port = free_port()
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

    def wait_nodes(self, nodes: Optional[Iterable[Node]] = None, timeout: float = 60.0) -> List[int]:
        nodes = list(nodes) if nodes is not None else self.nodes
        return self.wait([n.proc for n in nodes], timeout)  # type: ignore[misc]

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
                test.assertEqual(env.get("NCCL_SOCKET_IFNAME"), "=lo", where)
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


def run_two_launchers(test, cluster: Cluster, launcher: Path, run_id: str,
                      env: Optional[dict] = None) -> List[Dict[str, str]]:
    """Runs two examples/launcher processes on loopback, the first the seed; asserts both
    exit 0 and returns the variables each printed (tests/package, tests/cluster)."""
    ports = free_ports(2)
    seed = f"127.0.0.1:{ports[0]}"
    procs = [cluster.spawn(f"launcher{i}", [
        str(launcher), "--seed", seed, "--nnodes", "2", "--listen-host", "127.0.0.1",
        "--listen-port", str(port), "--run-id", run_id], env=env)
        for i, port in enumerate(ports)]
    codes = cluster.wait(procs, timeout=60)
    logs = "\n".join(f"--- {p.name}\n{p.stdout}\n{p.stderr}" for p in procs)
    test.assertEqual(codes, [0, 0], logs)
    envs = []
    for proc in procs:
        path = cluster.workdir / f"{proc.name}.env"
        path.write_text(proc.stdout)
        envs.append(parse_env_file(path))
    return envs
