"""The installed CMake package works for a custom launcher: `cmake --install` the build tree
into a temporary prefix, build examples/launcher against it with find_package(gossip_rdzv),
run two launchers on loopback and check they agree.

Needs GOSSIP_RDZV_BUILD_DIR (a configured and built tree) and GOSSIP_RDZV_SOURCE_DIR; CTest
sets both.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster, run_two_launchers  # noqa: E402
from testlib import REPO, run_ok, temp_dir  # noqa: E402


def cmake() -> str:
    return os.environ.get("CMAKE_COMMAND") or shutil.which("cmake") or "cmake"


class PackageTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-package-")
        self.cluster = Cluster(self.tmp / "run")
        self.addCleanup(self.cluster.close)
        self.build_dir = Path(os.environ.get("GOSSIP_RDZV_BUILD_DIR", REPO / "build"))
        self.source_dir = Path(os.environ.get("GOSSIP_RDZV_SOURCE_DIR", REPO))

    def check(self, args, timeout=300) -> subprocess.CompletedProcess:
        return run_ok(self, args, timeout=timeout)

    def test_install_and_build_launcher(self):
        prefix = self.tmp / "prefix"
        self.check([cmake(), "--install", self.build_dir, "--prefix", prefix])
        config_files = list(prefix.glob("lib*/**/gossip_rdzvConfig.cmake"))
        self.assertTrue(config_files, "gossip_rdzvConfig.cmake was not installed")
        self.assertTrue((prefix / "include" / "gossip_rdzv" / "node.hpp").exists())
        self.assertTrue((prefix / "bin" / "gossip-rdzv").exists())
        # The public headers must not need the private dependencies.
        for header in (prefix / "include" / "gossip_rdzv").glob("*"):
            text = header.read_text()
            for private in ("zmq", "spdlog", "msgpack"):
                self.assertNotIn(f"#include <{private}", text, f"{header.name} leaks {private}")

        launcher_build = self.tmp / "launcher-build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        self.check([cmake(), "-S", self.source_dir / "examples" / "launcher", "-B",
                    launcher_build, *generator, f"-DCMAKE_PREFIX_PATH={prefix}",
                    "-DCMAKE_BUILD_TYPE=Release"])
        self.check([cmake(), "--build", launcher_build, "-j2"])
        launcher = launcher_build / "launcher"
        self.assertTrue(launcher.exists())

        envs = run_two_launchers(self, self.cluster, launcher, "package-test")
        logs = repr(envs)
        for key in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"):
            self.assertEqual(len({e.get(key) for e in envs}), 1, f"launchers disagree on {key}\n{logs}")
        self.assertEqual(envs[0]["MASTER_ADDR"], "127.0.0.1")
        self.assertEqual(envs[0]["WORLD_SIZE"], "2")
        self.assertEqual(sorted(e["RANK"] for e in envs), ["0", "1"])


if __name__ == "__main__":
    unittest.main()
