// The notice a node answers with when it drops a message for want of the job's key, so that
// both sides can say what is wrong (docs/security.md). It travels in clear and is not
// authenticated: it carries no secret and nothing a receiver acts on beyond reporting it
// (and a node that holds no key, whom it concerns, could not check it anyway).
//
//   "GRDN" | version (1 byte, 1) | reason (1 byte) | key id of the refuser's primary (8 bytes,
//   zeros when it holds no key)
#pragma once

#include <cstdint>
#include <optional>

#include "transport/keyring.hpp"

namespace gossip_rdzv::transport {

/// Why a node dropped a message.
enum class NoticeReason : std::uint8_t {
  key_required = 1,  ///< it holds a key and the message was not sealed
  unknown_key = 2,   ///< sealed with a key it does not hold
  forged = 3,        ///< sealed with a key id it holds, but the tag did not verify
  no_key_here = 4,   ///< the message was sealed and it holds no key
};

struct AuthNotice {
  NoticeReason reason = NoticeReason::key_required;
  std::optional<KeyId> refuser_key;  ///< the refuser's primary key id, if it holds keys
};

/// Whether `bytes` begin with the notice's magic "GRDN".
bool looks_like_notice(const Bytes& bytes);
Bytes encode_notice(const AuthNotice& notice);
/// nullopt unless `bytes` are exactly a notice of a version and reason this build knows.
std::optional<AuthNotice> decode_notice(const Bytes& bytes);

}  // namespace gossip_rdzv::transport
