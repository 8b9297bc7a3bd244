"""`pip install ./python` works offline, and the package finds libgossip_rdzv.so.0 where
Python users expect it: next to itself, on the system's library path, or at
$GOSSIP_RDZV_LIBRARY (which, when set, is the only place tried).

Needs GOSSIP_RDZV_LIBRARY (the built library; CTest sets it) and GOSSIP_RDZV_SOURCE_DIR.
Runs under the Python of the tests (Debian's /usr/bin/python3, whose pip and setuptools
build the package without an index).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import REPO, temp_dir  # noqa: E402

PROBE = ("import gossip_rdzv, gossip_rdzv._lib as l; "
         "print(l.path); print(l.lib.gossip_rdzv_status_name(101).decode()); "
         "print(gossip_rdzv.__file__)")


class PythonInstallTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-python-")
        self.library = Path(os.environ["GOSSIP_RDZV_LIBRARY"]).resolve()
        self.source = Path(os.environ.get("GOSSIP_RDZV_SOURCE_DIR", REPO))
        # A copy: building in place would leave build/ and *.egg-info in the source tree.
        self.python_dir = self.tmp / "python"
        shutil.copytree(self.source / "python", self.python_dir,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))

    def env(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("GOSSIP_RDZV_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
        env.update(extra)
        return env

    def run_python(self, args, env, cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], env=env, cwd=cwd or self.tmp,
                              capture_output=True, text=True, timeout=300)

    def pip_install(self, target: Path) -> None:
        result = self.run_python(["-m", "pip", "install", "--no-build-isolation", "--no-index",
                                  "--no-deps", "--target", str(target), str(self.python_dir)],
                                 self.env(PIP_DISABLE_PIP_VERSION_CHECK="1"))
        self.assertEqual(result.returncode, 0, f"pip install failed:\n{result.stdout}\n{result.stderr}")

    def test_pip_install_then_system_library_path(self):
        site = self.tmp / "site"
        self.pip_install(site)
        self.assertTrue((site / "gossip_rdzv" / "__init__.py").exists())
        self.assertTrue(list(site.glob("gossip_rdzv-0.1.0.dist-info")), list(site.iterdir()))
        # The loader's path stands for the system's: the library is found by its SONAME.
        result = self.run_python(["-c", PROBE], self.env(PYTHONPATH=str(site),
                                                         LD_LIBRARY_PATH=str(self.library.parent)))
        self.assertEqual(result.returncode, 0, result.stderr)
        path, name, module = result.stdout.splitlines()
        self.assertEqual(path, "libgossip_rdzv.so.0")
        self.assertEqual(name, "store_timeout")
        self.assertTrue(module.startswith(str(site)), module)

    def test_library_next_to_the_package_comes_first(self):
        shutil.copy(self.library, self.python_dir / "gossip_rdzv" / "libgossip_rdzv.so.0")
        site = self.tmp / "site"
        self.pip_install(site)
        beside = site / "gossip_rdzv" / "libgossip_rdzv.so.0"
        self.assertTrue(beside.exists(), "package-data did not ship the library")
        result = self.run_python(["-c", PROBE], self.env(PYTHONPATH=str(site)))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines()[0], str(beside))

    def test_environment_variable_overrides_and_is_the_only_place_tried(self):
        site = self.tmp / "site"
        self.pip_install(site)
        result = self.run_python(["-c", PROBE], self.env(
            PYTHONPATH=str(site), GOSSIP_RDZV_LIBRARY=str(self.library),
            LD_LIBRARY_PATH=str(self.library.parent)))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines()[0], str(self.library))
        missing = self.tmp / "nowhere" / "libgossip_rdzv.so"
        result = self.run_python(["-c", PROBE], self.env(
            PYTHONPATH=str(site), GOSSIP_RDZV_LIBRARY=str(missing),
            LD_LIBRARY_PATH=str(self.library.parent)))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"{missing} (no such file)", result.stderr)
        self.assertIn("GOSSIP_RDZV_LIBRARY", result.stderr)


if __name__ == "__main__":
    unittest.main()
