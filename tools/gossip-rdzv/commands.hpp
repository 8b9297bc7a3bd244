// The commands, run from validated options. Each returns the process exit code or throws
// gossip_rdzv::Error, which main() turns into a message and that error's code.
#pragma once

#include "cli_options.hpp"

namespace gossip_rdzv::cli {

/// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread, so that threads started later
/// (the node's) inherit the mask and the commands receive them with sigtimedwait. Call
/// first thing in main().
void block_supervised_signals();

int run_join(const CliOptions& options);
int run_seed(const CliOptions& options);
int run_members(const CliOptions& options);
int run_doctor(const CliOptions& options);
/// keygen and keys (keys_command.cpp): the job's key file (docs/security.md).
int run_keygen(const CliOptions& options);
int run_keys(const CliOptions& options);

}  // namespace gossip_rdzv::cli
