// Every failure a gossip-rdzv user can meet: its code, its status number and its name, and
// the exceptions the C++ API throws. docs/troubleshooting.md lists every exit code, its
// messages, cause and fix; docs/store.md the store's.
//
// One number, the status, identifies a failure in every language: the C API returns it
// (gossip_rdzv_status in gossip_rdzv.h), the Python package raises it as `error.status`, and
// the C++ exceptions carry it (Failure::status()). Statuses 0-70 are ErrorCode values and the
// CLI's exit codes; store failures are 101-106. status_name() is the one table of their names.
//
//   try {
//     node.wait();
//     store.get("ready/0");
//   } catch (const gossip_rdzv::Failure& failure) {   // Error or StoreError
//     std::cerr << failure.status_name() << ": " << failure.what() << "\n";
//     return failure.status();
//   }
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include "gossip_rdzv/export.h"

namespace gossip_rdzv {

/// Why a rendezvous failed. The numeric value is the CLI's exit code and the status.
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
  job_over = 12,         ///< an elastic job of this run id ended: it finished or failed
  auth_failed = 13,      ///< the seeds hold another job key than this node, or it has none
  internal = 70,         ///< a bug: please report it
};

/// Why a store operation failed (StoreError, include/gossip_rdzv/store.hpp).
enum class StoreErrorCode : int {
  timeout = 1,      ///< a key was not set within the timeout (key() and home() name it)
  unavailable = 2,  ///< the agent or the key's home did not answer (dead or unreachable)
  bad_request = 3,  ///< e.g. add() on a value that is not a decimal integer
  not_ready = 4,    ///< the agent had no agreed view within the timeout
  refused = 5,      ///< the agent serves another run id, or speaks another store version
  too_large = 6,    ///< a value or an answer over the 4 MiB message limit
  usage = 7,        ///< bad argument or environment (e.g. GOSSIP_RDZV_STORE unset)
};

/// The status of a store failure: 100 + its code ("store_timeout" is 101), except usage,
/// which is ErrorCode::usage's (2): a bad argument is one failure whichever call it is in.
constexpr int store_status(StoreErrorCode code) {
  return code == StoreErrorCode::usage ? static_cast<int>(ErrorCode::usage)
                                       : 100 + static_cast<int>(code);
}

/// Stable short name of a status: "join_timeout", "store_timeout", ...; "unknown" for a
/// number that names none. Logs, JSON, gossip_rdzv_status_name() and Python read this table.
GOSSIP_RDZV_API std::string_view status_name(int status);

/// Stable short name of a code ("join_timeout"), used in logs and JSON: status_name(code).
GOSSIP_RDZV_API std::string_view to_string(ErrorCode code);

/// The base of every exception the C++ API throws: Error (setup and rendezvous) and
/// StoreError (store operations). `what()` names the cause and the fix in one or two
/// sentences a user can act on; status() is the number C and Python see for it.
class GOSSIP_RDZV_API Failure : public std::runtime_error {
 public:
  int status() const { return status_; }
  std::string_view status_name() const { return gossip_rdzv::status_name(status_); }

 protected:
  Failure(int status, const std::string& message) : std::runtime_error(message), status_(status) {}

 private:
  int status_;
};

/// The exception the C++ API throws for setup and rendezvous failures.
class GOSSIP_RDZV_API Error : public Failure {
 public:
  Error(ErrorCode code, const std::string& message) : Failure(static_cast<int>(code), message) {}
  ErrorCode code() const { return static_cast<ErrorCode>(status()); }
};

}  // namespace gossip_rdzv
