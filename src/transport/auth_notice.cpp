#include "transport/auth_notice.hpp"

#include <cstring>

namespace gossip_rdzv::transport {
namespace {

constexpr std::uint8_t kMagic[4] = {'G', 'R', 'D', 'N'};
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kNoticeBytes = 4 + 1 + 1 + 8;

}  // namespace

bool looks_like_notice(const Bytes& bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

Bytes encode_notice(const AuthNotice& notice) {
  Bytes out(kNoticeBytes, 0);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[4] = kVersion;
  out[5] = static_cast<std::uint8_t>(notice.reason);
  if (notice.refuser_key) std::memcpy(out.data() + 6, notice.refuser_key->data(), 8);
  return out;
}

std::optional<AuthNotice> decode_notice(const Bytes& bytes) {
  if (bytes.size() != kNoticeBytes || !looks_like_notice(bytes) || bytes[4] != kVersion) {
    return std::nullopt;
  }
  const std::uint8_t reason = bytes[5];
  if (reason < static_cast<std::uint8_t>(NoticeReason::key_required) ||
      reason > static_cast<std::uint8_t>(NoticeReason::no_key_here)) {
    return std::nullopt;
  }
  AuthNotice notice;
  notice.reason = static_cast<NoticeReason>(reason);
  KeyId id{};
  std::memcpy(id.data(), bytes.data() + 6, id.size());
  if (id != KeyId{}) notice.refuser_key = id;
  return notice;
}

}  // namespace gossip_rdzv::transport
