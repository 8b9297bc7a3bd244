"""A lab of network namespaces that look like separate machines on one LAN.

    with Lab(hosts=4) as lab:             # or Lab(hosts=4, ipv6=True) for an IPv6-only LAN
        node = lab.start(0, [binary(), "join", "--seed", "n0:29400", ...])
        node.wait(timeout=30)

Each host is a namespace `<prefix>-h<i>` with one interface `eth0` plugged into a bridge
that lives in a namespace of its own (`<prefix>-sw`), so nothing touches the root namespace's
network. Host i has the name `n<i>`, the address 10.77.0.<i+1>/24 (or fd77::<i+1>/64 with
nodad), and an /etc/hosts (through `ip netns exec`'s /etc/netns/<ns>/ bind mount) that
maps every n<j> to its address. Processes run under `unshare --uts` with that host name, so
each "machine" also has its own `hostname`.

partition() cuts the LAN in two halves (nftables on the bridge) until heal().

Every process has a log file and is killed on close(); close() deletes every namespace,
/etc/netns entry and log it created, also after a failure (GR_KEEP_NETNS_LOGS=1 keeps the
logs). Standard library only; needs root,
iproute2, nftables and util-linux's unshare.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "support"))
from testlib import TempDir, signal_group, start, stop  # noqa: E402
NETNS_ETC = Path("/etc/netns")
COMMAND_TIMEOUT = 20  # s: any single ip/nft command


def missing_requirements() -> Optional[str]:
    """Why this machine cannot run the lab, or None."""
    if os.geteuid() != 0:
        return "network namespace tests need root (ip netns, veth, nftables)"
    for tool in ("ip", "nft", "unshare"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (apt-get install iproute2 nftables util-linux)"
    return None


def run(args: Sequence[str], timeout: float = COMMAND_TIMEOUT, check: bool = True,
        input_text: Optional[str] = None) -> subprocess.CompletedProcess:
    result = subprocess.run(list(args), input=input_text, capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


class Process:
    """A process in one of the lab's hosts, with its output in a log file."""

    def __init__(self, popen: subprocess.Popen, log: Path, name: str):
        self.popen = popen
        self.log = log
        self.name = name

    def wait(self, timeout: float) -> int:
        """Exit status; raises subprocess.TimeoutExpired (after killing it) when too slow."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def running(self) -> bool:
        return self.popen.poll() is None

    def pause(self) -> None:
        """SIGSTOP to its process group: the node stalls (its kernel still acknowledges TCP)
        until resume(). The group, because an env-file-only `join` runs its node in a child
        (tools/gossip-rdzv/handoff.hpp): stopping the process waited for would not stall it."""
        signal_group(self.popen.pid, signal.SIGSTOP)

    def resume(self) -> None:
        signal_group(self.popen.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL to its process group (it and what it started), then reaped."""
        stop(self.popen)


