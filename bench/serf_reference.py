"""Serf, the reference gossip system, measured the way bench_rendezvous.py measures
gossip-rdzv (issue 24, item 4): N `serf agent`s on 127.0.0.1, LAN profile, each joining
the first one, and the time until every agent knows all N members alive.

Serf has no rendezvous: "full membership" is the nearest thing it has to gossip-rdzv's env
files. Each agent's log arrives on a pipe and is timestamped on arrival (the lines'
own stamps have one-second resolution): an agent has full membership once the members
of its `EventMemberJoin` lines, less those of `EventMemberFailed` and `EventMemberLeave`,
number N. Agent 1 starts first and the others, with `-join` to it, once it logs "Serf agent
running!", all timed from the launch of agent 1. A serf agent whose `-join` fails exits
(gossip-rdzv's joiners retry): the run then reports that agent's last lines. `-retry-join`
was tried instead: at N = 64 one run took 76 s to full membership, against 1.2-1.6 s with
`-join`. At full membership (or the timeout) every agent is killed; CPU and
peak RSS are what they used until then.

Standalone: /usr/bin/python3 bench/serf_reference.py 32 128 (prints one line per run).
"""
from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from testlib import free_ports  # noqa: E402

_EVENT = re.compile(rb"serf: EventMember(Join|Failed|Leave): (\S+)")
_RUNNING = b"Serf agent running!"


def serf_binary() -> str | None:
    return shutil.which("serf")


def _vm_hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class _Agent:
    def __init__(self, index: int, command: list[str]):
        self.index = index
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buffer = b""
        self.last_lines: list[bytes] = []
        self.members: set[bytes] = set()
        self.running = False
        self.full_at: float | None = None
        self.rss_kib = 0
        self.status: int | None = None  # from os.wait4, which also gives the CPU time
        self.cpu = 0.0

    def reap(self, block: bool) -> bool:
        """Collects the exit status and CPU time once the agent ended; True if it has. Not
        Popen.poll(), which would reap it and lose the rusage."""
        if self.status is None:
            pid, status, rusage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
            if pid == 0:
                return False
            self.status = os.waitstatus_to_exitcode(status)
            self.cpu = rusage.ru_utime + rusage.ru_stime
            self.proc.returncode = self.status  # so that Popen never waits for it again
        return True

    def read(self, nnodes: int, now: float) -> bool:
        """Reads what the agent logged; False once its pipe is closed."""
        try:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        self.last_lines = (self.last_lines + lines)[-5:]
        for line in lines:
            if _RUNNING in line:
                self.running = True
            match = _EVENT.search(line)
            if not match:
                continue
            if match.group(1) == b"Join":
                self.members.add(match.group(2))
            else:
                self.members.discard(match.group(2))
        if self.full_at is None and len(self.members) == nnodes:
            self.full_at = now
        return True


def run_serf(nnodes: int, timeout: float, binary: str = "serf") -> dict:
    """One run: {"full": s or None, "complete": agents with full membership, "launch": s,
    "cpu": s, "rss": [MiB per agent]}."""
    ports = free_ports(2 * nnodes)
    bind, rpc = ports[:nnodes], ports[nnodes:]

    def command(i: int) -> list[str]:
        return [binary, "agent", f"-node=n{i}", f"-bind=127.0.0.1:{bind[i]}",
                f"-rpc-addr=127.0.0.1:{rpc[i]}", "-profile=lan", "-log-level=info",
                *([f"-join=127.0.0.1:{bind[0]}"] if i > 0 else [])]

    selector = selectors.DefaultSelector()
    agents: list[_Agent] = []
    t0 = time.monotonic()
    deadline = t0 + timeout
    t_launched = None

    def start(i: int) -> None:
        agent = _Agent(i, command(i))
        agents.append(agent)
        selector.register(agent.proc.stdout, selectors.EVENT_READ, agent)

    try:
        start(0)
        while time.monotonic() < deadline:
            if t_launched is None and agents[0].running:
                for i in range(1, nnodes):
                    start(i)
                t_launched = time.monotonic()
            if t_launched is not None and all(a.full_at is not None for a in agents):
                break
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                agent = key.data
                if not agent.read(nnodes, time.monotonic()):
                    selector.unregister(key.fileobj)
                    if agent.reap(block=True) and agent.full_at is None:
                        tail = b" | ".join(line.strip() for line in agent.last_lines)
                        raise RuntimeError(f"serf agent n{agent.index} exited {agent.status}: "
                                           f"{tail.decode(errors='replace')}")
    finally:
        for agent in agents:
            agent.rss_kib = _vm_hwm_kib(agent.proc.pid)
            if not agent.reap(block=False):
                os.killpg(agent.proc.pid, signal.SIGKILL)
                agent.reap(block=True)
            agent.proc.stdout.close()
        selector.close()
    cpu = sum(agent.cpu for agent in agents)
    complete = [a.full_at for a in agents if a.full_at is not None]
    done = len(complete) == nnodes
    return {
        "full": (max(complete) - t0) if done else None,
        "complete": len(complete),
        "launch": (t_launched - t0) if t_launched is not None else None,
        "cpu": cpu,
        "rss": [a.rss_kib / 1024.0 for a in agents],
    }


def main() -> int:
    sizes = [int(n) for n in sys.argv[1:]] or [4, 32]
    binary = serf_binary()
    if binary is None:
        print("serf_reference: no `serf` on PATH (Debian: apt-get install serf)", file=sys.stderr)
        return 1
    for n in sizes:
        run = run_serf(n, 120.0, binary)
        full = f"{run['full']:.3f} s" if run["full"] is not None else \
            f"not within 120 s ({run['complete']} of {n} agents complete)"
        print(f"N={n}: full membership {full}, CPU {run['cpu']:.2f} s, "
              f"peak RSS max {max(run['rss']):.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
