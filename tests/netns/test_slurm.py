"""gossip-rdzv under a real Slurm (slurm_cluster.py): Debian's slurmctld and one slurmd per
netns host, so `--seed slurm` reads what Slurm itself sets (SLURM_JOB_NODELIST, SLURM_NNODES,
SLURM_NODEID) on hosts with their own names and addresses.

- examples/slurm/train.sbatch, submitted with sbatch: its srun line starts one agent per
  node, they agree and start a torch gloo job;
- the allocation's first host fails to start its agent: the other two seeds carry the job.

Needs root and the Slurm packages (scripts/setup.sh); run with /usr/bin/python3 (Debian's
python3-torch) -m unittest.
"""
from __future__ import annotations

import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "support")]
from netns import Lab, missing_requirements  # noqa: E402
from slurm_cluster import SlurmCluster, missing_slurm  # noqa: E402
from testlib import binary, parse_env_file  # noqa: E402

PYTHON = os.environ.get("GR_TEST_PYTHON", "/usr/bin/python3")
REQUIREMENT = missing_requirements() or missing_slurm()
EXAMPLE = HERE.parents[1] / "examples" / "slurm" / "train.sbatch"
JOB_TIMEOUT = 240  # s: sbatch --wait / srun, including Slurm's own start-up


@unittest.skipIf(REQUIREMENT is not None, REQUIREMENT or "")
class SlurmTest(unittest.TestCase):
    hosts = 3

    def setUp(self) -> None:
        self.lab = Lab(self.hosts)
        self.addCleanup(self.lab.close)
        self.slurm = SlurmCluster(self.lab)
        # What the job's PATH finds first: this build's gossip-rdzv and a python3 with torch.
        self.bin_dir = self.lab.workdir / "bin"
        self.bin_dir.mkdir()
        (self.bin_dir / "gossip-rdzv").symlink_to(binary())
        (self.bin_dir / "python3").symlink_to(PYTHON)
        self.env = {"PATH": f"{self.bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"}

    def check(self, result, what: str) -> str:
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0,
                         f"{what} failed ({result.returncode}):\n{output}\n{self.slurm.logs()}")
        return output

    def test_the_example_batch_script_starts_a_gloo_job(self) -> None:
        # The example asks for 4 nodes of 8 GPUs; this cluster has 3 nodes and no GPU. The
        # node count is overridden on sbatch's command line (which wins over #SBATCH); the
        # GPU request and the worker count are the two lines changed.
        script = EXAMPLE.read_text()
        adapted = script.replace("#SBATCH --gpus-per-node=8\n", "")
        adapted = adapted.replace("--nproc-per-node 8", "--nproc-per-node 1")
        self.assertNotIn("gpus", adapted)
        self.assertIn("--nproc-per-node 1", adapted)
        batch = self.lab.workdir / "train.sbatch"
        batch.write_text(adapted)
        out = self.lab.workdir / "job.out"
        result = self.slurm.run(["sbatch", "--wait", f"--nodes={self.hosts}", f"--output={out}",
                                 str(batch), str(HERE / "gloo_worker.py")],
                                timeout=JOB_TIMEOUT, env=self.env)
        output = out.read_text(errors="replace") if out.exists() else "(no job output)"
        self.check(result, f"sbatch --wait (job output:\n{output})")
        # SLURM_NODEID is each node's rank hint: the worker of node i has rank i, on host n<i>.
        for node in range(self.hosts):
            self.assertRegex(output, rf"rank {node}/3 on n{node} via eth0: sum 6 \(expected 6\)")

    def test_the_job_goes_on_when_its_first_host_starts_no_agent(self) -> None:
        # n0 is the first of the three seeds; its task exits at once, as when that host fails.
        # --nnodes 2:3 lets the two others form the job; with a range of sizes the ranks
        # follow the host names (no SLURM_NODEID hint, which would name rank 2 of 2).
        env_dir = self.lab.workdir / "env"
        env_dir.mkdir()
        agent = ('[ "$SLURM_NODEID" = 0 ] && exit 0; exec gossip-rdzv join --seed slurm '
                 '--listen :29400 --nnodes 2:3 --run-id "slurm-$SLURM_JOB_ID" '
                 f'--join-timeout 60s --env-file "{env_dir}/$SLURMD_NODENAME.env"')
        result = self.slurm.run(["srun", f"--nodes={self.hosts}", "--ntasks-per-node=1",
                                 "sh", "-c", agent], timeout=JOB_TIMEOUT, env=self.env)
        self.check(result, "srun")
        files = {path.stem: parse_env_file(path) for path in env_dir.glob("*.env")}
        self.assertEqual(sorted(files), ["n1", "n2"])
        for name, node_rank in (("n1", 0), ("n2", 1)):
            env = files[name]
            self.assertEqual(env["WORLD_SIZE"], "2", env)
            self.assertEqual(env["GROUP_RANK"], str(node_rank), env)
            self.assertEqual(env["MASTER_ADDR"], self.lab.address(1), env)
        self.assertEqual(files["n1"]["MASTER_PORT"], files["n2"]["MASTER_PORT"])
        self.assertRegex(files["n1"]["TORCHELASTIC_RUN_ID"], r"^slurm-\d+$")
        self.assertEqual(files["n1"]["TORCHELASTIC_RUN_ID"], files["n2"]["TORCHELASTIC_RUN_ID"])


if __name__ == "__main__":
    unittest.main()
