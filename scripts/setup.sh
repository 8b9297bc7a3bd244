#!/usr/bin/env bash
# Installs what gossip-rdzv needs to build, test and run its demo on Debian 12.
# Idempotent: when every package is already installed it does nothing (no apt-get update),
# so scripts/test.sh and scripts/demo.sh can call it on every run.
# Runs as root, or through sudo when available.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libzmq3-dev libsodium-dev cppzmq-dev libmsgpack-cxx-dev libspdlog-dev libgtest-dev libcli11-dev
  libgloo-dev python3-torch python3-yaml
  clang libclang-rt-14-dev
  help2man lintian dpkg-dev fakeroot
  nftables iproute2
  slurmctld slurmd slurm-client munge
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed" >&2
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run this script as root (or install sudo) so it can apt-get install them" >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get not found; this script targets Debian 12 (bookworm)." >&2
  echo "setup: install these packages by other means: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${PACKAGES[@]}"
