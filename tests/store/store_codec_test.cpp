#include "store/store_codec.hpp"

#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace gossip_rdzv::store {
namespace {

Bytes b(const std::string& text) {
  return Bytes(text.begin(), text.end());
}

StoreRequest sample_request() {
  StoreRequest r;
  r.run_id = "job42";
  r.request_id = 77;
  r.reply_to = "127.0.0.1:40000";
  r.round = 3;
  r.at_home = true;
  r.op = Op::set;
  r.keys = {"a", "b"};
  r.values = {b("1"), Bytes{0, 255, 0}};
  r.amount = -5;
  r.timeout_ms = 30000;
  return r;
}

StoreResponse sample_response() {
  StoreResponse r;
  r.run_id = "job42";
  r.request_id = 78;
  r.sender = "10.0.0.1:29400";
  r.status = Status::timeout;
  r.values = {b("x"), Bytes{}};
  r.number = -9;
  r.key = "rank_3";
  r.detail = "the key was not set in time";
  r.home = "10.0.0.2:29400 (node rank 1, b)";
  return r;
}

StoreMessage round_trip(const StoreMessage& message) {
  const auto bytes = encode(message);
  EXPECT_TRUE(is_store_message(bytes.data(), bytes.size()));
  auto result = decode_store(bytes.data(), bytes.size());
  if (auto* error = std::get_if<StoreDecodeError>(&result)) {
    ADD_FAILURE() << error->detail;
    return {};
  }
  return std::get<StoreMessage>(result);
}

TEST(StoreCodec, RequestRoundTrips) {
  const StoreMessage message = sample_request();
  EXPECT_EQ(round_trip(message), message);
}

TEST(StoreCodec, ResponseRoundTrips) {
  const StoreMessage message = sample_response();
  EXPECT_EQ(round_trip(message), message);
}

TEST(StoreCodec, GossipMessagesAreNotStoreMessages) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_array(7);
  packer.pack(std::string("GRDZ"));
  const auto* data = reinterpret_cast<const std::uint8_t*>(buffer.data());
  EXPECT_FALSE(is_store_message(data, buffer.size()));
  EXPECT_FALSE(is_store_message(nullptr, 0));
}

TEST(StoreCodec, EveryTruncationIsRefusedWithoutThrowing) {
  const auto bytes = encode(StoreMessage(sample_request()));
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    auto result = decode_store(bytes.data(), size);
    EXPECT_TRUE(std::holds_alternative<StoreDecodeError>(result)) << size;
  }
}

// Corrupted bytes give a clean error that says why, or a message that is well formed: it
// encodes and decodes back to itself.
TEST(StoreCodec, RandomCorruptionIsRefusedOrDecodesToAStableMessage) {
  const auto original = encode(StoreMessage(sample_request()));
  std::mt19937 random(42);
  int refused = 0;
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    auto bytes = original;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i)
      bytes[random() % bytes.size()] = static_cast<std::uint8_t>(random());
    const auto result = decode_store(bytes.data(), bytes.size());
    if (const auto* error = std::get_if<StoreDecodeError>(&result)) {
      ASSERT_FALSE(error->detail.empty()) << "round " << round;
      ++refused;
      continue;
    }
    const auto& message = std::get<StoreMessage>(result);
    const auto again = encode(message);
    const auto second = decode_store(again.data(), again.size());
    ASSERT_TRUE(std::holds_alternative<StoreMessage>(second)) << "round " << round;
    ASSERT_EQ(std::get<StoreMessage>(second), message) << "round " << round;
    ++accepted;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // flips inside a value's bytes leave a valid message
}

TEST(StoreCodec, HugeCountsOnTheWireAreRefusedCheaply) {
  // An array header claiming 2^32-1 keys in a few bytes: refused, not allocated.
  std::vector<std::uint8_t> bytes = encode(StoreMessage(sample_request()));
  bytes.resize(20);
  bytes.insert(bytes.end(), {0xdd, 0xff, 0xff, 0xff, 0xff});
  auto result = decode_store(bytes.data(), bytes.size());
  EXPECT_TRUE(std::holds_alternative<StoreDecodeError>(result));
}

TEST(StoreCodec, OverlongKeyIsRefused) {
  StoreRequest r = sample_request();
  r.keys = {std::string(kMaxKeyBytes + 1, 'k'), "b"};
  // The encoder cuts strings at the limit, so build the bytes by hand.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> p(buffer);
  p.pack_array(13);
  p.pack(std::string("GRDS"));
  p.pack(1);
  p.pack(std::string("job42"));
  p.pack(1);
  p.pack(1);
  p.pack(std::string("127.0.0.1:1"));
  p.pack(0);
  p.pack(false);
  p.pack(2);
  p.pack_array(1);
  p.pack(r.keys[0]);
  p.pack_array(0);
  p.pack(0);
  p.pack(0);
  auto result = decode_store(reinterpret_cast<const std::uint8_t*>(buffer.data()), buffer.size());
  ASSERT_TRUE(std::holds_alternative<StoreDecodeError>(result));
}

