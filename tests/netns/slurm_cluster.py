"""A real Slurm cluster on the netns lab (netns.py): Debian's slurmctld, one slurmd per lab
host, and munged, all with a configuration generated for the lab and torn down with it.

    with Lab(hosts=3) as lab:
        slurm = SlurmCluster(lab)             # munged, slurmctld on n0, slurmd on every host
        result = slurm.run(["sbatch", "--wait", ...])   # a client command, on n0

Each lab host is a Slurm node `n<i>` at its lab address. Every daemon runs inside the lab's
namespaces, so Lab.close() stops them, and every file (key, socket, state, logs) lives in
the lab's work directory. Needs root and the packages slurmctld, slurmd, slurm-client and
munge (scripts/setup.sh installs them).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional, Sequence

from netns import Lab, Process

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo")
CONTROLLER_HOST = 0

# slurmd 22.05 initialises its cgroup plugin even when no plugin uses cgroups (23.02 added
# CgroupPlugin=disabled), and `ip netns exec` mounts a fresh /sys without the cgroup
# hierarchies: mount cgroup v1 controllers inside the daemon's own mount namespace.
MOUNT_CGROUPS = ("mount -t tmpfs none /sys/fs/cgroup && "
                 "for c in freezer cpuset memory devices cpu cpuacct; do "
                 "mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c none /sys/fs/cgroup/$c; "
                 "done && ")


def missing_slurm() -> Optional[str]:
    """Why this machine cannot run a Slurm cluster, or None."""
    for tool in DAEMONS:
        if shutil.which(tool) is None:
            return (f"'{tool}' is not installed (apt-get install slurmctld slurmd "
                    "slurm-client munge; scripts/setup.sh does)")
    return None


class SlurmCluster:
    """munged, slurmctld and one slurmd per host of `lab`, running once this returns."""

    def __init__(self, lab: Lab, cpus_per_node: int = 2):
        self.lab = lab
        self.dir = lab.workdir / "slurm"
        self.dir.mkdir(mode=0o755)
        self.conf = self.dir / "slurm.conf"
        self.env = {"SLURM_CONF": str(self.conf)}
        self.munged = self._start_munge()
        self._write_config(cpus_per_node)
        self.controller = lab.start(CONTROLLER_HOST, ["slurmctld", "-D", "-f", str(self.conf)],
                                    name="slurmctld", env=self.env)
        self.slurmds = [
            lab.start(host, ["sh", "-c", MOUNT_CGROUPS + 'exec slurmd -D -f "$0" -N "$1"',
                             str(self.conf), lab.hostname(host)],
                      name=f"slurmd-{lab.hostname(host)}", env=self.env)
            for host in range(lab.hosts)]

    def _start_munge(self) -> Process:
        munge = self.dir / "munge"
        munge.mkdir(mode=0o755)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        self.socket = munge / "munge.socket"
        # A Unix socket in the file system: daemons in every namespace reach it. --force:
        # as root, in a work directory munged would otherwise find too open.
        return self.lab.start(CONTROLLER_HOST, [
            "munged", "--foreground", "--force", f"--key-file={key}", f"--socket={self.socket}",
            f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
            f"--seed-file={munge}/munged.seed"], name="munged")

    def _write_config(self, cpus_per_node: int) -> None:
        d = self.dir
        for name in ("state", "spool"):
            (d / name).mkdir()
        for host in range(self.lab.hosts):
            (d / "spool" / self.lab.hostname(host)).mkdir()
        nodes = "\n".join(f"NodeName={self.lab.hostname(h)} NodeAddr={self.lab.address(h)} "
                          f"CPUs={cpus_per_node} State=UNKNOWN" for h in range(self.lab.hosts))
        controller = self.lab.hostname(CONTROLLER_HOST)
        self.conf.write_text(f"""ClusterName=gossiprdzv
SlurmctldHost={controller}({self.lab.address(CONTROLLER_HOST)})
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
{nodes}
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        (d / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n")

    def run(self, args: Sequence[str], timeout: float, env: Optional[dict] = None,
            cwd: Optional[str] = None) -> subprocess.CompletedProcess:
        """A Slurm client command (sbatch, srun, sinfo) on the controller's host."""
        return subprocess.run(self.lab.command(CONTROLLER_HOST, args), capture_output=True,
                              text=True, timeout=timeout, cwd=cwd,
                              env={**os.environ, **self.env, **(env or {})})

    def logs(self) -> str:
        """The daemons' logs, for a failing assertion."""
        parts = []
        for log in sorted(self.dir.glob("*.log")) + sorted((self.dir / "munge").glob("*.log")):
            parts.append(f"--- {log.name}\n" + log.read_text(errors="replace")[-3000:])
        for process in [self.munged, self.controller, *self.slurmds]:
            parts.append(f"--- {process.name} (output)\n" + process.output()[-1500:])
        return "\n".join(parts)
