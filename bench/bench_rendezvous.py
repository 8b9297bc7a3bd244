#!/usr/bin/python3
"""How fast N gossip-rdzv nodes on loopback agree, and how much memory a node takes.

For each N it launches N `gossip-rdzv join` processes on 127.0.0.1 (node 1 is the seed of
all) with the default (LAN) profile, or the one --profile names, and measures with
time.monotonic():
  files  launch of the first process -> every node has written its env file
  join   launch of the first process -> the median `join` returned (the process exited)
  last   launch of the first process -> the last `join` returned
  stay   launch of the first process -> the last node's detached child ended (`join` without
         workers returns once its files are written; a child answers late starters until
         its stay ends, docs/cli.md)
  launch launch of the first process -> the last one started (fork/exec of N processes)
plus each node's peak RSS (below), the CPU time of
all nodes together (user + system, from os.wait4, children included: the benchmark is their
subreaper) and the TCP sockets per node (the most any node held at once,
counted from /proc/PID/fd every 0.25 s or --sample-every, and the mean over nodes of
each one's peak). Each N is repeated R times; the table shows the median (and min-max) of the times, the median CPU,
and the max / mean peak RSS over all runs.

A node's peak RSS is the larger of its `join` process's VmHWM (read from /proc/PID/status
when the sockets are counted; that process only waits once it has forked) and its child's
ru_maxrss from os.wait4. The `join` process's own ru_maxrss is not used: Linux keeps the
high-water mark across exec, so it reports this Python process's size at the fork (10-20
MiB), not the node's. The child's is the node's own: the fork copies the mark of `join`'s
memory, which exec had reset.

With --serf it also runs N `serf agent`s (Debian's serf, the reference gossip system; see
bench/serf_reference.py) and reports:
  full   launch of the first agent -> every agent knows all N members alive
plus their CPU and peak RSS until then.

With --torch it also runs N Python processes that each create torch's own c10d rendezvous
handler (RendezvousParameters(backend="c10d") + get_rendezvous_handler().next_rendezvous())
against a TCPStore hosted by the first of them, and reports:
  rdzv   the last process entering next_rendezvous() -> the last one returning from it
  span   the first process entering next_rendezvous() -> the last one returning from it
  e2e    launch -> every process has returned (includes starting Python and importing torch)

Usage (from the repository root, after building):
  /usr/bin/python3 bench/bench_rendezvous.py                       # N = 4 16 32 64, R = 3
  /usr/bin/python3 bench/bench_rendezvous.py 32 256 --profile local -r 1
  /usr/bin/python3 bench/bench_rendezvous.py 4 32 --repeats 5 --torch --torch-max 32
  /usr/bin/python3 bench/bench_rendezvous.py 32 --key-file job.key  # sealed (gossip-rdzv keygen)
docs/performance.md records the figures measured with it.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import select
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from testlib import Processes, TempDir, built_tool, free_port, free_ports  # noqa: E402
from serf_reference import run_serf, serf_binary  # noqa: E402
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch

# The torch side: one process of a c10d rendezvous. Prints a JSON line with its timings.
TORCH_WORKER = r"""
import json, sys, time
t_start = time.monotonic()
from torch.distributed.elastic.rendezvous import RendezvousParameters
from torch.distributed.elastic.rendezvous.registry import get_rendezvous_handler
index, nnodes, port, run_id = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
params = RendezvousParameters(backend="c10d", endpoint=f"127.0.0.1:{port}", run_id=run_id,
                              min_nodes=nnodes, max_nodes=nnodes, local_addr="127.0.0.1",
                              is_host=(index == 0), join_timeout=600)
handler = get_rendezvous_handler(params)
t_call = time.monotonic()
store, rank, world_size = handler.next_rendezvous()
t_return = time.monotonic()
print(json.dumps({"start": t_start, "call": t_call, "return": t_return, "rank": rank,
                  "world_size": world_size}), flush=True)
# The first process hosts the TCPStore: it must outlive every other one's last request.
store.add("bench/finished", 1)
if index == 0:
    deadline = time.monotonic() + 120
    while store.add("bench/finished", 0) < nnodes and time.monotonic() < deadline:
        time.sleep(0.01)
