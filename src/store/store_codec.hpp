// The store's wire format: requests and responses between a worker's client, its agent and
// the key's home. They share the gossip socket but carry their own magic ("GRDS"), so the
// runtime hands them to the store without the gossip codec ever seeing them. This file and
// store_codec.cpp are the only code that knows the layout; docs/store.md describes it.
//
// Decoding runs on the protocol's bounded reader (protocol/msgpack_io.hpp) with the store's
// own limits: the size, every count and every length are bounded before anything is
// allocated, and bad input is a value, never an exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "store/store_types.hpp"

namespace gossip_rdzv::store {

inline constexpr char kStoreMagic[] = "GRDS";
inline constexpr std::uint16_t kStoreVersion = 1;

/// The transport refuses larger messages (it is set to the gossip codec's limit).
inline constexpr std::size_t kMaxStoreMessageBytes = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxKeyBytes = 4096;
/// Also bounds run ids, endpoints and error details.
inline constexpr std::size_t kMaxKeysPerRequest = 65536;
/// A timeout beyond this is taken as "no timeout" by the client; on the wire it is refused.
inline constexpr std::uint64_t kMaxTimeoutMs = 100ull * 365 * 24 * 3600 * 1000;

/// Client -> agent (at_home false), agent -> home (at_home true).
struct StoreRequest {
  std::string run_id;  ///< empty from a client that does not know it: any run
  std::uint64_t request_id = 0;
  std::string reply_to;     ///< endpoint the response goes to ("host:port")
  std::uint32_t round = 0;  ///< the agent's round for home requests; 0 from clients
  bool at_home = false;     ///< the receiver is the home of every key: never forward again
  Op op = Op::get;
  std::vector<std::string> keys;
  std::vector<Bytes> values;
  std::int64_t amount = 0;
  std::uint64_t timeout_ms = 0;  ///< 0: no timeout

  bool operator==(const StoreRequest&) const = default;
};

struct StoreResponse {
  std::string run_id;
  std::uint64_t request_id = 0;
  std::string sender;  ///< who answers
  Status status = Status::ok;
  std::vector<Bytes> values;
  std::int64_t number = 0;
  std::string key;     ///< the key an error is about
  std::string detail;  ///< what went wrong
  std::string home;    ///< the home member an error is about, as people should read it

  bool operator==(const StoreResponse&) const = default;
};

using StoreMessage = std::variant<StoreRequest, StoreResponse>;

/// Whether `data` starts like a store message (a msgpack array whose first element is the
/// string "GRDS"). Cheap: the runtime asks it of every message it receives.
bool is_store_message(const std::uint8_t* data, std::size_t size);

std::vector<std::uint8_t> encode(const StoreMessage& message);

struct StoreDecodeError {
  std::string detail;
  /// Filled when the message was readable enough to answer: a request's run id, id and
  /// reply address (a request of another store version, or one whose header is readable but
  /// a later field is not, e.g. an op this program does not know).
  std::optional<StoreRequest> answerable;
};

using StoreDecodeResult = std::variant<StoreMessage, StoreDecodeError>;

/// Never throws; memory use is bounded by a small multiple of `size`.
StoreDecodeResult decode_store(const std::uint8_t* data, std::size_t size) noexcept;

/// What one member answers to Op::stats: the load it carried since it started, one value of
/// the response (a msgpack array [member, home_requests, client_requests, forwarded, keys]).
struct MemberStats {
  std::string member;  ///< its gossip endpoint
  std::uint64_t home_requests = 0;
  std::uint64_t client_requests = 0;
  std::uint64_t forwarded = 0;
  std::uint64_t keys = 0;
  bool operator==(const MemberStats&) const = default;
};
Bytes encode_member_stats(const MemberStats& stats);
/// Empty when `bytes` is not an encoded MemberStats. Never throws.
std::optional<MemberStats> decode_member_stats(const Bytes& bytes) noexcept;

}  // namespace gossip_rdzv::store
