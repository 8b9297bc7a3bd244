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

expect 0 "" --help
grep -q "Usage: gossip-rdzv" "$out" || { echo "FAIL: --help printed no usage"; failures=$((failures + 1)); }
for command in join seed members; do
  expect 0 "" "$command" --help
  grep -q "Usage: gossip-rdzv $command" "$out" ||
    { echo "FAIL: $command --help printed no usage"; failures=$((failures + 1)); }
done

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all usage checks passed"
