#!/usr/bin/python3
"""How fast an elastic job recovers from a fault: gossip-rdzv against torchrun's c10d backend.

Each trial starts agents on 127.0.0.1, each running one gloo worker
(bench/bench_elastic_worker.py) that does an all_reduce every 0.1 s and logs it with its
wall-clock time; once every worker runs in the expected world size it injects one fault and
measures, from the fault, when a worker started after the fault completed its first
all_reduce on every surviving agent (the first all_reduce of the new round). The figure is
the slowest survivor's; "new workers started" is when the last of those workers started
(the agents' part: noticing, agreeing, launching; the rest is Python importing torch and
init_process_group). Faults (3 agents in all):

  worker-exit   3 agents, --nnodes 3: the worker of the third agent exits 1 (SIGUSR1 makes it
                log the time and exit 1); survivors: all 3 agents
  node-kill     3 agents, --nnodes 2:3: SIGKILL to the third agent's and its worker's
                process groups; survivors: the other 2
  node-stop     the same with SIGSTOP (a frozen machine); survivors: the other 2
  node-arrival  2 agents, --nnodes 2:3, running; then the third starts (the fault time is its
                launch); survivors: all 3
  seed-kill     3 agents, --nnodes 2:3: SIGKILL to the first agent, gossip-rdzv's (first)
                seed and the host of torch's rendezvous TCPStore; survivors: the other 2

Systems:
  gossip  `gossip-rdzv join --seed <agent 1> --nnodes ... --max-restarts 3 -- WORKER`, the
          default (LAN) profile unless --profile; --seeds 3 lists every agent as a seed
  torch   torchrun 1.13 (Debian's, through bench/torchrun_py311.py) with
          `--rdzv_backend c10d --rdzv_endpoint 127.0.0.1:PORT --max_restarts 3
          --monitor_interval 5`, default timeouts; `--rdzv_conf is_host=1` on the first
          agent, is_host=0 on the others, so the store's host is known

A trial without a new round's all_reduce on every survivor within --recovery-timeout is
reported as "no recovery within T s"; when every survivor's agent exited first it says so,
with their exit codes and the first *Error name in their output. Every wait is bounded and
every process started (agents, with their process groups, and every worker seen in the logs,
with its process group) is killed when a trial ends, however it ends.

Usage (from the repository root, after building; docs/performance.md "Elastic recovery"):
  /usr/bin/python3 bench/bench_elastic.py                          # every fault, both, 3 runs
  /usr/bin/python3 bench/bench_elastic.py --faults worker-exit node-kill --systems gossip -r 1
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from testlib import Proc, Processes, TempDir, built_tool, free_port, free_ports  # noqa: E402

HERE = Path(__file__).resolve().parent
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
WORKER = HERE / "bench_elastic_worker.py"
TORCHRUN = HERE / "torchrun_py311.py"
MAX_RESTARTS = 3
STEADY_STEPS = 3  # all_reduces each worker completes in the expected world before the fault
POLL_S = 0.02


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    nnodes: str
    started: int  # agents running before the fault
    victim: Optional[int]  # the agent the fault hits (None: an arrival)
    survivors: tuple
    signal: Optional[int] = None  # what the victim's agent and workers get


FAULTS = {f.name: f for f in [
    Fault("worker-exit", "one worker exits 1", "3", 3, 2, (0, 1, 2)),
    Fault("node-kill", "a node SIGKILLed, --nnodes 2:3", "2:3", 3, 2, (0, 1), signal.SIGKILL),
    Fault("node-stop", "a node frozen (SIGSTOP), --nnodes 2:3", "2:3", 3, 2, (0, 1),
          signal.SIGSTOP),
    Fault("node-arrival", "a node arrives below MAX, --nnodes 2:3", "2:3", 2, None, (0, 1, 2)),
    Fault("seed-kill", "the store's / seed's host SIGKILLed, --nnodes 2:3", "2:3", 3, 0, (1, 2),
          signal.SIGKILL),
]}
SYSTEMS = ("gossip", "torch")
SYSTEM_NAMES = {"gossip": "gossip-rdzv", "torch": "torchrun c10d"}


# ---- the workers' logs ---------------------------------------------------------------------

@dataclass
class WorkerRun:
    """One worker process, as its lines in an agent's log describe it."""
    pid: int
    restart: int
    started: float
    world: int = 0
    reduces: List[float] = field(default_factory=list)  # wall-clock time of each all_reduce
    exited: Optional[float] = None  # the time it logged before exiting 1 on SIGUSR1


