// A key-value store over the agreed view, with no master: each key lives on one member (its
// home, chosen by rendezvous hashing of the key over the view) and every operation reaches it
// in one hop through the caller's own agent. Semantics are those of torch.distributed.Store,
// so gloo and torch process groups form through it without a TCPStore (docs/store.md).
//
//   // in a worker started by `gossip-rdzv join ... -- CMD` (GOSSIP_RDZV_STORE is set):
//   gossip_rdzv::Store store = gossip_rdzv::Store::from_env();
//   store.set("ready/3", "1");
//   auto value = store.get("ready/0");            // blocks until set, or the timeout
//   std::int64_t n = store.add("arrived", 1);     // atomic counter
//
//   // in a launcher that runs a Node itself, after node.wait():
//   gossip_rdzv::Store store(node);
//
// Every member keeps serving its keys while its agent runs; a dead member's keys are lost
// (no replication), and operations on them fail with StoreErrorCode::unavailable.
//
// In an elastic job (Config::elastic) the store serves one round at a time: a key belongs to
// the round in which it was set, and an agent that commits the next round drops the keys of
// the last one and homes keys over the new round's members. A worker of the new round never
// reads an old round's value; a request of the old round still open then fails with
// StoreErrorCode::refused ("round 0 is over ..."). docs/store.md, "Rounds".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gossip_rdzv/error.hpp"
#include "gossip_rdzv/export.h"

namespace gossip_rdzv {

class Node;

/// The exception every Store call throws. what() names the operation, the key, the home
/// member and the fix, e.g. "get('rank_3') timed out after 30 s: the key was not set in time
/// (home 10.0.0.2:29400 (node rank 1, node1))".
/// Its status() is store_status(code()) (include/gossip_rdzv/error.hpp).
class GOSSIP_RDZV_API StoreError : public Failure {
 public:
  StoreError(StoreErrorCode code, const std::string& message, std::string key = {},
             std::string home = {})
      : Failure(store_status(code), message),
        code_(code),
        key_(std::move(key)),
        home_(std::move(home)) {}
  StoreErrorCode code() const { return code_; }
  const std::string& key() const { return key_; }    ///< the key it is about, if any
  const std::string& home() const { return home_; }  ///< the member it is about, if any

 private:
  StoreErrorCode code_;
  std::string key_;
  std::string home_;
};

struct StoreOptions {
  /// The agent to talk to: "host:port" of a running node's gossip socket (the variable
  /// GOSSIP_RDZV_STORE holds it for workers).
  std::string agent;
  /// Checked by the agent when not empty; a store of another run refuses the requests.
  std::string run_id;
  /// Default timeout of every operation (torch's default is 300 s). 0: wait for ever.
  std::chrono::milliseconds timeout{300000};
  /// The job's key file (docs/security.md), the one the agent was started with
  /// (`--key-file`; GOSSIP_RDZV_KEY_FILE for workers): requests and answers are then
  /// authenticated and encrypted, as the agents' own messages are. Read when the Store is
  /// made, and again before a request when it changed (key rotation). Empty: no key; an
  /// agent that holds one refuses the requests.
  std::string key_file;
};

/// The load one member carried since its agent started (Store::member_stats()).
struct StoreMemberStats {
  std::string member;                 ///< its gossip endpoint "host:port"
  std::uint64_t home_requests = 0;    ///< requests it served as the home of their keys
  std::uint64_t client_requests = 0;  ///< requests its own clients (workers) sent it
  std::uint64_t forwarded = 0;        ///< parts of those it sent on to other homes
  std::uint64_t keys = 0;             ///< keys it holds now
};

/// A client of the store. Thread-safe: calls from several threads are serialised (one
/// request in flight per Store, as torch's TCPStore client does).
class GOSSIP_RDZV_API Store {
 public:
  using Bytes = std::vector<std::uint8_t>;

  /// Connects lazily: nothing is sent before the first operation. Throws
  /// StoreError(usage) for an agent that is not HOST:PORT, or a key file that cannot be
  /// read or holds no valid key (the message names the file and the line).
  explicit Store(StoreOptions options);
  /// The store of the node running in this process; throws StoreError(usage) when the node
  /// has not committed an assignment yet (call node.wait() first).
  explicit Store(const Node& node, std::chrono::milliseconds timeout = std::chrono::seconds(300));
  /// From the environment a worker of `gossip-rdzv join` gets: GOSSIP_RDZV_STORE (the agent),
  /// TORCHELASTIC_RUN_ID (the run id, optional), GOSSIP_RDZV_STORE_TIMEOUT (seconds,
  /// optional), GOSSIP_RDZV_KEY_FILE (the key file, optional). Throws StoreError(usage)
  /// naming the missing variable, or the key file that cannot be read.
  static Store from_env();

  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  /// Sets (overwrites) `key`. Throws StoreError(unavailable) when the home does not answer.
  void set(const std::string& key, const Bytes& value);
  void set(const std::string& key, std::string_view value);

  /// The value of `key`, waiting until it is set. Throws StoreError(timeout) naming the key
  /// and its home after `timeout` (default: timeout()). Whatever the timeout (0: for ever),
  /// throws StoreError(unavailable) once the home is declared dead by the membership, or
  /// once the agent stops answering the client's checks (every 5 s while a request waits).
  Bytes get(const std::string& key);
  Bytes get(const std::string& key, std::chrono::milliseconds timeout);
  /// The values of all `keys`, in order, waiting until every one is set (one request per
  /// home). Throws as get().
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys);

  /// Waits until every key is set. Throws StoreError(timeout) naming a missing key.
  void wait(const std::vector<std::string>& keys);
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);

  /// Adds `amount` to the counter at `key` (missing: 0) and returns the new value; the value
  /// is stored as a decimal string, as torch does. Throws StoreError(bad_request) when the
  /// key holds something else.
  std::int64_t add(const std::string& key, std::int64_t amount);

  /// Whether every key is set, without waiting.
  bool check(const std::vector<std::string>& keys);

  /// torch's compare_set: when `key` holds `expected` (or is missing and `expected` is
  /// empty) it becomes `desired`. Returns the value stored afterwards; for a missing key and
  /// a non-empty `expected`, returns `expected` and sets nothing.
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired);

  /// Deletes `key`; returns whether it existed.
  bool delete_key(const std::string& key);

  /// Keys held by all members together (one request to every member).
  std::int64_t num_keys();

  /// Every member's load since its agent started, sorted by member (one request to every
  /// member; these requests are not counted). home_requests is what shows how the load
  /// spreads: a TCPStore's master would serve all of it. Throws StoreError(unavailable)
  /// naming a member that does not answer.
  std::vector<StoreMemberStats> member_stats();

  std::chrono::milliseconds timeout() const;
  void set_timeout(std::chrono::milliseconds timeout);
  /// The agent this client talks to.
  const std::string& agent() const;
  /// Uses the key file at `path` from the next request on (StoreOptions::key_file); "" for
  /// none. Throws StoreError(usage) as the constructor does, keeping the previous key.
  void set_key_file(const std::string& path);
  /// The key file in use, "" for none.
  std::string key_file() const;

  struct GOSSIP_RDZV_LOCAL Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip_rdzv