TEST(StoreCodec, WrongShapeIsRefused) {
  StoreRequest r = sample_request();
  r.values.pop_back();  // set with 2 keys and 1 value
  const auto bytes = encode(StoreMessage(r));
  auto result = decode_store(bytes.data(), bytes.size());
  ASSERT_TRUE(std::holds_alternative<StoreDecodeError>(result));
  EXPECT_NE(std::get<StoreDecodeError>(result).detail.find("set"), std::string::npos);
}

TEST(StoreCodec, OtherVersionIsRefusedButAnswerable) {
  auto bytes = encode(StoreMessage(sample_request()));
  // [0x9d, 0xa4 G R D S, version...]: the version is the positive fixint after the magic.
  ASSERT_EQ(bytes[6], 0x01);
  bytes[6] = 0x02;
  auto result = decode_store(bytes.data(), bytes.size());
  ASSERT_TRUE(std::holds_alternative<StoreDecodeError>(result));
  const auto& error = std::get<StoreDecodeError>(result);
  EXPECT_NE(error.detail.find("version 2"), std::string::npos) << error.detail;
  ASSERT_TRUE(error.answerable);
  EXPECT_EQ(error.answerable->reply_to, "127.0.0.1:40000");
  EXPECT_EQ(error.answerable->request_id, 77u);
}

TEST(StoreCodec, RequestWithAnUnknownOpIsAnswerable) {
  StoreRequest r = sample_request();
  r.op = Op::ping;
  r.keys.clear();
  r.values.clear();
  auto bytes = encode(StoreMessage(r));
  // The op follows at_home (0xc3, true): make it 99, an op no release has.
  const auto at = std::find(bytes.begin(), bytes.end(), 0xc3);
  ASSERT_NE(at, bytes.end());
  ASSERT_EQ(*(at + 1), static_cast<std::uint8_t>(Op::ping));
  *(at + 1) = 99;
  auto result = decode_store(bytes.data(), bytes.size());
  ASSERT_TRUE(std::holds_alternative<StoreDecodeError>(result));
  const auto& error = std::get<StoreDecodeError>(result);
  EXPECT_NE(error.detail.find("op"), std::string::npos) << error.detail;
  ASSERT_TRUE(error.answerable);
  EXPECT_EQ(error.answerable->request_id, 77u);
  EXPECT_EQ(error.answerable->reply_to, "127.0.0.1:40000");
}

TEST(StoreCodec, TrailingBytesAreRefused) {
  auto bytes = encode(StoreMessage(sample_response()));
  bytes.push_back(0xc0);
  EXPECT_TRUE(std::holds_alternative<StoreDecodeError>(decode_store(bytes.data(), bytes.size())));
}

TEST(StoreCodec, MemberStatsRoundTrip) {
  const MemberStats stats{"[::1]:29400", 12, 34, 5, 6};
  EXPECT_EQ(decode_member_stats(encode_member_stats(stats)), stats);
}

TEST(StoreCodec, MemberStatsFromGarbageIsEmpty) {
  auto bytes = encode_member_stats(MemberStats{"127.0.0.1:1", 1, 2, 3, 4});
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(decode_member_stats(Bytes(bytes.begin(), bytes.begin() + cut))) << cut;
  }
  bytes[1] = 0xc0;  // the member is nil instead of a string
  EXPECT_FALSE(decode_member_stats(bytes));
  EXPECT_FALSE(decode_member_stats(encode(StoreMessage(sample_response()))));
}

TEST(StoreCodec, StatsRequestTakesNoKeys) {
  StoreRequest r = sample_request();
  r.op = Op::stats;
  r.values.clear();
  const auto bytes = encode(StoreMessage(r));
  auto result = decode_store(bytes.data(), bytes.size());
  ASSERT_TRUE(std::holds_alternative<StoreDecodeError>(result));
  EXPECT_NE(std::get<StoreDecodeError>(result).detail.find("stats"), std::string::npos);
  r.keys.clear();
  const auto good = encode(StoreMessage(r));
  result = decode_store(good.data(), good.size());
  ASSERT_TRUE(std::holds_alternative<StoreMessage>(result));
  EXPECT_EQ(std::get<StoreRequest>(std::get<StoreMessage>(result)), r);
}

}  // namespace
}  // namespace gossip_rdzv::store
