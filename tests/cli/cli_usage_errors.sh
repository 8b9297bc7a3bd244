#!/bin/sh
# Runs the gossip-rdzv binary with bad arguments: each must exit 2 with a one-line reason
# naming the option and value, then a pointer to --help. --help must exit 0.
# Usage: cli_usage_errors.sh PATH-TO-gossip-rdzv
set -u
bin=$1
failures=0
err=$(mktemp)
out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT

# expect CODE "FRAGMENT" ARGS...: exit code CODE and FRAGMENT somewhere in stderr.
expect() {
  code=$1 fragment=$2
  shift 2
  "$bin" "$@" >"$out" 2>"$err" </dev/null
  actual=$?
  if [ "$actual" -ne "$code" ]; then
    echo "FAIL: gossip-rdzv $*: exit $actual, expected $code"; cat "$err"
    failures=$((failures + 1))
  elif [ -n "$fragment" ] && ! grep -qF -- "$fragment" "$err"; then
    echo "FAIL: gossip-rdzv $*: stderr lacks '$fragment':"; cat "$err"
    failures=$((failures + 1))
  else
    echo "ok: gossip-rdzv $*"
  fi
}

# expect_usage FRAGMENT ARGS...: exit 2, FRAGMENT, the --help pointer, nothing on stdout.
expect_usage() {
  fragment=$1
  shift
  expect 2 "$fragment" "$@"
  if ! grep -q "^Run 'gossip-rdzv.* --help' for usage.$" "$err"; then
    echo "FAIL: gossip-rdzv $*: no pointer to --help"; failures=$((failures + 1))
  fi
  if [ "$(wc -l <"$err")" -ne 2 ]; then
    echo "FAIL: gossip-rdzv $*: expected exactly two lines on stderr"; failures=$((failures + 1))
  fi
  if [ -s "$out" ]; then
    echo "FAIL: gossip-rdzv $*: wrote to stdout"; failures=$((failures + 1))
  fi
}

expect_usage "a command is required"
expect_usage "unknown command 'launch'" launch
expect_usage "unknown option '--bogus'" join --seed n:1 --nnodes 2 --bogus
expect_usage "--seed is required" join --nnodes 2
expect_usage "--serve-store is for running without" join --seed n:1 --nnodes 2 --serve-store -- true
expect_usage "--nnodes is required" join --seed n:1
expect_usage "--watch is for running without '-- CMD'" join --seed n:1 --nnodes 2 --watch -- true
expect_usage "--on-round needs --watch" join --seed n:1 --nnodes 2 --on-round true
expect_usage "--on-round '': empty command" join --seed n:1 --nnodes 2 --watch --on-round ''
expect_usage "--max-restarts needs '-- CMD'" join --seed n:1 --nnodes 2 --watch --max-restarts 1
expect_usage "--stay-after-job needs an elastic job" join --seed n:1 --nnodes 2 --stay-after-job 10s -- true
expect_usage "--nnodes '0'" join --seed n:1 --nnodes 0
expect_usage "--nnodes '5:3': MIN must not exceed MAX" join --seed n:1 --nnodes 5:3
expect_usage "--nproc-per-node '0'" join --seed n:1 --nnodes 2 --nproc-per-node 0
expect_usage "--node-rank '2'" join --seed n:1 --nnodes 2 --node-rank 2
expect_usage "--join-timeout 'soon'" join --seed n:1 --nnodes 2 --join-timeout soon
expect_usage "--seed 'n:0'" join --seed n:0 --nnodes 2
expect_usage "--listen '1.2.3.4:x'" join --seed n:1 --nnodes 2 --listen 1.2.3.4:x
expect_usage "--format 'xml'" join --seed n:1 --nnodes 2 --format xml
expect_usage "--listen is required" seed
expect_usage "--seed must be given exactly once" members
expect_usage "--master-port '29411': is this node's own gossip port" \
  join --seed n:1 --nnodes 2 --listen :29411 --master-port 29411
expect_usage "--nnodes '99999999999999999999': is too large" join --seed n:1 --nnodes 99999999999999999999
expect_usage "--node-rank '-1': must not be negative" join --seed n:1 --nnodes 2 --node-rank -1

# An output path that can never be written stops the node before it joins (exit 10, nothing
# on stdout), rather than after the others agreed and started waiting for its workers.
fifo_dir=$(mktemp -d)
mkfifo "$fifo_dir/pipe"
expect 10 "it is a character device" \
  join --seed 127.0.0.1:1 --nnodes 2 --join-timeout 3s --env-file /dev/full --format export
expect 10 "it is a FIFO" join --seed 127.0.0.1:1 --nnodes 2 --join-timeout 3s \
  --membership-file "$fifo_dir/pipe"
ln -s pipe "$fifo_dir/pipe1"  # local rank 1's file: a link to the FIFO
expect 10 "which is a FIFO" join --seed 127.0.0.1:1 --nnodes 2 --nproc-per-node 2 \
  --join-timeout 3s --env-file "$fifo_dir/pipe{local_rank}" --serve-store
if grep -q "contacting seed" "$err" || [ -s "$out" ]; then
  echo "FAIL: a bad output path was found only after joining"; failures=$((failures + 1))
fi
[ -p "$fifo_dir/pipe" ] || { echo "FAIL: the FIFO was replaced"; failures=$((failures + 1)); }
rm -rf "$fifo_dir"

expect 0 "" --version
grep -q "^gossip-rdzv .* (protocol version [0-9]*)$" "$out" ||
  { echo "FAIL: --version printed no version"; failures=$((failures + 1)); }
expect 0 "" --help
grep -q "Usage: gossip-rdzv" "$out" || { echo "FAIL: --help printed no usage"; failures=$((failures + 1)); }
for command in join seed members; do
  expect 0 "" "$command" --help
  grep -q "Usage: gossip-rdzv $command" "$out" ||
    { echo "FAIL: $command --help printed no usage"; failures=$((failures + 1)); }
done

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all usage checks passed"
