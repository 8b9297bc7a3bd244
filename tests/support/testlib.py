"""What the Python tests (tests/) and the benchmarks (bench/) share: where the built tools are,
free loopback ports, waiting with a deadline, env files, temporary directories, and child
processes that run in a process group of their own and are always killed and reaped.

The cluster harness on top of it (many `gossip-rdzv join` nodes) is cluster.py, next to it.
Standard library only; run with /usr/bin/python3 (Debian's, the one with python3-torch).
A script finds this directory by its own location, so it imports the same way under CTest
(cwd: the test's directory) and when run by hand from anywhere:

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))           # tests/*/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # bench/
"""
from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

REPO = Path(__file__).resolve().parents[2]
# Build trees searched, in order, when the variable naming a tool is not set.
BUILD_DIRS = ("build", "build-e2e", "build-lead")


# ---- built tools ---------------------------------------------------------------------------

def built_tool(name: str, variable: str) -> Optional[str]:
    """$`variable` (CTest sets it), else tools/<name>/<name> in the first build tree that has
    it; None when there is neither."""
    path = os.environ.get(variable)
    if path:
        return path
    for build in BUILD_DIRS:
        candidate = REPO / build / "tools" / name / name
        if candidate.exists():
            return str(candidate)
    return None


def binary() -> str:
    """The gossip-rdzv binary under test: $GOSSIP_RDZV_BIN, else build/ (RuntimeError if
    neither is there)."""
    path = built_tool("gossip-rdzv", "GOSSIP_RDZV_BIN")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(
            f"gossip-rdzv binary not found ({path!r}); build it or set GOSSIP_RDZV_BIN")
    return path


def binary_or_skip() -> str:
    """binary(), or unittest.SkipTest saying why there is none."""
    try:
        return binary()
    except RuntimeError as error:
        raise unittest.SkipTest(str(error)) from None


# ---- ports ---------------------------------------------------------------------------------

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


def free_port() -> int:
    return free_ports(1)[0]


# ---- waiting and files ---------------------------------------------------------------------

def wait_until(predicate: Callable[[], bool], timeout: float,
               what: Union[str, Callable[[], str]] = "condition", interval: float = 0.02) -> None:
    """Polls `predicate` until it holds; raises TimeoutError naming `what` after `timeout` s.
    `what` may be a function: it is called only at the timeout, so a message that shows logs
    or state shows them as they were then, not as they were when the wait began."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            text = what() if callable(what) else what
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {text}")
        time.sleep(interval)


def read_checkpoint(path: Path) -> dict:
    """The elastic workers' checkpoint (tests/e2e/elastic_worker.py), {} until one is saved."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def await_checkpoint(path: Path, step: int, min_restart: int, timeout: float,
                     logs: Callable[[], str], interval: float = 0.05,
                     running: Optional[Callable[[], bool]] = None) -> None:
    """Waits until the checkpoint at `path` holds `step` or later, saved in round
    `min_restart` or later; the timeout names the checkpoint and `logs()` as they were then.
    Fails at once (AssertionError, as TestCase.fail) when `running()` says the job is gone."""
    def reached() -> bool:
        if running is not None and not running():
            raise AssertionError(f"every node exited\n{logs()}")
        c = read_checkpoint(path)
        return c.get("restart", -1) >= min_restart and c.get("step", 0) >= step
    wait_until(reached, timeout, lambda: f"step {step} of a round >= {min_restart} "
               f"(checkpoint: {read_checkpoint(path)})\n{logs()}", interval=interval)


def assert_one_round_at_a_time(test: unittest.TestCase, journal: Path) -> None:
    """From the elastic workers' journal: on each host (agent pid), a worker of a later round
    starts only after every worker of an earlier round under that agent ended or was stopped
    (a stopped worker writes no `end`: its round's last start is then bounded by the next
    round's first start, which is all the journal can tell)."""
    runs: dict = {}
    for line in Path(journal).read_text().splitlines():
        event, restart, _rank, _pid, agent, when = line.split()
        runs.setdefault(agent, []).append((float(when), event, int(restart)))
    for agent, events in runs.items():
        events.sort()
        latest = -1
        for _, event, restart in events:
            if event == "start":
                test.assertGreaterEqual(restart, latest,
                                        f"agent {agent} started a worker of round {restart} "
                                        f"after one of round {latest}: {events}")
                latest = restart


def wait_listening(port: int, timeout: float, what: str = "the node to listen") -> None:
    """Waits until something accepts TCP connections on 127.0.0.1:`port`."""
    def accepts() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_until(accepts, timeout, what=what)