class Lab:
    """`hosts` namespaces on one bridge. Use as a context manager, or call close()."""

    _counter = 0

    def __init__(self, hosts: int, ipv6: bool = False, prefix: Optional[str] = None,
                 names: Optional[Dict[str, Sequence[int]]] = None):
        """`names` adds hosts-file names that stand for several hosts' addresses (a DNS name
        with several records, as a Kubernetes headless Service), in every namespace."""
        Lab._counter += 1
        # Interface and namespace names stay short: veth names are limited to 15 bytes.
        self.prefix = prefix or f"gr{os.getpid() % 100000}{Lab._counter}"
        self.hosts = hosts
        self.ipv6 = ipv6
        self.names = dict(names or {})
        self.switch = f"{self.prefix}-sw"
        self.namespaces: List[str] = []
        self.processes: List[Process] = []
        # Failing assertions quote the logs they need; set GR_KEEP_NETNS_LOGS=1 to keep all.
        self.logs = TempDir(f"{self.prefix}-", keep=bool(os.environ.get("GR_KEEP_NETNS_LOGS")))
        self.workdir = self.logs.path
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    # ---- topology ---------------------------------------------------------------------------

    def namespace(self, host: int) -> str:
        return f"{self.prefix}-h{host}"

    def hostname(self, host: int) -> str:
        return f"n{host}"

    def address(self, host: int) -> str:
        return f"fd77::{host + 1}" if self.ipv6 else f"10.77.0.{host + 1}"

    def endpoint(self, host: int, port: int = 29400) -> str:
        """"10.77.0.1:29400" or "[fd77::1]:29400"."""
        address = self.address(host)
        return f"[{address}]:{port}" if self.ipv6 else f"{address}:{port}"

    def unused_address(self) -> str:
        """An address on the LAN that no host has."""
        return "fd77::99" if self.ipv6 else "10.77.0.99"

    def _add_namespace(self, name: str) -> None:
        run(["ip", "netns", "add", name])
        self.namespaces.append(name)
        run(["ip", "-n", name, "link", "set", "lo", "up"])

    def _build(self) -> None:
        self._add_namespace(self.switch)
        run(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", self.switch, "link", "set", "br0", "up"])
        for host in range(self.hosts):
            self._add_host(host)
        self._write_hosts_files()

    def _add_host(self, host: int) -> None:
        ns = self.namespace(host)
        self._add_namespace(ns)
        inner, outer = f"{self.prefix}i{host}", f"{self.prefix}o{host}"
        # Created inside the switch namespace, so the root namespace never holds them.
        run(["ip", "-n", self.switch, "link", "add", outer, "type", "veth", "peer", "name", inner])
        run(["ip", "-n", self.switch, "link", "set", inner, "netns", ns])
        run(["ip", "-n", self.switch, "link", "set", outer, "master", "br0"])
        run(["ip", "-n", self.switch, "link", "set", outer, "up"])
        run(["ip", "-n", ns, "link", "set", inner, "name", "eth0"])
        if self.ipv6:
            run(["ip", "-n", ns, "-6", "addr", "add", f"{self.address(host)}/64", "dev", "eth0",
                 "nodad"])
        else:
            run(["ip", "-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])

    def _write_hosts_files(self) -> None:
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost"]
        lines += [f"{self.address(h)} {self.hostname(h)}" for h in range(self.hosts)]
        # One line per address: glibc returns every line of a name ("multi on", Debian's
        # /etc/host.conf), as a DNS server returns every record.
        lines += [f"{self.address(h)} {name}" for name, hosts in self.names.items()
                  for h in hosts]
        for host in range(self.hosts):
            directory = NETNS_ETC / self.namespace(host)
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "hosts").write_text("\n".join(lines) + "\n")
            # No DNS inside the lab: names not in hosts fail at once instead of timing out.
            (directory / "resolv.conf").write_text("# gossip-rdzv netns test: no DNS\n")

    # ---- processes --------------------------------------------------------------------------

    def command(self, host: int, args: Sequence[str]) -> List[str]:
        """`args` run in host's namespace, under its own host name."""
        return ["ip", "netns", "exec", self.namespace(host), "unshare", "--uts", "sh", "-c",
                'hostname "$0" && exec "$@"', self.hostname(host), *args]

    def start(self, host: int, args: Sequence[str], name: Optional[str] = None,
              env: Optional[Dict[str, str]] = None) -> Process:
        name = name or f"{self.hostname(host)}-{len(self.processes)}"
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            popen = start(self.command(host, args), out, subprocess.STDOUT,
                          env={**os.environ, **(env or {})})
        process = Process(popen, log, name)
        self.processes.append(process)
        return process

    def exec(self, host: int, args: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess:
        """Runs `args` in host to completion; stdout and stderr are captured."""
        return run(self.command(host, args), timeout=timeout, check=False)

    # ---- faults -----------------------------------------------------------------------------

    def nft(self, host: int, ruleset: str) -> None:
        """Loads an nftables ruleset into host's namespace (`nft -f -`)."""
        run(["ip", "netns", "exec", self.namespace(host), "nft", "-f", "-"], input_text=ruleset)

    def drop_port(self, host: int, port: int, inbound: bool = True, outbound: bool = True) -> None:
        """A firewall on host: TCP to `port` is dropped silently (no RST, no ICMP)."""
        rules = ""
        if inbound:
            rules += f"  chain input {{ type filter hook input priority 0; tcp dport {port} drop; }}\n"
        if outbound:
            rules += (f"  chain output {{ type filter hook output priority 0; "
                      f"tcp dport {port} drop; }}\n")
        self.nft(host, "table inet grtest {\n" + rules + "}\n")

    def random_loss(self, host: int, percent: int) -> None:
        """Drops `percent`% of the packets host receives on eth0 (this kernel has no netem)."""
        assert 0 < percent < 100 and percent % 10 == 0
        self.nft(host, "table inet grloss {\n"
                       "  chain input { type filter hook input priority 0; "
                       f"iifname \"eth0\" numgen random mod 10 < {percent // 10} drop; }}\n"
                       "}\n")

    def partition(self, side_a: Sequence[int], side_b: Sequence[int]) -> None:
        """Cuts the LAN in two: every packet between a host of side_a and one of side_b is
        dropped, both ways, while each side still talks within itself. One nftables
        transaction on the bridge (in the switch namespace), so both directions and every
        pair go down at the same instant and the hosts' own rulesets stay untouched; also
        drops the segments of connections already open. heal() removes it."""
        family = "ip6" if self.ipv6 else "ip"
        a = ", ".join(self.address(h) for h in side_a)
        b = ", ".join(self.address(h) for h in side_b)
        run(["ip", "netns", "exec", self.switch, "nft", "-f", "-"], input_text=(
            "table bridge grpartition {\n"
            "  chain forward { type filter hook forward priority 0;\n"
            f"    {family} saddr {{ {a} }} {family} daddr {{ {b} }} drop\n"
            f"    {family} saddr {{ {b} }} {family} daddr {{ {a} }} drop\n"
            "  }\n"
            "}\n"))

    def heal(self) -> None:
        """Removes the partition() (one transaction: every pair comes back at once)."""
        run(["ip", "netns", "exec", self.switch, "nft", "delete", "table", "bridge",
             "grpartition"])

    # ---- cleanup ----------------------------------------------------------------------------

    def close(self) -> None:
        for process in self.processes:
            process.kill()
        for ns in reversed(self.namespaces):
            self._kill_namespace_pids(ns)
            run(["ip", "netns", "del", ns], check=False)
            shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)
        self.namespaces.clear()
        try:
            NETNS_ETC.rmdir()  # only when empty: other labs may be running
        except OSError:
            pass
        self.logs.cleanup()

    @staticmethod
    def _kill_namespace_pids(ns: str) -> None:
        result = run(["ip", "netns", "pids", ns], check=False)
        for pid in result.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

