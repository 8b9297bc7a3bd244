// torchrun-compatible environment variables from an Assignment, and env files holding them.
// A training script that runs under torchrun runs unchanged with these variables set.
// docs/env-vars.md describes every variable and file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gossip_rdzv/assignment.hpp"
#include "gossip_rdzv/export.h"

namespace gossip_rdzv {

/// Ordered (name, value) pairs; the order is the one written to files.
using EnvVars = std::vector<std::pair<std::string, std::string>>;

/// The variables of one worker process, in this order: MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
/// RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, NODE_RANK, NNODES,
/// ROLE_NAME ("default"), ROLE_RANK, ROLE_WORLD_SIZE, TORCHELASTIC_RUN_ID,
/// TORCHELASTIC_RESTART_COUNT (the round), then GLOO_SOCKET_IFNAME=`ifname` and
/// NCCL_SOCKET_IFNAME==`ifname` (NCCL's exact-name form) when `ifname` is given
/// (see interface_for_address in the outputs layer for finding it).
/// Throws Error(usage) when `local_rank` >= this node's nproc or `assignment.my_node_rank`
/// is not a node of the assignment.
GOSSIP_RDZV_API EnvVars torch_env(const Assignment& assignment, std::uint32_t local_rank,
                                  const std::optional<std::string>& ifname = std::nullopt);

/// The node-level variables: torch_env without the per-process RANK, LOCAL_RANK and
/// ROLE_RANK; except that with nproc 1 it equals torch_env(assignment, 0, ifname), since the
/// only process's ranks are then known. Throws Error(usage) for a bad `my_node_rank`.
GOSSIP_RDZV_API EnvVars node_env(const Assignment& assignment,
                                 const std::optional<std::string>& ifname = std::nullopt);

/// `env`: "KEY=VALUE" lines (systemd EnvironmentFile, docker --env-file, `set -a; . file`);
/// `export_`: "export KEY=VALUE" lines, for `source file`.
enum class EnvFormat { env, export_ };

/// One line per variable. A value holding any character outside [A-Za-z0-9_./:@%+,=-] is
/// put in single quotes (a quote inside becomes '\''), which every POSIX shell reads back
/// unchanged. Throws Error(internal) for a name that is not a shell identifier.
GOSSIP_RDZV_API std::string format_env(const EnvVars& vars, EnvFormat format);

/// Writes env files and returns their paths, in local-rank order.
///  - `path_template` containing "{local_rank}": one file per local process of this node,
///    every occurrence replaced by the local rank, each holding torch_env(.., local_rank, ..);
///  - otherwise one file holding node_env(..).
/// Parent directories are created. Each file is replaced atomically (temporary file in the
/// same directory, fsync, rename), so a reader sees the old file or the new one, never half.
/// Throws Error(io_error) naming the path, the OS error and the fix; Error(usage) as
/// torch_env / node_env, or for an empty template.
GOSSIP_RDZV_API std::vector<std::string> write_env_files(
    const std::string& path_template, const Assignment& assignment, EnvFormat format,
    const std::optional<std::string>& ifname = std::nullopt);

/// The files write_env_files() writes for a node of `nproc` local processes: one per local
/// rank (in order) when `path_template` contains "{local_rank}", else the template itself.
GOSSIP_RDZV_API std::vector<std::string> env_file_paths(const std::string& path_template,
                                                        std::uint32_t nproc);

}  // namespace gossip_rdzv
