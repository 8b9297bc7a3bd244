"""`gossip-rdzv keygen` and `gossip-rdzv keys`, and `--key-file` / GOSSIP_RDZV_KEY_FILE on the
commands that talk to nodes, run as the built binary (docs/security.md, docs/cli.md).

Every assertion reads what the command wrote: the file's mode, its lines, the key ids and
their order after each step, the exit code and the message.
Run: GOSSIP_RDZV_BIN=... python3 -m unittest -v test_keys
"""
from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
import sys
import unittest
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from testlib import (binary_or_skip, free_port, parse_env_file, temp_dir,  # noqa: E402
                     wait_until)

KEY_ID = re.compile(r"^[0-9a-f]{16}$")


def without_key_variable() -> dict:
    env = dict(os.environ)
    env.pop("GOSSIP_RDZV_KEY_FILE", None)
    return env


def key_lines(path: Path) -> List[str]:
    """The key lines of a key file, in order: neither comments nor blank lines."""
    return [line for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def assert_is_key(test: unittest.TestCase, line: str) -> None:
    test.assertEqual(len(base64.b64decode(line, validate=True)), 32, line)


class KeysCommandTest(unittest.TestCase):
    def setUp(self) -> None:
        self.bin = binary_or_skip()
        self.dir = temp_dir(self, "gossip-rdzv-keys-")
        self.key_file = self.dir / "job.key"

    def run_cli(self, *args: str, env: Optional[dict] = None) -> subprocess.CompletedProcess:
        return subprocess.run([self.bin, *map(str, args)], stdin=subprocess.DEVNULL,
                              env=without_key_variable() if env is None else env,
                              capture_output=True, text=True, timeout=60)

    def ok(self, *args: str, env: Optional[dict] = None) -> str:
        result = self.run_cli(*args, env=env)
        self.assertEqual(result.returncode, 0, f"{args}: {result.stdout}{result.stderr}")
        return result.stdout

    def usage_error(self, *args: str, env: Optional[dict] = None) -> str:
        result = self.run_cli(*args, env=env)
        self.assertEqual(result.returncode, 2, f"{args}: {result.stdout}{result.stderr}")
        self.assertEqual(result.stdout, "", args)
        return result.stderr

    def keygen(self, path: Path) -> str:
        """Writes a key file; returns the key id keygen printed."""
        out = self.ok("keygen", path)
        match = re.fullmatch(r"key id ([0-9a-f]{16}) written to (.*)\n", out)
        self.assertIsNotNone(match, out)
        self.assertEqual(match.group(2), str(path))
        return match.group(1)

    def listed(self) -> List[List[str]]:
        return [line.split() for line in self.ok("keys", "list", "--key-file",
                                                 self.key_file).splitlines()]

    def test_keys_install_reads_the_key_from_stdin_with_a_dash(self):
        first_id = self.keygen(self.key_file)
        new_file = self.dir / "new.key"
        new_id = self.keygen(new_file)
        result = subprocess.run([self.bin, "keys", "install", "--key-file", str(self.key_file),
                                 "-"], stdin=open(new_file), env=without_key_variable(),
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(self.listed(), [[first_id, "primary"], [new_id, "secondary"]])
        empty = subprocess.run([self.bin, "keys", "install", "--key-file", str(self.key_file),
                                "-"], stdin=subprocess.DEVNULL, env=without_key_variable(),
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(empty.returncode, 2, empty.stderr)
        self.assertIn("stdin holds no key", empty.stderr)

    # ---- keygen --------------------------------------------------------------------------

    def test_keygen_writes_one_key_with_mode_0600_and_prints_its_id(self):
        key_id = self.keygen(self.key_file)
        self.assertEqual(stat.S_IMODE(self.key_file.stat().st_mode), 0o600)
        lines = self.key_file.read_text().splitlines()
        self.assertEqual(lines[0], f"# key id {key_id}, made by gossip-rdzv keygen")
        self.assertEqual(len(lines), 2, lines)
        assert_is_key(self, lines[1])
        self.assertEqual(self.listed(), [[key_id, "primary"]])

    def test_keygen_without_path_prints_a_new_key_each_time(self):
        first, second = self.ok("keygen"), self.ok("keygen")
        self.assertTrue(first.endswith("\n") and first.count("\n") == 1, first)
        assert_is_key(self, first.strip())
        self.assertNotEqual(first, second)
        self.assertEqual(list(self.dir.iterdir()), [])

    def test_keygen_refuses_to_replace_a_file_unless_forced(self):
        first_id = self.keygen(self.key_file)
        before = self.key_file.read_text()
        message = self.usage_error("keygen", self.key_file)
        self.assertIn(f"'{self.key_file}' exists; refusing to replace it", message)
        self.assertIn("--force", message)
        self.assertEqual(self.key_file.read_text(), before)
        forced_id = self.keygen_forced()
        self.assertNotEqual(forced_id, first_id)
        self.assertEqual(stat.S_IMODE(self.key_file.stat().st_mode), 0o600)
        self.assertEqual(self.listed(), [[forced_id, "primary"]])

    def keygen_forced(self) -> str:
        out = self.ok("keygen", self.key_file, "--force")
        return out.split()[2]

    def test_keygen_refuses_what_is_not_a_regular_file(self):
        message = self.usage_error("keygen", self.dir)
        self.assertIn("is a directory, not a regular file", message)
        fifo = self.dir / "fifo"
        os.mkfifo(fifo)
        self.assertIn("is a FIFO", self.usage_error("keygen", fifo, "--force"))
        dangling = self.dir / "link"
        dangling.symlink_to(self.dir / "elsewhere.key")
        self.assertIn("leads nowhere", self.usage_error("keygen", dangling))
        self.assertFalse((self.dir / "elsewhere.key").exists())

    # ---- keys ----------------------------------------------------------------------------

    def test_rotation_install_use_remove(self):
        old_id = self.keygen(self.key_file)
        new_key = self.ok("keygen").strip()

        out = self.ok("keys", "install", "--key-file", self.key_file, new_key)
        new_id = re.search(r"installed key ([0-9a-f]{16})", out).group(1)
        self.assertEqual(self.listed(), [[old_id, "primary"], [new_id, "secondary"]])
        self.assertEqual(key_lines(self.key_file)[1], new_key)
        self.assertIn(f"# key id {new_id}, installed by gossip-rdzv keys install",
                      self.key_file.read_text())
        self.assertEqual(stat.S_IMODE(self.key_file.stat().st_mode), 0o600)

        # Installing it again changes nothing.
        before = self.key_file.read_text()
        self.assertIn("already in", self.ok("keys", "install", "--key-file", self.key_file,
                                           new_key))
        self.assertEqual(self.key_file.read_text(), before)

        self.ok("keys", "use", "--key-file", self.key_file, new_id)
        self.assertEqual(self.listed(), [[new_id, "primary"], [old_id, "secondary"]])
        self.assertEqual(key_lines(self.key_file)[0], new_key)
        # Each key keeps the comment written above it.
        lines = self.key_file.read_text().splitlines()
        self.assertEqual(lines[0], f"# key id {new_id}, installed by gossip-rdzv keys install")
        self.assertEqual(lines[2], f"# key id {old_id}, made by gossip-rdzv keygen")
        self.assertEqual(stat.S_IMODE(self.key_file.stat().st_mode), 0o600)

        self.ok("keys", "remove", "--key-file", self.key_file, old_id.upper())
        self.assertEqual(self.listed(), [[new_id, "primary"]])
        self.assertEqual(key_lines(self.key_file), [new_key])
        self.assertNotIn(old_id, self.key_file.read_text())
        self.assertEqual(stat.S_IMODE(self.key_file.stat().st_mode), 0o600)
        # No temporary file left beside it.
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["job.key"])

    def test_use_by_key_text(self):
        self.keygen(self.key_file)
        new_key = self.ok("keygen").strip()
        self.ok("keys", "install", "--key-file", self.key_file, new_key)
        self.ok("keys", "use", "--key-file", self.key_file, new_key)
        self.assertEqual(key_lines(self.key_file)[0], new_key)

    def test_remove_refuses_the_primary_and_the_last_key(self):
        primary = self.keygen(self.key_file)
        message = self.usage_error("keys", "remove", "--key-file", self.key_file, primary)
        self.assertIn(f"key {primary} is the only key of {self.key_file}", message)
        self.ok("keys", "install", "--key-file", self.key_file, self.ok("keygen").strip())
        before = self.key_file.read_text()
        message = self.usage_error("keys", "remove", "--key-file", self.key_file, primary)
        self.assertIn(f"key {primary} is the primary of {self.key_file}", message)
        self.assertIn("gossip-rdzv keys use", message)
        self.assertEqual(self.key_file.read_text(), before)

    def test_a_key_that_is_not_in_the_file_is_named_by_its_id(self):
        self.keygen(self.key_file)
        other = self.ok("keygen").strip()
        message = self.usage_error("keys", "use", "--key-file", self.key_file, other)
        self.assertRegex(message, r"key [0-9a-f]{16} is not in ")
        self.assertNotIn(other, message)  # a key is a secret: only its id is printed

    def test_bad_key_text_is_a_usage_error_and_changes_nothing(self):
        self.keygen(self.key_file)
        before = self.key_file.read_text()
        for bad in ["notakey", "aGVsbG8=", self.ok("keygen").strip()[:-4]]:
            message = self.usage_error("keys", "install", "--key-file", self.key_file, bad)
            self.assertIn("is not a key (expected base64 of 32 bytes", message)
            self.assertIn("Run 'gossip-rdzv keys install --help' for usage.", message)
        self.assertIn("neither a key nor a key id",
                      self.usage_error("keys", "remove", "--key-file", self.key_file, "xyz"))
        self.assertEqual(self.key_file.read_text(), before)

    def test_keys_refuses_a_file_that_holds_no_valid_key(self):
        self.key_file.write_text("# nothing yet\nthis is no key\n")
        message = self.usage_error("keys", "list", "--key-file", self.key_file)
        self.assertIn(str(self.key_file), message)

    # ---- --key-file and GOSSIP_RDZV_KEY_FILE ----------------------------------------------

    def test_a_missing_key_file_is_a_usage_error_naming_it(self):
        missing = self.dir / "no-such.key"
        port = free_port()
        for args in (["join", "--seed", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{port}",
                      "--nnodes", "1"],
                     ["seed", "--listen", "127.0.0.1:0"],
                     ["members", "--seed", f"127.0.0.1:{port}"],
                     ["doctor", "--seed", f"127.0.0.1:{port}"],
                     ["keys", "list"]):
            with self.subTest(command=args[0]):
                message = self.usage_error(*args, "--key-file", missing)
                self.assertIn(str(missing), message)
                self.assertTrue(message.startswith("gossip-rdzv: error: "), message)

    def test_the_variable_names_the_key_file(self):
        key_id = self.keygen(self.key_file)
        env = without_key_variable()
        env["GOSSIP_RDZV_KEY_FILE"] = str(self.key_file)
        out = self.ok("keys", "list", env=env)
        self.assertEqual(out.split(), [key_id, "primary"])
        missing = self.dir / "missing.key"
        env["GOSSIP_RDZV_KEY_FILE"] = str(missing)
        self.assertIn(str(missing), self.usage_error("members", "--seed", "127.0.0.1:1",
                                                     env=env))
        # The flag wins over the variable.
        self.assertEqual(self.ok("keys", "list", "--key-file", self.key_file, env=env).split(),
                         [key_id, "primary"])

    def test_doctor_names_the_key(self):
        key_id = self.keygen(self.key_file)
        port = free_port()
        args = ["doctor", "--seed", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{port}",
                "--timeout", "1s"]
        with_key = self.run_cli(*args, "--key-file", self.key_file)
        self.assertIn(f"\nkey: {key_id} (1 key) from {self.key_file}\n", with_key.stdout)
        without = self.run_cli(*args)
        self.assertIn("\nkey: none (messages in clear)\n", without.stdout)

    def test_members_and_doctor_need_the_seeds_key(self):
        self.keygen(self.key_file)
        other = self.dir / "other.key"
        self.keygen(other)
        port = free_port()
        seed = subprocess.Popen(
            [self.bin, "seed", "--listen", f"127.0.0.1:{port}", "--run-id", "keys-test",
             "--key-file", self.key_file],
            env=without_key_variable(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(seed.stdout.readline().startswith("seed listening on"))
            members = ["members", "--seed", f"127.0.0.1:{port}", "--run-id", "keys-test",
                       "--timeout", "10s"]
            self.assertTrue(self.ok(*members, "--key-file", self.key_file)
                            .startswith("ENDPOINT"))
            for given in (["--key-file", str(other)], []):
                with self.subTest(key=given):
                    refused = self.run_cli(*members, *given)
                    self.assertEqual(refused.returncode, 13, refused.stderr)
                    self.assertIn("authentication failed: peer 127.0.0.1:", refused.stderr)
                    self.assertIn("--key-file", refused.stderr)
            doctor = self.run_cli("doctor", "--seed", f"127.0.0.1:{port}", "--run-id",
                                  "keys-test", "--listen", "127.0.0.1:0", "--timeout", "10s",
                                  "--key-file", other)
            self.assertEqual(doctor.returncode, 13, doctor.stdout + doctor.stderr)
            self.assertRegex(doctor.stdout, r"FAIL  handshake 127\.0\.0\.1:\d+: authentication "
                                            r"failed")
            self.assertIn(f"gossip-rdzv keys list --key-file {other}", doctor.stdout)
        finally:
            seed.terminate()
            seed.communicate(timeout=30)

    def test_workers_get_the_key_file_as_an_absolute_path(self):
        self.keygen(self.key_file)
        port = free_port()
        result = subprocess.run(
            [self.bin, "join", "--seed", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{port}",
             "--nnodes", "1", "--profile", "local", "-q", "--key-file", "job.key", "--",
             "sh", "-c", 'echo "KEY=$GOSSIP_RDZV_KEY_FILE STORE=$GOSSIP_RDZV_STORE"'],
            cwd=self.dir, env=without_key_variable(), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(),
                         f"KEY={self.key_file.resolve()} STORE=127.0.0.1:{port}")

    def test_serve_store_env_files_carry_the_key_file(self):
        self.keygen(self.key_file)
        port = free_port()
        env_file = self.dir / "rank{local_rank}.env"
        proc = subprocess.Popen(
            [self.bin, "join", "--seed", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{port}",
             "--nnodes", "1", "--profile", "local", "-q", "--key-file", self.key_file,
             "--serve-store", "--env-file", env_file],
            env=without_key_variable(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            written = self.dir / "rank0.env"
            wait_until(lambda: written.exists() or proc.poll() is not None, 30, "the env file")
            env = parse_env_file(written)
            self.assertEqual(env["GOSSIP_RDZV_KEY_FILE"], str(self.key_file))
            self.assertEqual(env["GOSSIP_RDZV_STORE"], f"127.0.0.1:{port}")
        finally:
            proc.terminate()
            printed, errors = proc.communicate(timeout=30)
        self.assertIn(f"\nGOSSIP_RDZV_KEY_FILE={self.key_file}\n", printed, errors)


if __name__ == "__main__":
    unittest.main()
