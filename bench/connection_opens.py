#!/usr/bin/python3
"""How many connections each agent would open: a replay of the simulator's packet trace.

Reads `gossip-rdzv-sim ... --trace 2` on stdin and, for each node, replays the destinations
of its messages through an LRU cache of CAP peers (the transport keeps 64 outgoing
connections, TransportOptions::max_destinations): a message to a peer not in the cache is a
connection opened. Prints messages sent per node and connections opened per node.

Usage (docs/performance.md, "Connections opened per agent"):
  build/tools/gossip-rdzv-sim/gossip-rdzv-sim --scenario bench --nodes 256 --seed 1 \\
      --codec size --trace 2 | python3 bench/connection_opens.py 64
  ... | python3 bench/connection_opens.py 100000      # no bound: first sends to a peer
"""
import collections
import re
import sys

PACKET = re.compile(r"^\[([0-9.]+)\] slot (\d+) -> (\d+) (\w+)")


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        print("usage: gossip-rdzv-sim ... --trace 2 | connection_opens.py CAP "
              "(CAP: a positive number of cached peers)", file=sys.stderr)
        return 2
    cap = int(sys.argv[1])
    cache = collections.defaultdict(collections.OrderedDict)
    sends, opens = collections.Counter(), collections.Counter()
    for line in sys.stdin:
        match = PACKET.match(line)
        if not match:
            continue
        sender, receiver = int(match[2]), int(match[3])
        peers = cache[sender]
        sends[sender] += 1
        if receiver in peers:
            peers.move_to_end(receiver)
            continue
        opens[sender] += 1
        peers[receiver] = True
        if len(peers) > cap:
            peers.popitem(last=False)
    if not sends:
        print("connection_opens: no packet lines on stdin (run the simulator with --trace 2)",
              file=sys.stderr)
        return 1
    nodes = len(sends)
    total_sends, total_opens = sum(sends.values()), sum(opens.values())
    print(f"cap {cap}: nodes {nodes} sends/node {total_sends / nodes:.0f} "
          f"opens/node {total_opens / nodes:.0f} ({100 * total_opens / total_sends:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
