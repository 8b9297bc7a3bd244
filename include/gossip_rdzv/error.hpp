// Errors a gossip-rdzv user can meet, with the exit codes the CLI maps them to.
// docs/troubleshooting.md lists every code, its messages, cause and fix.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace gossip_rdzv {

/// Why a rendezvous failed. The numeric value is the CLI's exit code.
enum class ErrorCode : int {
  ok = 0,
  worker_failed = 1,     ///< (CLI only) a worker exited non-zero; its status is returned instead
  usage = 2,             ///< bad command line or config value
  listen_failed = 3,     ///< could not bind the listen (gossip) port: in use, or bad address
  seed_unreachable = 4,  ///< no seed answered before the join timeout
  join_timeout = 5,      ///< joined, but the view did not complete before the join timeout
  run_id_mismatch = 6,   ///< a seed or peer belongs to another --run-id
  version_mismatch = 7,  ///< a seed or peer speaks another protocol version
  rank_conflict = 8,     ///< two nodes asked for the same --node-rank, or a hint is out of range
  not_admitted = 9,      ///< the round closed (MAX reached) without this node
  io_error = 10,         ///< writing an env or membership file failed
  seed_unresolved = 11,  ///< the seed's host name does not resolve
  internal = 70,         ///< a bug: please report it
};

/// Stable short name of a code ("join_timeout"), used in logs and JSON.
std::string_view to_string(ErrorCode code);

/// The exception the C++ API throws for setup and rendezvous failures. `what()` names the
/// cause and the fix in one or two sentences a user can act on.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace gossip_rdzv
