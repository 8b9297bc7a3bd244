// The wire codec: every message of messages.hpp to and from msgpack bytes. This file and
// codec.cpp are the only code that knows the layout; docs/wire-format.md describes it. The
// bounded msgpack reading and writing underneath is msgpack_io.hpp's, shared with the store.
//
//   std::vector<std::uint8_t> bytes = encode(envelope);
//   DecodeResult r = decode(bytes.data(), bytes.size());
//   if (r.ok()) core.on_message(now, r.envelope());
//   else if (r.error().kind == DecodeError::Kind::version_mismatch)
//     core.on_version_mismatch(now, r.error().header->sender, r.error().header->version);
//   else log(describe(r.error()));
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "messages.hpp"

namespace gossip_rdzv::protocol {

/// Limits every decoder enforces; a message that breaks one is refused, never truncated.
inline constexpr std::size_t kMaxMessageBytes = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxStringBytes = 1024;
/// Records, members, views: the most elements any list of a message may hold.
inline constexpr std::size_t kMaxListLength = 65536;
/// A seen-by bitset covers at most kMaxListLength members.
inline constexpr std::size_t kMaxBitsetBytes = kMaxListLength / 8;

/// The wire code of each message; the values are frozen (append new types, never renumber).
enum class MessageType : std::uint8_t {
  join = 1,
  join_reply = 2,
  ping = 3,
  ack = 4,
  ping_req = 5,
  gossip = 6,
  query = 7,
  query_reply = 8,
  refuse = 9,
  unreachable = 10,  ///< not understood by builds before it: they log and ignore it
};

MessageType message_type(const Body& body);
/// "Join", "JoinReply", ... as in messages.hpp.
std::string_view to_string(MessageType type);

/// The first five fields of every message. Their layout never changes between protocol
/// versions, so a peer of another version can always be named and refused.
struct Header {
  std::uint16_t version = 0;
  std::string run_id;
  std::string sender;
  std::uint64_t sender_generation = 0;

  bool operator==(const Header&) const = default;
};

struct DecodeError {
  enum class Kind {
    truncated,         ///< the bytes end inside a value
    bad_magic,         ///< not a gossip-rdzv message at all
    malformed,         ///< wrong types, wrong field counts, values out of range, trailing bytes
    too_large,         ///< over kMaxMessageBytes, or a string / list / bitset over its limit
    version_mismatch,  ///< a well-formed header of another protocol version
  };
  Kind kind = Kind::malformed;
  std::string detail;  ///< what is wrong and where, e.g. "Ping.updates[3].status: value 7 ..."
  /// Filled whenever the header could be read; always filled for version_mismatch.
  std::optional<Header> header;
};

std::string_view to_string(DecodeError::Kind kind);

/// Either the decoded message or why it was refused. It is a std::variant, so std::get_if
/// and std::visit work on it too.
struct DecodeResult : std::variant<Envelope, DecodeError> {
  using std::variant<Envelope, DecodeError>::variant;

  bool ok() const { return index() == 0; }
  const Envelope& envelope() const { return std::get<Envelope>(*this); }
  Envelope& envelope() { return std::get<Envelope>(*this); }
  const DecodeError& error() const { return std::get<DecodeError>(*this); }
};

/// Serialises a message. It does not check the limits above: the core keeps what it sends
/// within them (a message that breaks one is refused by every receiver).
std::vector<std::uint8_t> encode(const Envelope& envelope);

/// Parses and validates one message. Never throws and never trusts a size or count from the
/// wire: memory use is bounded by a small multiple of `size` (itself capped at
/// kMaxMessageBytes) whatever the bytes say.
DecodeResult decode(const std::uint8_t* data, std::size_t size) noexcept;
inline DecodeResult decode(const std::vector<std::uint8_t>& bytes) noexcept {
  return decode(bytes.data(), bytes.size());
}

/// One line for logs and user messages: the kind, the detail and, when known, who sent it.
/// Strings from the wire are escaped, so a hostile peer cannot forge log lines.
std::string describe(const DecodeError& error);

}  // namespace gossip_rdzv::protocol
