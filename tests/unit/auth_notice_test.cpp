// AuthNotice: the clear-text answer to a message dropped for want of the key.
#include "transport/auth_notice.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv::transport {
namespace {

TEST(AuthNotice, RoundTripsEveryReasonWithAndWithoutAKeyId) {
  const KeyId id{1, 2, 3, 4, 5, 6, 7, 8};
  for (auto reason : {NoticeReason::key_required, NoticeReason::unknown_key, NoticeReason::forged,
                      NoticeReason::no_key_here}) {
    for (std::optional<KeyId> key : {std::optional<KeyId>{}, std::optional<KeyId>{id}}) {
      const Bytes bytes = encode_notice(AuthNotice{reason, key});
      EXPECT_TRUE(looks_like_notice(bytes));
      const auto decoded = decode_notice(bytes);
      ASSERT_TRUE(decoded.has_value());
      EXPECT_EQ(decoded->reason, reason);
      EXPECT_EQ(decoded->refuser_key, key);
    }
  }
}

TEST(AuthNotice, RefusesAnythingElse) {
  Bytes good = encode_notice(AuthNotice{NoticeReason::forged, std::nullopt});
  Bytes longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decode_notice(longer));
  Bytes shorter(good.begin(), good.end() - 1);
  EXPECT_FALSE(decode_notice(shorter));
  Bytes unknown_reason = good;
  unknown_reason[5] = 0;
  EXPECT_FALSE(decode_notice(unknown_reason));
  unknown_reason[5] = 5;
  EXPECT_FALSE(decode_notice(unknown_reason));
  Bytes other_version = good;
  other_version[4] = 2;
  EXPECT_FALSE(decode_notice(other_version));
  EXPECT_FALSE(decode_notice(Bytes{'G', 'R', 'D', 'V'}));
}

}  // namespace
}  // namespace gossip_rdzv::transport