def parse_log(path: Path) -> List[WorkerRun]:
    """The worker processes of one agent, in start order; unfinished last lines are ignored."""
    runs: Dict[int, WorkerRun] = {}
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        fields = line.split()
        try:
            if fields[0] == "start" and len(fields) == 6:
                runs[int(fields[1])] = WorkerRun(int(fields[1]), int(fields[2]), float(fields[5]),
                                                 int(fields[4]))
            elif fields[0] == "ar" and len(fields) == 7 and int(fields[1]) in runs:
                run = runs[int(fields[1])]
                run.world = int(fields[4])
                run.reduces.append(float(fields[6]))
            elif fields[0] == "exit" and len(fields) == 3 and int(fields[1]) in runs:
                runs[int(fields[1])].exited = float(fields[2])
        except (IndexError, ValueError):
            continue  # a line being written
    return list(runs.values())


def first_reduce_after(runs: List[WorkerRun], t_fault: float) -> Optional[WorkerRun]:
    """The worker started after `t_fault` whose first all_reduce came first (None: none yet)."""
    later = [r for r in runs if r.started > t_fault and r.reduces]
    return min(later, key=lambda r: r.reduces[0]) if later else None


def worker_alive(pid: int) -> bool:
    """`pid` runs (or is stopped) and is one of our workers, not a reused pid."""
    try:
        return WORKER.name.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def signal_worker_group(pid: int, sig: int) -> None:
    """`sig` to the process group of worker `pid` if it still runs (a group of its own under
    gossip-rdzv, its agent's under torchrun)."""
    if not worker_alive(pid):
        return
    try:
        os.killpg(os.getpgid(pid), sig)
    except (ProcessLookupError, PermissionError):
        pass


# ---- one trial -----------------------------------------------------------------------------

