#!/usr/bin/env bash
# A local multi-node rendezvous that ends in a working gloo process group.
#
# Starts 4 gossip-rdzv nodes on loopback (gossip ports 29401-29404; node 1 is the seed all
# of them name), each with --nproc-per-node 2. They agree on ranks without a master, then
# each node starts 2 torch workers (examples/allreduce.py) that form one gloo group of
# 8 ranks and all-reduce. Prints the assignment table and one line per rank; exits non-zero
# on any failure. Installs what it needs first (scripts/setup.sh) and builds the binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

NODES=4
NPROC=2
WORLD=$((NODES * NPROC))
BASE_PORT=29400
PYTHON=/usr/bin/python3   # Debian's python3 with python3-torch
BUILD_DIR=${GOSSIP_RDZV_BUILD_DIR:-build}   # override to keep another build tree

bash scripts/setup.sh
cmake -S . -B "$BUILD_DIR" -G Ninja -DGOSSIP_RDZV_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j2 --target gossip-rdzv
BIN="$(cd "$BUILD_DIR" && pwd)/tools/gossip-rdzv/gossip-rdzv"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gossip-rdzv-demo.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

echo
echo "== starting $NODES nodes x $NPROC workers on 127.0.0.1:$((BASE_PORT + 1))-$((BASE_PORT + NODES)), seed 127.0.0.1:$((BASE_PORT + 1))"
for i in $(seq 1 "$NODES"); do
  port=$((BASE_PORT + i))
  # `timeout` bounds the whole node (rendezvous + torch import + all_reduce).
  timeout 300 "$BIN" join \
    --seed "127.0.0.1:$((BASE_PORT + 1))" \
    --listen "127.0.0.1:$port" \
    --nnodes "$NODES" --nproc-per-node "$NPROC" \
    --run-id demo --profile local --join-timeout 60s \
    --membership-file "$WORK/node$i.membership.json" \
    -- "$PYTHON" "$ROOT/examples/allreduce.py" \
    >"$WORK/node$i.out" 2>"$WORK/node$i.err" &
  pids+=($!)
done

# Wait for the nodes; the first failure stops the others at once (no waiting for their
# join timeout) and shows that node's log, which names the cause and the fix.
declare -A node_of_pid
for i in $(seq 1 "$NODES"); do node_of_pid[${pids[$((i - 1))]}]=$i; done
failed=0
running=$NODES
while ((running > 0)); do
  status=0
  done_pid=""
  wait -n -p done_pid || status=$?   # any node (they are our only jobs)
  [[ -z "$done_pid" ]] && break
  running=$((running - 1))
  i=${node_of_pid[$done_pid]}
  if [[ $status -ne 0 && $failed -eq 0 ]]; then
    failed=1
    echo "node $i (127.0.0.1:$((BASE_PORT + i))) failed with exit status $status; its log:" >&2
    sed 's/^/    /' "$WORK/node$i.err" >&2
    echo "stopping the other nodes" >&2
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  fi
done
pids=()

# The agreed assignment, as every node wrote it (they are identical; show node 1's).
if [[ -s "$WORK/node1.membership.json" ]]; then
  echo
  echo "== assignment agreed by the $NODES nodes"
  "$PYTHON" - "$WORK/node1.membership.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"run {m['run_id']} round {m['round']}: world size {m['world_size']}, "
      f"master {m['master_addr']}:{m['master_port']}")
print(f"{'NODE_RANK':>9}  {'RANKS':<6} {'ENDPOINT':<16} {'NPROC':>5}  HOSTNAME")
for n in m["nodes"]:
    first, last = n["rank_offset"], n["rank_offset"] + n["nproc"] - 1
    ranks = f"{first}" if first == last else f"{first}-{last}"
    print(f"{n['node_rank']:>9}  {ranks:<6} {n['endpoint']:<16} {n['nproc']:>5}  {n['hostname']}")
PY
fi

if [[ $failed -eq 0 ]]; then
  echo
  echo "== workers"
fi
cat "$WORK"/node*.out | grep -E '^rank [0-9]+/' | sort -t' ' -k2,2n || true
ok_lines=$(cat "$WORK"/node*.out | grep -cE "^rank [0-9]+/$WORLD .* OK$" || true)

# Every node must agree on the same assignment.
consistent=1
for i in $(seq 2 "$NODES"); do
  [[ $failed -eq 0 ]] || break
  if ! cmp -s "$WORK/node1.membership.json" "$WORK/node$i.membership.json"; then
    echo "node $i wrote a different membership file than node 1" >&2
    consistent=0
  fi
done

echo
if [[ $failed -eq 0 && $consistent -eq 1 && $ok_lines -eq $WORLD ]]; then
  echo "gloo group of $WORLD ranks formed: all_reduce sum OK"
  exit 0
fi
echo "demo FAILED: $ok_lines of $WORLD ranks reported a correct all_reduce" >&2
exit 1
