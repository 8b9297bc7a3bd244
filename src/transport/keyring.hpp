// Job keys (docs/security.md): a keyring as memberlist's, several 32-byte keys of which the
// first, the primary, seals what this node sends and every one is tried on what arrives, so
// that a running job can rotate its key without downtime (install the new key everywhere,
// make it primary, remove the old one).
//
// A sealed message is libsodium's XChaCha20-Poly1305 (IETF) AEAD. Its 192-bit nonce is 16
// random bytes drawn when the keyring is made followed by the keyring's 64-bit count of
// sealed messages: unique for every message under a key (keyrings draw their own random
// part), without a system call per message (libsodium's randombytes_buf is one, and under
// gVisor that cost a store operation a fifth of its time). Its header travels in clear and
// is authenticated:
//
//   "GRDK" | version (1 byte, 1) | key id (8 bytes) | counter (8 bytes) | nonce (24 bytes) |
//   ciphertext + tag (16 bytes)
//
// The key id is the first 8 bytes of BLAKE2b-128 of the key: it tells a receiver which key
// to try and lets a person compare keys (`keygen`, logs) without showing them.
//
// A sealed message is bound to one connection, one direction and one place in it
// (docs/protocol.md, "Keys"): the authenticated data also holds the receiver's random
// challenge for that connection (which the receiver sent when the connection opened), the
// sender's side of it (the one that dialled, or the one that listened) and the sender's
// counter, which must grow from message to message. Replayed on another connection, reflected
// back to its sender, or sent again on the same connection, a message does not open.
//
// A key file is text: one base64 key (32 bytes) per line, the primary first; empty lines and
// lines starting with '#' are ignored. `gossip-rdzv keygen` writes one with mode 0600.
//
//   auto ring = Keyring::load_file("/etc/gossip-rdzv/job.key");   // throws Error(usage)
//   Bytes sealed = ring->seal(plain);
//   Opened opened = ring->open(sealed);   // opened.status == OpenStatus::ok: opened.plain
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/zmtp.hpp"

namespace gossip_rdzv::transport {

constexpr std::size_t kKeyBytes = 32;
using KeyId = std::array<std::uint8_t, 8>;
/// A connection's random challenge, one per side.
using Challenge = std::array<std::uint8_t, 16>;
/// The side of a connection that sealed a message.
enum class Side : std::uint8_t { dialler = 1, listener = 2 };

/// A new random challenge.
Challenge new_challenge();
/// The first message each side of a connection sends when it holds a key, in clear:
/// "GRDC" | version (1 byte, 1) | challenge (16 bytes).
Bytes encode_challenge(const Challenge& challenge);
/// Whether `bytes` begin with the challenge's magic "GRDC".
bool looks_like_challenge(const Bytes& bytes);
/// nullopt unless `bytes` are exactly a challenge message.
std::optional<Challenge> decode_challenge(const Bytes& bytes);

/// The key id as 16 lowercase hex digits (logs, `keygen`, refusal messages).
std::string key_id_text(const KeyId& id);

/// Whether `bytes` begin as a sealed message does (the magic "GRDK"), whatever the key.
bool looks_sealed(const Bytes& bytes);

/// What open() made of a message.
enum class OpenStatus {
  ok,           ///< authenticated with one of our keys: `plain` holds it
  not_sealed,   ///< no sealed-message header: the peer holds no key (or speaks garbage)
  unknown_key,  ///< sealed with a key id this keyring does not hold
  forged,       ///< our key id, but the tag does not verify: corrupted, forged, truncated, or
                ///< sealed for another connection (a replay from elsewhere)
  replayed,     ///< authentic, but its counter did not grow: a replay on this connection
};

struct Opened {
  OpenStatus status = OpenStatus::not_sealed;
  Bytes plain;
  KeyId key_id{};             ///< the id in the header (for unknown_key and forged)
  std::uint64_t counter = 0;  ///< the sender's counter (ok): the receiver's new minimum
};

class Keyring {
 public:
  /// A keyring of `keys` (raw 32-byte keys, the primary first). Throws Error(usage) when
  /// empty or a key is not 32 bytes.
  explicit Keyring(std::vector<std::array<std::uint8_t, kKeyBytes>> keys);

  /// Reads a key file (format above). Throws Error(usage) naming the file, the line and the
  /// fix: missing or unreadable file, a line that is not base64 of 32 bytes, no key at all.
  static std::shared_ptr<const Keyring> load_file(const std::string& path);
  /// As load_file, from the file's text; `source` names it in errors.
  static std::shared_ptr<const Keyring> parse(std::string_view text, const std::string& source);

  /// One new random key as a key file line (base64, no newline).
  static std::string generate_key_line();

  std::size_t size() const { return keys_.size(); }
  const KeyId& primary_id() const { return ids_.front(); }
  const std::vector<KeyId>& ids() const { return ids_; }

  /// `plain` sealed with the primary key (a fresh nonce each call) for the receiver
  /// whose challenge is `theirs`, as the sender's message number `counter` (> 0, growing),
  /// sealed by `from` (our side of the connection).
  Bytes seal(const std::uint8_t* plain, std::size_t size, const Challenge& theirs,
             std::uint64_t counter, Side from) const;
  Bytes seal(const Bytes& plain, const Challenge& theirs, std::uint64_t counter, Side from) const {
    return seal(plain.data(), plain.size(), theirs, counter, from);
  }
  /// `bytes` authenticated and decrypted with the key its header names, as sealed for our
  /// challenge `mine` by the other side `from`, with a counter above `last_counter` (the
  /// last one opened).
  Opened open(const std::uint8_t* bytes, std::size_t size, const Challenge& mine,
              std::uint64_t last_counter, Side from) const;
  Opened open(const Bytes& bytes, const Challenge& mine, std::uint64_t last_counter,
              Side from) const {
    return open(bytes.data(), bytes.size(), mine, last_counter, from);
  }

  /// Bytes a sealed message adds to its plaintext.
  static constexpr std::size_t kOverhead = 4 + 1 + 8 + 8 + 24 + 16;

 private:
  std::vector<std::array<std::uint8_t, kKeyBytes>> keys_;
  std::vector<KeyId> ids_;
  /// The random part of each nonce, drawn at construction and again in a forked child (a
  /// child sealing with its parent's prefix and count would reuse nonces); guarded by
  /// nonce_mutex_ with the count and the fork generation it was drawn in.
  mutable std::mutex nonce_mutex_;
  mutable std::array<std::uint8_t, 16> nonce_prefix_{};
  mutable std::uint64_t sealed_count_ = 0;
  mutable std::uint64_t prefix_fork_generation_ = 0;
};

}  // namespace gossip_rdzv::transport