class Trial:
    """The agents of one system for one fault, in `workdir`; close() kills them all."""

    def __init__(self, system: str, fault: Fault, args: argparse.Namespace, workdir: Path):
        self.system, self.fault, self.args, self.workdir = system, fault, args, workdir
        self.fleet = Processes(workdir)
        self.agents: List[Optional[Proc]] = [None, None, None]
        self.ports = free_ports(3)  # gossip-rdzv: each agent's --listen; the first are seeds
        self.store_port = free_port()  # torchrun: the c10d TCPStore on agent 0
        self.run_id = f"bench-elastic-{self.ports[0]}"

    def log(self, index: int) -> Path:
        return self.workdir / f"agent{index}.log"

    def command(self, index: int) -> List[str]:
        if self.system == "gossip":
            seeds = ",".join(f"127.0.0.1:{port}" for port in self.ports[:self.args.seeds])
            return [self.args.binary, "join", "--seed", seeds,
                    "--listen", f"127.0.0.1:{self.ports[index]}", "--nnodes", self.fault.nnodes,
                    "--run-id", self.run_id, "--max-restarts", str(MAX_RESTARTS),
                    *(["--profile", self.args.profile] if self.args.profile else []),
                    *shlex.split(self.args.gossip_args), "--", TORCH_PYTHON, str(WORKER)]
        return [TORCH_PYTHON, str(TORCHRUN), "--nnodes", self.fault.nnodes,
                "--nproc_per_node", "1", "--rdzv_backend", "c10d",
                "--rdzv_endpoint", f"127.0.0.1:{self.store_port}", "--rdzv_id", self.run_id,
                "--rdzv_conf", f"is_host={1 if index == 0 else 0}",
                "--max_restarts", str(MAX_RESTARTS), "--monitor_interval", "5", str(WORKER)]

    def start(self, index: int) -> None:
        env = dict(os.environ, BENCH_ELASTIC_LOG=str(self.log(index)),
                   BENCH_ELASTIC_STEP=str(self.args.step),
                   BENCH_ELASTIC_LIFETIME=str(self.args.setup_timeout
                                              + self.args.recovery_timeout + 60),
                   OMP_NUM_THREADS="1")
        self.agents[index] = self.fleet.spawn(f"agent{index}", self.command(index), env)

    def runs(self, index: int) -> List[WorkerRun]:
        return parse_log(self.log(index))

    def steady(self, index: int, world: int) -> bool:
        runs = self.runs(index)
        return bool(runs) and runs[-1].world == world and len(runs[-1].reduces) >= STEADY_STEPS

    def exited(self, indices) -> Dict[int, int]:
        """Exit codes of the agents among `indices` that have exited."""
        codes = {}
        for i in indices:
            agent = self.agents[i]
            if agent is not None and agent.poll() is not None:
                codes[i] = agent.returncode
        return codes

    def error_name(self, indices) -> Optional[str]:
        """The exception that ended the first of the agents with a traceback: the last
        `[module.]NameError: ...` line of its stderr (before it, its workers' own)."""
        for i in indices:
            agent = self.agents[i]
            if agent is not None:
                found = re.findall(r"^(?:\w+\.)*(\w+(?:Error|Exception)):", agent.stderr,
                                   re.MULTILINE)
                if found:
                    return found[-1]
        return None

    def signal_node(self, index: int, sig: int) -> None:
        """`sig` to agent `index`'s process group, then to each of its live workers' groups."""
        agent = self.agents[index]
        pids = [r.pid for r in self.runs(index)]
        if agent is not None and agent.poll() is None:
            os.killpg(agent.popen.pid, sig)
        for pid in pids:
            signal_worker_group(pid, sig)

    def close(self) -> None:
        """Kills every agent's process group and every worker's, and reaps the agents."""
        try:
            for i in range(3):
                for run in self.runs(i):
                    signal_worker_group(run.pid, signal.SIGKILL)
        finally:
            self.fleet.close()


