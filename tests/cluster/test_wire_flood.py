"""Hostile bytes sent to a live `gossip-rdzv join` (issue 25, "Bad bytes on the wire"): the
node's memory stays bounded and a second node still joins (docs/wire-format.md, "Transport"
and "Limits"). The same floods on a connection the node opened itself, and the bounds in
detail, are in tests/integration/zmq_transport_test.cpp.

Run: GOSSIP_RDZV_BIN=build/tools/gossip-rdzv/gossip-rdzv /usr/bin/python3 -m unittest -v test_wire_flood
"""
from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster, check_consistent  # noqa: E402
from testlib import free_ports, temp_dir, wait_listening  # noqa: E402

# A node of a two-node job peaks near 20 MiB; a connection may make it hold about 4.5 MiB
# more (docs/wire-format.md), and the list bomb would take 99 MiB to unpack.
RSS_LIMIT_MIB = 64.0


def zmtp_handshake() -> bytes:
    """A ZMTP 3.0 NULL greeting and READY, as a DEALER (what libzmq sends)."""
    greeting = b"\xff" + b"\x00" * 7 + b"\x01\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00")
    greeting += b"\x00" * 32
    ready = (b"\x05READY" + b"\x0bSocket-Type" + (6).to_bytes(4, "big") + b"DEALER"
             + b"\x08Identity" + (0).to_bytes(4, "big"))
    return greeting + bytes([0x04, len(ready)]) + ready


def connect_as_dealer(port: int) -> socket.socket:
    """A raw TCP connection that has done the ZMTP handshake with the node: libzmq drops a peer
    that sends a message before its own READY went out, so this waits for the node's."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(zmtp_handshake())
    received = b""
    while len(received) < 66 or len(received) < 66 + received[65]:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError("the node closed the connection during the handshake")
        received += chunk
    return sock


def long_frame(payload_size: int, more: bool) -> bytes:
    return bytes([0x03 if more else 0x02]) + payload_size.to_bytes(8, "big")


def list_bomb(run_id: str) -> bytes:
    """A Gossip whose header is sound and whose body is 63 lists of 65,535 nils: 4.1 MB that
    msgpack would unpack into 99 MB of objects."""
    def s(text: str) -> bytes:
        return bytes([0xa0 | len(text)]) + text.encode()
    head = b"\x97" + s("GRDZ") + b"\x03" + s(run_id) + s("127.0.0.1:1") + b"\x01" + b"\x06"
    body = b"\xdc\x00\x3f" + (b"\xdc\xff\xff" + b"\xc0" * 65535) * 63
    return head + body


class WireFloodTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self, "gossip-rdzv-flood-")
        self.cluster = Cluster(self.tmp)
        self.addCleanup(self.cluster.close)

    def first_node_then_attack(self, attack, extra=()) -> None:
        ports = free_ports(2)
        seed = f"127.0.0.1:{ports[0]}"
        first = self.cluster.add_node([seed], "2", port=ports[0], join_timeout="60s",
                                      extra=extra)
        wait_listening(ports[0], 30, what="the first node to listen")
        attack(ports[0])
        second = self.cluster.add_node([seed], "2", port=ports[1], join_timeout="60s",
                                       extra=extra)
        codes = self.cluster.wait_nodes([first, second], 90)
        self.assertEqual(codes, [0, 0], self.cluster.logs())
        check_consistent(self, [first, second])
        self.assertLess(first.proc.peak_rss_mib, RSS_LIMIT_MIB, self.cluster.logs([first]))

    def test_endless_multipart_message_is_cut_off(self):
        sent = []

        def flood(port: int) -> None:
            frame = long_frame(1 << 20, more=True) + b"x" * (1 << 20)
            with connect_as_dealer(port) as hostile:
                hostile.settimeout(2.0)  # a send blocked this long: the node stopped reading
                deadline = time.monotonic() + 20
                try:
                    while len(sent) < 512 and time.monotonic() < deadline:
                        hostile.sendall(frame)
                        sent.append(len(frame))
                except OSError:
                    pass  # closed by the node, as it should be
        self.first_node_then_attack(flood)
        self.assertLess(len(sent), 64, "MiB accepted before the node closed the connection")

    def test_list_bomb_is_refused_before_unpacking(self):
        def bomb(port: int) -> None:
            message = list_bomb("cluster-test")
            self.assertLess(len(message), 4 * 1024 * 1024)
            with connect_as_dealer(port) as hostile:
                hostile.sendall(long_frame(len(message), more=False) + message)
        self.first_node_then_attack(bomb)

    def test_thousands_of_connections_with_garbage_from_one_process(self):
        """Issue 23: a flood of connections, each sending a frame that is no sealed message,
        against a node of a job with a key. The node holds at most 1024 inbound connections
        (the idlest closed first), answers each bad frame with a 14-byte notice, and a node
        with the key still joins."""
        key = self.tmp / "job.key"
        done = subprocess.run([self.cluster.bin, "keygen", str(key)], capture_output=True,
                              text=True, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))
        opened = []

        def flood(port: int) -> None:
            garbage = bytes([0x00, 64]) + b"\x5a" * 64
            held = []
            try:
                for _ in range(3000):
                    try:
                        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                        sock.sendall(zmtp_handshake() + garbage)
                    except OSError:
                        continue  # refused or reset under the flood: the next one
                    held.append(sock)
                opened.append(len(held))
            finally:
                self.addCleanup(lambda: [s.close() for s in held])
        self.first_node_then_attack(flood, extra=["--key-file", str(key)])
        self.assertGreater(opened[0], 1024, "the flood must go beyond the cap")


if __name__ == "__main__":
    unittest.main()