# No handler.shutdown(): it closes the rendezvous for every participant.
"""


def become_subreaper() -> None:
    """Orphaned descendants (each node's detached child) are reparented to us, so that
    os.wait4 gives their CPU time and peak RSS."""
    PR_SET_CHILD_SUBREAPER = 36
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise RuntimeError("prctl(PR_SET_CHILD_SUBREAPER) failed: "
                           + os.strerror(ctypes.get_errno()))


def children_of(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def reap_orphans(deadline: float) -> list[tuple[int, float, "os.struct_rusage"]]:
    """Waits for every remaining descendant until `deadline`: (pid, exit time, rusage)."""
    reaped = []
    while time.monotonic() < deadline:
        try:
            pid, _, rusage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            time.sleep(0.005)
            continue
        reaped.append((pid, time.monotonic(), rusage))
    raise RuntimeError("detached node processes still running at the timeout")


class FilesAndExits:
    """Sleeps until an env file lands in `workdir` or a `join` process exits (or a timeout),
    with inotify and pidfds: no polling loop competes with the agents for the CPU."""

    IN_MOVED_TO = 0x80
    IN_CLOSE_WRITE = 0x08

    def __init__(self, workdir: Path, procs) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.inotify = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.inotify < 0 or libc.inotify_add_watch(
                self.inotify, str(workdir).encode(), self.IN_MOVED_TO | self.IN_CLOSE_WRITE) < 0:
            raise OSError(ctypes.get_errno(), "inotify on " + str(workdir))
        self.poller = select.poll()
        self.poller.register(self.inotify, select.POLLIN)
        self.proc_of_fd = {}
        for proc in procs:
            fd = os.pidfd_open(proc.popen.pid)
            self.proc_of_fd[fd] = proc
            self.poller.register(fd, select.POLLIN)
        self.files_changed = True  # look once before the first event

    def wait(self, timeout: float) -> None:
        self.files_changed = False
        for fd, _ in self.poller.poll(timeout * 1000.0):
            if fd == self.inotify:
                try:
                    while os.read(self.inotify, 65536):
                        pass
                except BlockingIOError:
                    pass
                self.files_changed = True
            else:
                self.proc_of_fd[fd].poll()  # reaps it: exit time and rusage
                self.poller.unregister(fd)
                del self.proc_of_fd[fd]
                os.close(fd)

    def close(self) -> None:
        for fd in list(self.proc_of_fd):
            os.close(fd)
        self.proc_of_fd.clear()
        os.close(self.inotify)


def peak_rss_kib(pid: int) -> int:
    """VmHWM of a live process (its own high-water mark since exec); 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def listen_port(pid: int) -> int | None:
    """The --listen port in a live process's command line."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return int(argv[argv.index(b"--listen") + 1].rsplit(b":", 1)[1])
    except (OSError, ValueError, IndexError):
        return None


def socket_count(pid: int) -> int:
    """Sockets the process holds (its TCP connections and listeners); 0 once it is gone."""
    count = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                    count += 1
            except OSError:
                pass
    except OSError:
        return 0
    return count


def run_gossip(binary: str, nnodes: int, timeout: float, workdir: Path,
               profile: str | None, key_file: str | None = None,
               sample_every: float = 0.25, join_timeout: str = "60s") -> dict:
    ports = free_ports(nnodes)
    env_files = [workdir / f"node{i}.env" for i in range(nnodes)]
    with Processes(workdir) as fleet:
        t0 = time.monotonic()
        procs = [fleet.spawn(f"node{i}", [
            binary, "join", "--seed", f"127.0.0.1:{ports[0]}", "--listen", f"127.0.0.1:{port}",
            "--nnodes", str(nnodes), "--run-id", "bench",
            *(["--profile", profile] if profile else []),
            *(["--key-file", key_file] if key_file else []),
            "--join-timeout", join_timeout, "--env-file", str(env_files[i]), "--quiet"])
            for i, port in enumerate(ports)]
        t_launched = time.monotonic()
        pending = set(range(nnodes))
        t_files = None
        deadline = t0 + timeout
        sockets = [0] * nnodes
        join_rss_kib = [0] * nnodes  # VmHWM of each `join` process
        kids: dict[int, int] = {}  # the detached child's pid -> its node
        node_of_port = {port: i for i, port in enumerate(ports)}
        next_count = 0.0
        # Event-driven, so that the benchmark takes no CPU from the agents between samples:
        # env files are renamed into place (inotify IN_MOVED_TO on the directory), and each
        # `join`'s exit wakes its pidfd. Polling 2 ms took most of a core at N >= 128.
        waiter = FilesAndExits(workdir, procs)
        while time.monotonic() < deadline:
            if time.monotonic() >= next_count:
                for i, p in enumerate(procs):
                    if p.returncode is None:
                        family = [p.popen.pid, *children_of(p.popen.pid)]
                        kids.update({pid: i for pid in family[1:]})
                        sockets[i] = max(sockets[i], sum(map(socket_count, family)))
                        join_rss_kib[i] = max(join_rss_kib[i], peak_rss_kib(p.popen.pid))
                # Children whose `join` returned before a sample saw them are ours now.
                for pid in set(children_of(os.getpid())) - set(kids) - {
                        p.popen.pid for p in procs}:
                    if (port := listen_port(pid)) in node_of_port:
                        kids[pid] = node_of_port[port]
                next_count = time.monotonic() + sample_every
            if waiter.files_changed:
                pending = {i for i in pending if not env_files[i].exists()}
            if not pending and t_files is None:
                t_files = time.monotonic()
            if all(p.returncode is not None for p in procs):
                break
            waiter.wait(max(0.0, min(next_count, deadline) - time.monotonic()))
        waiter.close()
        # The last `join` can write its file between the loop's file check and its exit
        # check: look again before calling a file missing.
        pending = {i for i in pending if not env_files[i].exists()}
        if t_files is None and not pending:
            t_files = time.monotonic()
        orphans = reap_orphans(deadline) if all(p.poll() is not None for p in procs) else []
    codes = [p.poll() for p in procs]
    failed = [i for i, code in enumerate(codes) if code != 0]
    if failed:
        err = procs[failed[0]].stderr[-2000:]
        raise RuntimeError(f"N={nnodes}: {len(failed)} nodes failed (exit codes "
                           f"{sorted(set(map(str, codes)))}); node{failed[0]} stderr:\n{err}")
    if t_files is None:
        raise RuntimeError(f"N={nnodes}: every node exited 0 but not every env file exists")
    return {
        "launch": t_launched - t0,
        "files": t_files - t0,
        "join": statistics.median(p.ended for p in procs) - t0,
        "exit": max(p.ended for p in procs) - t0,
        "stay": max([p.ended for p in procs] + [ended for _, ended, _ in orphans]) - t0,
        "cpu": sum(p.rusage.ru_utime + p.rusage.ru_stime for p in procs)
        + sum(r.ru_utime + r.ru_stime for _, _, r in orphans),
        "rss": peak_rss_per_node(join_rss_kib, orphans, kids),
        "sockets": sockets,
    }


def peak_rss_per_node(join_rss_kib: list[int], orphans, kids: dict[int, int]) -> list[float]:
    """Each node's peak RSS in MiB: its `join` process or its detached child, the larger. A
    child no sample saw (its `join` returned and it ended between two samples) is counted
    alone: it began as a copy of its `join`, so its figure is at least that one's at the
    fork."""
    rss = [kib / 1024.0 for kib in join_rss_kib]
    unmatched = []
    for pid, _, rusage in orphans:
        if pid in kids:
            rss[kids[pid]] = max(rss[kids[pid]], rusage.ru_maxrss / 1024.0)
        else:
            unmatched.append(rusage.ru_maxrss / 1024.0)
    matched = set(kids.values())
    unseen = [i for i in range(len(rss)) if i not in matched]
    for i, child in zip(unseen, sorted(unmatched, reverse=True)):
        rss[i] = max(rss[i], child)
    return rss


def run_torch(nnodes: int, timeout: float, workdir: Path) -> dict:
    port = free_port()
    script = workdir / "torch_worker.py"
    script.write_text(TORCH_WORKER)
    with Processes(workdir) as fleet:
        t0 = time.monotonic()
        procs = [fleet.spawn(f"torch{i}", [TORCH_PYTHON, str(script), str(i), str(nnodes),
                                           str(port), f"bench{port}"]) for i in range(nnodes)]
        try:
            fleet.wait(procs, timeout)
        except TimeoutError:
            raise RuntimeError(f"torch N={nnodes}: not done after {timeout}s") from None
    results = []
    for i, proc in enumerate(procs):
        lines = proc.stdout.splitlines()
        if not lines:
            raise RuntimeError(f"torch process {i} failed:\n{proc.stderr[-2000:]}")
        results.append(json.loads(lines[0]))
    return {
        "rdzv": max(r["return"] for r in results) - max(r["call"] for r in results),
        "span": max(r["return"] for r in results) - min(r["call"] for r in results),
        "e2e": max(r["return"] for r in results) - t0,
        "rss": [p.peak_rss_mib for p in procs],
    }


def fmt_times(values: list[float]) -> str:
    return (f"{statistics.median(values):7.3f} ({min(values):.3f}-{max(values):.3f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=int, default=[4, 16, 32, 64],
                        help="numbers of nodes (default: 4 16 32 64)")
    parser.add_argument("--profile", help="gossip-rdzv's --profile (default: none, i.e. LAN)")
    parser.add_argument("--repeats", "-r", type=int, default=3, help="runs per size (3)")
    parser.add_argument("--binary", default=built_tool("gossip-rdzv", "GOSSIP_RDZV_BIN")
                        or "gossip-rdzv", help="gossip-rdzv to run")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run (120)")
    parser.add_argument("--key-file", help="give every node this job key file (the cost of "
                        "sealing: docs/performance.md)")
    parser.add_argument("--torch", action="store_true",
                        help="also time torch's c10d rendezvous handler")
    parser.add_argument("--torch-max", type=int, default=32,
                        help="largest N for the torch comparison (32; ~200 MiB per process)")
    parser.add_argument("--only", choices=["gossip", "torch", "serf"],
                        help="run only one system (--only torch implies --torch, --only serf "
                             "--serf)")
    parser.add_argument("--json", help="also write the raw measurements to this file")
    parser.add_argument("--sample-every", type=float, default=0.25, metavar="SECONDS",
                        help="how often the sockets and detached children of every node are "
                             "read from /proc (0.25); at N = 256 that reading takes CPU from "
                             "the nodes, so a larger value disturbs them less")
    parser.add_argument("--serf", action="store_true",
                        help="also time Serf's full membership for each N (needs `serf`)")
    parser.add_argument("--join-timeout", default="60s", metavar="DURATION",
                        help="every node's --join-timeout (60s); keep it below --timeout, or "
                             "the benchmark, not the nodes, decides when a slow run failed")
    args = parser.parse_args()
    if args.sample_every <= 0:
        parser.error(f"--sample-every must be a positive number of seconds, got "
                     f"{args.sample_every} (the default is 0.25)")
    if args.only == "torch":
        args.torch = True
    if args.only == "serf":
        args.serf = True
    if args.only == "gossip":
        args.torch = args.serf = False
    args.serf_binary = serf_binary() if args.serf else None
    if args.serf and args.serf_binary is None:
        parser.error("--serf needs Serf's `serf` on PATH (Debian: apt-get install serf)")
    if any(n < 1 or n > 512 for n in args.sizes):
        parser.error("sizes must be between 1 and 512")

    become_subreaper()
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}  {platform.node()}  "
          f"{os.cpu_count()} CPUs  {platform.platform()}")
    print(f"# binary: {args.binary}; profile {args.profile or 'default (LAN)'}; "
          f"key: {args.key_file or 'none'}; join timeout {args.join_timeout}; "
          f"{args.repeats} runs per size; times in seconds: median (min-max)")
    raw: dict = {"gossip": {}, "torch": {}, "serf": {}}
    with TempDir("gossip-rdzv-bench-") as tmp:
        if args.only in (None, "gossip"):
            print(f"{'N':>4}  {'files (s)':<22} {'join (s)':<22} {'last (s)':<22} "
                  f"{'stay (s)':<22} "
                  f"{'CPU (s)':>8}  {'peak RSS max/mean (MiB)':>24}  {'sockets max/mean':>16}  "
                  f"{'launch (s)':>10}")
        for n in (args.sizes if args.only in (None, "gossip") else []):
            runs = []
            for r in range(args.repeats):
                workdir = Path(tmp) / f"g{n}-{r}"
                workdir.mkdir()
                runs.append(run_gossip(args.binary, n, args.timeout, workdir, args.profile,
                                       args.key_file, args.sample_every, args.join_timeout))
            raw["gossip"][n] = runs
            rss = [x for run in runs for x in run["rss"]]
            sockets = [x for run in runs for x in run["sockets"]]
            print(f"{n:>4}  {fmt_times([x['files'] for x in runs]):<22} "
                  f"{fmt_times([x['join'] for x in runs]):<22} "
                  f"{fmt_times([x['exit'] for x in runs]):<22} "
                  f"{fmt_times([x['stay'] for x in runs]):<22} "
                  f"{statistics.median(x['cpu'] for x in runs):>8.2f}  "
                  f"{max(rss):>13.1f} / {statistics.mean(rss):<8.1f}  "
                  f"{max(sockets):>7} / {statistics.mean(sockets):<6.1f}  "
                  f"{statistics.median(x['launch'] for x in runs):>10.3f}", flush=True)

        if args.serf and args.only != "torch":
            print()
            print("# Serf (serf agent, LAN profile): launch -> every agent knows all N alive")
            print(f"{'N':>4}  {'full (s)':<22} {'CPU (s)':>8}  {'peak RSS max/mean (MiB)':>24}  "
                  f"{'launch (s)':>10}")
            for n in args.sizes:
                runs = [run_serf(n, args.timeout, args.serf_binary) for _ in range(args.repeats)]
                raw["serf"][n] = runs
                done = [x["full"] for x in runs if x["full"] is not None]
                full = fmt_times(done) if done else "-"
                if len(done) < len(runs):
                    full += (f" ({len(runs) - len(done)} of {len(runs)} runs not within "
                             f"{args.timeout:g} s: "
                             + ", ".join(f"{x['complete']}/{n}" for x in runs
                                         if x["full"] is None) + " agents complete)")
                rss = [x for run in runs for x in run["rss"]]
                launches = [x["launch"] for x in runs if x["launch"] is not None]
                print(f"{n:>4}  {full:<22} {statistics.median(x['cpu'] for x in runs):>8.2f}  "
                      f"{max(rss):>13.1f} / {statistics.mean(rss):<8.1f}  "
                      f"{statistics.median(launches) if launches else float('nan'):>10.3f}",
                      flush=True)

        if args.torch:
            print()
            print("# torch c10d rendezvous (RendezvousParameters + get_rendezvous_handler)")
            print(f"{'N':>4}  {'rdzv (s)':<22} {'span (s)':<22} {'e2e (s)':<22} "
                  f"{'peak RSS max/mean (MiB)':>24}")
            for n in [n for n in args.sizes if n <= args.torch_max]:
                runs = []
                for r in range(args.repeats):
                    workdir = Path(tmp) / f"t{n}-{r}"
                    workdir.mkdir()
                    runs.append(run_torch(n, max(args.timeout, 60.0 + 3.0 * n), workdir))
                raw["torch"][n] = runs
                rss = [x for run in runs for x in run["rss"]]
                print(f"{n:>4}  {fmt_times([x['rdzv'] for x in runs]):<22} "
                      f"{fmt_times([x['span'] for x in runs]):<22} "
                      f"{fmt_times([x['e2e'] for x in runs]):<22} "
                      f"{max(rss):>13.1f} / {statistics.mean(rss):.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print(f"bench_rendezvous: {e}", file=sys.stderr)
        sys.exit(1)