def inject(trial: Trial) -> float:
    """Injects the trial's fault; returns its wall-clock time."""
    fault = trial.fault
    if fault.victim is None:  # an arrival
        t_fault = time.time()
        trial.start(2)
        return t_fault
    if fault.signal is None:  # the victim's worker exits 1
        pid = trial.runs(fault.victim)[-1].pid
        t_sent = time.time()
        os.kill(pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            run = next((r for r in trial.runs(fault.victim) if r.pid == pid), None)
            if run is not None and run.exited is not None:
                return run.exited  # when the worker really exited
            time.sleep(POLL_S)
        return t_sent
    t_fault = time.time()
    trial.signal_node(fault.victim, fault.signal)
    return t_fault


def run_trial(system: str, fault: Fault, args: argparse.Namespace, workdir: Path) -> dict:
    """One trial: a dict with "status" (recovered / no recovery / agents exited / setup
    failed), "seconds" (the slowest survivor's, when recovered) and details."""
    trial = Trial(system, fault, args, workdir)
    try:
        for i in range(fault.started):
            trial.start(i)
        world = fault.started
        deadline = time.monotonic() + args.setup_timeout
        while not all(trial.steady(i, world) for i in range(fault.started)):
            gone = trial.exited(range(fault.started))
            if gone or time.monotonic() > deadline:
                why = (f"agents exited before the fault: {gone}" if gone else
                       f"workers not running in world size {world} within "
                       f"{args.setup_timeout:.0f} s")
                return {"status": "setup failed", "detail": why,
                        "stderr": {i: trial.agents[i].stderr[-1500:]
                                   for i in range(fault.started)}}
            time.sleep(POLL_S)

        t_fault = inject(trial)
        survivors = fault.survivors
        deadline = time.monotonic() + args.recovery_timeout
        firsts: Dict[int, WorkerRun] = {}
        codes: Dict[int, int] = {}
        while time.monotonic() < deadline:
            for i in survivors:
                if i not in firsts:
                    run = first_reduce_after(trial.runs(i), t_fault)
                    if run is not None:
                        firsts[i] = run
            if len(firsts) == len(survivors):
                break
            codes = trial.exited(i for i in survivors if i not in firsts)
            if len(codes) == len(survivors) - len(firsts):
                break  # nobody left who could still recover
            time.sleep(POLL_S)
        result = {
            "survivors": len(survivors),
            "recovered_survivors": len(firsts),
            "per_survivor_s": {i: round(r.reduces[0] - t_fault, 3) for i, r in firsts.items()},
            "world": sorted({r.world for r in firsts.values()}),
            "restart_count": sorted({r.restart for r in firsts.values()}),
        }
        if len(firsts) == len(survivors):
            result.update(status="recovered",
                          seconds=max(r.reduces[0] for r in firsts.values()) - t_fault,
                          started_s=max(r.started for r in firsts.values()) - t_fault)
        elif codes and len(codes) + len(firsts) == len(survivors):
            ended = max(trial.agents[i].ended for i in codes)  # monotonic, like `deadline`
            result.update(status="agents exited", exit_codes=sorted(set(codes.values())),
                          exited_s=ended - (deadline - args.recovery_timeout),
                          error=trial.error_name(codes))
        else:
            result.update(status="no recovery",
                          detail=f"no recovery within {args.recovery_timeout:.0f} s")
        return result
    finally:
        trial.close()


# ---- the table -----------------------------------------------------------------------------

def note_of(run: dict) -> str:
    """What happened in a trial that did not recover, without its times."""
    if run["status"] == "agents exited":
        note = f"every survivor's agent exited {','.join(map(str, run['exit_codes']))}"
    else:
        note = run.get("detail", run["status"])
    if run.get("error"):
        note += f" ({run['error']})"
    if run.get("recovered_survivors"):
        note += f"; {run['recovered_survivors']} of {run['survivors']} survivors recovered"
    return note


def summarize(runs: List[dict]) -> dict:
    """The figures of one fault x system over its repetitions."""
    times = [r["seconds"] for r in runs if r["status"] == "recovered"]
    summary = {"runs": len(runs), "recovered": len(times)}
    if times:
        starts = [r["started_s"] for r in runs if r["status"] == "recovered"]
        summary.update(median_s=round(statistics.median(times), 3),
                       min_s=round(min(times), 3), max_s=round(max(times), 3),
                       started_median_s=round(statistics.median(starts), 3))
    worlds = sorted({w for r in runs for w in r.get("world", [])})
    restarts = sorted({c for r in runs for c in r.get("restart_count", [])})
    summary.update(world=worlds, restart_count=restarts)
    notes: Dict[str, List[dict]] = {}  # what happened -> the trials it happened in
    for r in runs:
        if r["status"] != "recovered":
            notes.setdefault(note_of(r), []).append(r)
    summary["notes"] = []
    for note, trials in notes.items():
        exits = [r["exited_s"] for r in trials if "exited_s" in r]
        when = f", {min(exits):.1f}-{max(exits):.1f} s after the fault" if exits else ""
        summary["notes"].append(f"{len(trials)} of {len(runs)}: {note}{when}")
    return summary


def table_row(fault: Fault, system: str, s: dict) -> str:
    figure = (f"{s['median_s']:.2f} ({s['min_s']:.2f}-{s['max_s']:.2f})"
              if s["recovered"] else "-")
    started = f"{s['started_median_s']:.2f}" if s["recovered"] else "-"
    return (f"| {fault.name} | {SYSTEM_NAMES[system]} | {s['recovered']}/{s['runs']} | "
            f"{figure} | {started} | {','.join(map(str, s['world'])) or '-'} | "
            f"{','.join(map(str, s['restart_count'])) or '-'} | {'; '.join(s['notes'])} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faults", nargs="+", choices=list(FAULTS), default=list(FAULTS),
                        help="faults to inject (default: all)")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS),
                        help="gossip (gossip-rdzv) and/or torch (torchrun c10d); default both")
    parser.add_argument("--repeats", "-r", type=int, default=3,
                        help="trials per fault and system (3)")
    parser.add_argument("--recovery-timeout", type=float, default=120.0,
                        help="seconds after the fault before 'no recovery' (120)")
    parser.add_argument("--setup-timeout", type=float, default=240.0,
                        help="seconds for the job to run before the fault (240)")
    parser.add_argument("--step", type=float, default=0.1,
                        help="seconds between a worker's all_reduces (0.1)")
    parser.add_argument("--binary", default=built_tool("gossip-rdzv", "GOSSIP_RDZV_BIN")
                        or "gossip-rdzv", help="gossip-rdzv to run")
    parser.add_argument("--profile", help="gossip-rdzv's --profile (default: none, i.e. LAN)")
    parser.add_argument("--seeds", type=int, choices=(1, 2, 3), default=1,
                        help="gossip-rdzv: the first 1-3 agents are every agent's --seed list "
                             "(1; seed-kill kills the first)")
    parser.add_argument("--gossip-args", default="",
                        help="more options for every gossip-rdzv join, written with '=': "
                             "--gossip-args='--last-call 2s'")
    parser.add_argument("--json", help="also write every trial and the summary to this file")
    parser.add_argument("--keep", action="store_true",
                        help="keep the trials' logs (their directory is printed)")
    args = parser.parse_args()
    if args.repeats < 1 or args.recovery_timeout <= 0 or args.setup_timeout <= 0 \
            or args.step <= 0:
        parser.error("--repeats, the timeouts and --step must be positive")
    if "gossip" in args.systems and not os.access(args.binary, os.X_OK):
        parser.error(f"gossip-rdzv binary not found or not executable: {args.binary} "
                     "(build it, or give --binary or GOSSIP_RDZV_BIN)")

    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}  {platform.node()}  "
          f"{os.cpu_count()} CPUs  {platform.platform()}  load {os.getloadavg()[0]:.1f}")
    print(f"# gossip-rdzv: {args.binary}, profile {args.profile or 'default (LAN)'}, "
          f"{args.seeds} seed(s)"
          f"{' ' + args.gossip_args if args.gossip_args else ''}; "
          f"{args.repeats} runs each; recovery timeout {args.recovery_timeout:.0f} s", flush=True)
    raw = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "repeats": args.repeats,
                    "recovery_timeout_s": args.recovery_timeout,
                    "profile": args.profile or "lan", "seeds": args.seeds,
                    "gossip_args": args.gossip_args},
           "results": []}
    rows = []
    tmp = TempDir("gossip-rdzv-bench-elastic-", keep=args.keep)
    try:
        for name in args.faults:
            fault = FAULTS[name]
            for system in args.systems:
                runs = []
                for r in range(args.repeats):
                    workdir = tmp.path / f"{name}-{system}-{r}"
                    run = run_trial(system, fault, args, workdir)
                    runs.append(run)
                    shown = (f"{run['seconds']:.2f} s" if run["status"] == "recovered"
                             else note_of(run))
                    print(f"# {name} {system} run {r + 1}: {run['status']}: {shown}",
                          flush=True)
                summary = summarize(runs)
                raw["results"].append({"fault": name, "system": system, "summary": summary,
                                       "runs": runs})
                rows.append(table_row(fault, system, summary))
    finally:
        if args.keep:
            print(f"# logs kept in {tmp.path}")
        tmp.cleanup()
    print()
    print("| fault | system | recovered | fault -> first all_reduce of the new round on every "
          "survivor, s: median (min-max) | new workers started, s | new world | "
          "TORCHELASTIC_RESTART_COUNT | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