def run_ok(test: unittest.TestCase, args: Sequence, env: Optional[dict] = None,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs `args` (any path-like items) to completion; `test` fails, showing its output,
    unless it exits 0."""
    result = subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL, env=env,
                            capture_output=True, text=True, timeout=timeout)
    test.assertEqual(result.returncode, 0,
                     f"{' '.join(map(str, args))} failed:\n{result.stdout}\n{result.stderr}")
    return result


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


class TempDir:
    """A new directory under $TMPDIR, removed by cleanup() (or at the end of a `with` block,
    which gives the path) unless `keep`."""

    def __init__(self, prefix: str = "gossip-rdzv-", keep: bool = False) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self.keep = keep

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        self.cleanup()


def temp_dir(test: unittest.TestCase, prefix: str = "gossip-rdzv-") -> Path:
    """A new directory removed when `test` ends, after the cleanups it registers later (so
    after the processes that write into it are gone)."""
    directory = TempDir(prefix)
    test.addCleanup(directory.cleanup)
    return directory.path


# ---- processes -----------------------------------------------------------------------------

def start(args: Sequence[str], stdout, stderr, env: Optional[dict] = None) -> subprocess.Popen:
    """Starts `args` in a session (and process group) of its own, stdin from /dev/null, so
    signal_group() reaches it and everything it started."""
    return subprocess.Popen(list(args), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            env=env, start_new_session=True)


def signal_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Sends `sig` to the process group `pgid`; a group that is gone already is fine."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def stop(popen: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGKILL to the process group of a child start()ed, then reaps it (bounded)."""
    if popen.poll() is None:
        signal_group(popen.pid)
    try:
        popen.wait(timeout=timeout)
    except (subprocess.TimeoutExpired, ChildProcessError):
        pass


@dataclass
class Proc:
    """One process started by Processes.spawn(), with its logs."""
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
            # os.wait4 reaps the child and gives its peak RSS (the benchmarks report it).
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
    def peak_rss_mib(self) -> float:
        """Peak resident memory once reaped (0 before)."""
        return self.rusage.ru_maxrss / 1024.0 if self.rusage else 0.0  # type: ignore[attr-defined]

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@dataclass
class Processes:
    """Child processes with their output in `workdir`; close() (a `with` block, or a test's
    addCleanup) kills every one still running, with its whole process group, and reaps it,
    so a hung process never outlives its test."""
    workdir: Path
    procs: List[Proc] = field(default_factory=list)

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def spawn(self, name: str, args: Sequence[str], env: Optional[dict] = None) -> Proc:
        """Starts `args` with stdout/stderr in workdir/<name>.out|.err."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        out = self.workdir / f"{name}.out"
        err = self.workdir / f"{name}.err"
        with open(out, "wb") as fout, open(err, "wb") as ferr:
            popen = start(args, fout, ferr, env)
        proc = Proc(name, list(args), popen, out, err, time.monotonic())
        self.procs.append(proc)
        return proc

    @staticmethod
    def run(args: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Runs a short command to completion, bounded; its output is captured."""
        return subprocess.run(list(args), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)

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

    def kill(self, proc: Proc, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to the process group of `proc` while it runs."""
        if proc.poll() is None:
            signal_group(proc.popen.pid, sig)

    def close(self) -> None:
        """Kills (SIGKILL, whole process group) and reaps every process still running. The
        group of one that exited is killed too: what it left in its group (a seed node's
        stay after an elastic job, `join --stay-after-job`) goes with the test."""
        for proc in self.procs:
            self.kill(proc)
            signal_group(proc.popen.pid)
        for proc in self.procs:
            if proc.poll() is None:
                stop(proc.popen)


def elastic_results(test: unittest.TestCase, out: Path, world: int, logs: str,
                    same_restart_count: bool = True) -> List[dict]:
    """The reports tests/e2e/elastic_worker.py's ranks wrote to `out` at the end of the job:
    one per rank of a world of `world` (none beyond it), each with that world size, the sum
    of a full group, and (`same_restart_count`: the job numbers its restarts as one) the same
    restart count."""
    found = [json.loads((out / f"rank{r}.json").read_text())
             for r in range(world) if (out / f"rank{r}.json").exists()]
    test.assertEqual(len(found), world, f"only {len(found)} of {world} ranks finished\n{logs}")
    test.assertFalse((out / f"rank{world}.json").exists(), f"a rank >= {world}\n{logs}")
    for result in found:
        test.assertEqual(result["world_size"], world, logs)
        test.assertEqual(result["sum"], world * (world + 1) // 2, logs)
    if same_restart_count:
        test.assertEqual(len({r["restart_count"] for r in found}), 1, logs)
    return found
