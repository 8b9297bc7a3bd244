"""The Debian package works from a scratch root: `cpack -G DEB` the build tree, `dpkg -x` the
.deb into a temporary directory, then, against that root only,
  - build examples/launcher with find_package(gossip_rdzv) and run two launchers that agree;
  - build tests/package/pkgconfig_app.c with `pkg-config --cflags --libs gossip_rdzv` and run it;
  - run the packaged gossip-rdzv, read its man pages and its bash completion;
and check the package's metadata (dependencies by Debian package name) and lintian's verdict.

Needs GOSSIP_RDZV_BUILD_DIR (a configured and fully built tree) and GOSSIP_RDZV_SOURCE_DIR;
CTest sets both.
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
from testlib import REPO, free_ports, run_ok, temp_dir  # noqa: E402


def cmake_tool(name: str) -> str:
    cmake = os.environ.get("CMAKE_COMMAND")
    if cmake:
        sibling = Path(cmake).with_name(name)
        if sibling.exists():
            return str(sibling)
    return shutil.which(name) or name


class DebTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        for tool in ("dpkg-deb", "dpkg-shlibdeps", "pkg-config", "cc"):
            if not shutil.which(tool):
                raise unittest.SkipTest(f"{tool} not found (scripts/setup.sh installs it)")
        cls.build_dir = Path(os.environ.get("GOSSIP_RDZV_BUILD_DIR", REPO / "build"))
        cls.source_dir = Path(os.environ.get("GOSSIP_RDZV_SOURCE_DIR", REPO))
        cls.work = Path(os.environ.get("TMPDIR", "/tmp")) / f"gossip-rdzv-deb-{os.getpid()}"
        shutil.rmtree(cls.work, ignore_errors=True)
        cls.work.mkdir(parents=True)
        out = cls.work / "cpack"
        result = subprocess.run(
            [cmake_tool("cpack"), "-G", "DEB", "--config", str(cls.build_dir / "CPackConfig.cmake"),
             "-B", str(out)], capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise AssertionError(f"cpack failed:\n{result.stdout}\n{result.stderr}")
        debs = list(out.glob("gossip-rdzv_*.deb"))
        if len(debs) != 1:
            raise AssertionError(f"expected one gossip-rdzv_*.deb in {out}: {list(out.iterdir())}")
        cls.deb = debs[0]
        cls.root = cls.work / "root"
        subprocess.run(["dpkg-deb", "-x", str(cls.deb), str(cls.root)], check=True)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-deb-test-")
        self.cluster = Cluster(self.tmp / "run")
        self.addCleanup(self.cluster.close)
        libdirs = sorted({str(p.parent) for p in self.root.glob("usr/lib*/**/libgossip_rdzv.so.*")})
        self.assertTrue(libdirs, "the .deb holds no libgossip_rdzv.so")
        self.env = dict(os.environ, LD_LIBRARY_PATH=":".join(libdirs))

    def check(self, args, env=None, timeout=300) -> subprocess.CompletedProcess:
        return run_ok(self, args, env=env or self.env, timeout=timeout)

    def test_contents(self):
        usr = self.root / "usr"
        for path in ("bin/gossip-rdzv", "bin/gossip-rdzv-sim", "include/gossip_rdzv/gossip_rdzv.h",
                     "include/gossip_rdzv/export.h", "share/bash-completion/completions/gossip-rdzv",
                     "share/doc/gossip-rdzv/copyright"):
            self.assertTrue((usr / path).exists(), f"the .deb lacks /usr/{path}")
        self.assertTrue(list(usr.glob("lib*/**/cmake/gossip_rdzv/gossip_rdzvConfig.cmake")))
        self.assertTrue(list(usr.glob("lib*/**/pkgconfig/gossip_rdzv.pc")))
        pages = sorted(p.name for p in (usr / "share/man/man1").glob("*.1.gz"))
        self.assertEqual(pages, [f"gossip-rdzv{s}.1.gz" for s in
                                 ("-doctor", "-join", "-keygen", "-keys", "-members",
                                  "-seed", "-sim", "")])

    def test_man_pages_come_from_help(self):
        man = self.root / "usr/share/man/man1"
        join = subprocess.run(["gzip", "-dc", str(man / "gossip-rdzv-join.1.gz")],
                              capture_output=True, text=True, check=True).stdout
        # Options only `join --help` lists, so the page is the subcommand's help.
        for option in ("--nnodes", "--env-file", "--serve-store"):
            self.assertIn(option.replace("-", r"\-"), join)
        main = subprocess.run(["gzip", "-dc", str(man / "gossip-rdzv.1.gz")],
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("doctor", main)
        self.assertNotIn(r"\-\-serve\-store", main)

    def test_depends_by_package_name(self):
        control = self.check(["dpkg-deb", "-f", self.deb, "Depends"]).stdout
        for package in ("libc6", "libstdc++6", "libzmq5", "libspdlog", "python3"):
            self.assertIn(package, control)

    def test_bash_completion(self):
        if not shutil.which("bash"):
            self.skipTest("bash not found")
        completion = self.root / "usr/share/bash-completion/completions/gossip-rdzv"
        gossip = self.root / "usr/bin/gossip-rdzv"
        script = (f". {completion}\n"
                  f"COMP_WORDS=({gossip} jo); COMP_CWORD=1; _gossip_rdzv; echo \"${{COMPREPLY[*]}}\"\n"
                  f"COMP_WORDS=({gossip} join --env); COMP_CWORD=2; _gossip_rdzv; echo \"${{COMPREPLY[*]}}\"\n")
        lines = self.check(["bash", "-c", script]).stdout.splitlines()
        self.assertEqual(lines, ["join", "--env-file"])

    def test_launcher_with_find_package(self):
        build = self.tmp / "launcher-build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        self.check([cmake_tool("cmake"), "-S", self.source_dir / "examples" / "launcher", "-B", build,
                    *generator, f"-DCMAKE_PREFIX_PATH={self.root / 'usr'}",
                    "-DCMAKE_BUILD_TYPE=Release"])
        self.check([cmake_tool("cmake"), "--build", build, "-j2"])
        envs = run_two_launchers(self, self.cluster, build / "launcher", "deb-test", env=self.env)
        self.assertEqual(sorted(e["RANK"] for e in envs), ["0", "1"], envs)
        # The launcher loads the packaged library, not the build tree's.
        ldd = self.check(["ldd", build / "launcher"]).stdout
        self.assertIn(str(self.root), ldd)

    def test_c_program_with_pkg_config(self):
        pc_dirs = sorted({str(p.parent) for p in self.root.glob("usr/lib*/**/pkgconfig/gossip_rdzv.pc")})
        env = dict(self.env, PKG_CONFIG_PATH=":".join(pc_dirs))
        flags = self.check(["pkg-config", "--cflags", "--libs", "gossip_rdzv"], env=env).stdout.split()
        # The .pc file is relocatable: its paths point into the scratch root.
        includes = [Path(f[2:]).resolve() for f in flags if f.startswith("-I")]
        self.assertEqual(includes, [(self.root / "usr" / "include").resolve()], flags)
        app = self.tmp / "pkgconfig_app"
        self.check(["cc", "-std=c11", "-Wall", "-Werror", "-D_POSIX_C_SOURCE=200809L",
                    self.source_dir / "tests" / "package" / "pkgconfig_app.c", "-o", app, *flags],
                   env=env)
        port = free_ports(1)[0]
        out = self.check([app, f"127.0.0.1:{port}"], timeout=60).stdout
        self.assertIn("WORLD_SIZE=1", out)
        self.assertIn("RANK=0", out)

    def test_packaged_command_runs(self):
        out = self.check([self.root / "usr/bin/gossip-rdzv", "--version"]).stdout
        self.assertIn("gossip-rdzv", out)
        sim = self.check([self.root / "usr/bin/gossip-rdzv-sim", "--help"]).stdout
        self.assertIn("Usage", sim)

    def test_python_package_loads_the_packaged_library(self):
        dist = self.root / "usr/lib/python3/dist-packages"
        self.assertTrue((dist / "gossip_rdzv" / "__init__.py").exists())
        env = {k: v for k, v in self.env.items() if k != "GOSSIP_RDZV_LIBRARY"}
        env["PYTHONPATH"] = str(dist)
        out = self.check([sys.executable, "-c",
                          "import gossip_rdzv._lib as l; print(l.path); "
                          "print(l.lib.gossip_rdzv_status_name(5).decode())"], env=env).stdout
        self.assertEqual(out.split(), ["libgossip_rdzv.so.0", "join_timeout"])

    def test_lintian(self):
        if not shutil.which("lintian"):
            self.skipTest("lintian not found (scripts/setup.sh installs it)")
        result = subprocess.run(["lintian", "--fail-on", "error,warning", str(self.deb)],
                                capture_output=True, text=True, timeout=600)
        self.assertEqual(result.returncode, 0, f"lintian:\n{result.stdout}\n{result.stderr}")


if __name__ == "__main__":
    unittest.main()
