// The operations of the store and their results, as plain values shared by the state
// machine (store_state), the wire (store_codec) and the agent (store_service).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gossip_rdzv::store {

/// Time since an arbitrary origin chosen by the caller, as in the protocol core.
using Time = std::chrono::microseconds;
using Bytes = std::vector<std::uint8_t>;

/// Wire codes are frozen: append, never renumber.
enum class Op : std::uint8_t {
  set = 1,          ///< keys[i] = values[i] for every i (one key for torch's set)
  get = 2,          ///< values of keys, parked until all exist or the deadline
  add = 3,          ///< one key: decimal value += amount, returns the new value
  check = 4,        ///< number = 1 when every key exists, at once
  compare_set = 5,  ///< one key, values = {expected, desired}; torch's semantics
  delete_key = 6,   ///< one key; number = 1 when it existed
  num_keys = 7,     ///< no keys; number = keys held
  wait = 8,         ///< like get without the values
  stats = 9,        ///< no keys; each member answers its MemberStats (not counted in them)
  ping = 10,        ///< no keys; the agent answers at once: a client waiting for ever checks it
};
inline constexpr std::uint8_t kMaxOp = 10;

/// Wire codes are frozen: append, never renumber.
enum class Status : std::uint8_t {
  ok = 0,
  timeout = 1,      ///< a key was not set before the request's deadline (`key` names it)
  bad_request = 2,  ///< e.g. add on a value that is not a decimal integer
  unavailable = 3,  ///< the key's home did not answer (dead, or unreachable)
  not_ready = 4,    ///< the agent has no agreed view yet and its wait ran out
  refused = 5,      ///< another run id or store version
  too_large = 6,    ///< the answer would exceed the message size limit
};
inline constexpr std::uint8_t kMaxStatus = 6;

std::string_view to_string(Op op);
std::string_view to_string(Status status);

struct Request {
  Op op = Op::get;
  std::vector<std::string> keys;
  std::vector<Bytes> values;
  std::int64_t amount = 0;       ///< add only
  std::optional<Time> deadline;  ///< absolute; none: wait for ever
};

struct Reply {
  Status status = Status::ok;
  std::vector<Bytes> values;  ///< get: one per key, in order; compare_set: the current value
  std::int64_t number = 0;    ///< add, check, delete_key, num_keys
  std::string key;            ///< the key an error is about
  std::string detail;         ///< what went wrong, for people
};

/// Why `request` is not a well-formed request (keys/values counts for its op), or empty.
std::string shape_error(const Request& request);

}  // namespace gossip_rdzv::store
