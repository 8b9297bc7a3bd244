// The bounded reader and writer both codecs use: every limit of a Limits table is enforced,
// and bad input (too deep, too long, cut short, of the wrong type) becomes a Refusal naming
// what is wrong, never a crash or a stray exception.
#include "protocol/msgpack_io.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace gossip_rdzv::msgpack_io {
namespace {

const Limits kSmall{.message_bytes = 256,
                    .depth = 3,
                    .array_length = 8,
                    .map_entries = 0,
                    .str_bytes = 16,
                    .bin_bytes = 32,
                    .ext_bytes = 0};

Bytes written(const std::function<void(Writer&)>& write) {
  Writer out;
  write(out);
  return out.take();
}

// What unpack_whole() refuses `bytes` with; fails the test when it accepts them.
Refusal refusal(const Bytes& bytes, const Limits& limits = kSmall) {
  try {
    (void)unpack_whole(bytes.data(), bytes.size(), limits);
  } catch (...) {
    return current_refusal();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

// Runs `read` over the array in `bytes`; returns the refusal, or an empty detail.
Refusal read_refusal(const Bytes& bytes, const std::function<void(ArrayReader&)>& read) {
  try {
    const msgpack::object_handle handle = unpack_whole(bytes.data(), bytes.size(), kSmall);
    const Path root("msg");
    ArrayReader fields(handle.get(), root);
    read(fields);
  } catch (...) {
    return current_refusal();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Bytes sample() {
  return written([](Writer& w) {
    w.array(7);
    w.str("name");
    w.u64(1ULL << 40);
    w.i64(-5);
    w.boolean(true);
    w.bin(Bytes{1, 2, 3});
    w.strs({"a", "bc"});
    w.u64s({0, 300});
  });
}

TEST(MsgpackIo, WrittenValuesReadBack) {
  const Bytes bytes = sample();
  const auto refused = read_refusal(bytes, [](ArrayReader& f) {
    f.expect_size(7);
    EXPECT_EQ(f.str("name"), "name");
    EXPECT_EQ(f.u64("big"), 1ULL << 40);
    EXPECT_EQ(f.i64("negative"), -5);
    EXPECT_TRUE(f.boolean("flag"));
    EXPECT_EQ(f.bin("bytes"), (Bytes{1, 2, 3}));
    EXPECT_EQ(f.strs("texts"), (std::vector<std::string>{"a", "bc"}));
    EXPECT_EQ(f.u64s("numbers"), (std::vector<std::uint64_t>{0, 300}));
  });
  EXPECT_EQ(refused.detail, "");
}

TEST(MsgpackIo, WriterUsesTheShortestForms) {
  EXPECT_EQ(written([](Writer& w) { w.u64(5); }), Bytes{0x05});
  EXPECT_EQ(written([](Writer& w) { w.u64(300); }), (Bytes{0xcd, 0x01, 0x2c}));
  EXPECT_EQ(written([](Writer& w) { w.i64(-1); }), Bytes{0xff});
  EXPECT_EQ(written([](Writer& w) { w.i64(7); }), Bytes{0x07});
  EXPECT_EQ(written([](Writer& w) { w.boolean(false); }), Bytes{0xc2});
  EXPECT_EQ(written([](Writer& w) { w.str("ab"); }), (Bytes{0xa2, 'a', 'b'}));
  EXPECT_EQ(written([](Writer& w) { w.bin({9}); }), (Bytes{0xc4, 0x01, 0x09}));
  EXPECT_EQ(written([](Writer& w) {
              w.bins({{}, {7}});
            }),
            (Bytes{0x92, 0xc4, 0x00, 0xc4, 0x01, 0x07}));
  EXPECT_EQ(written([](Writer& w) { w.array(20); }), (Bytes{0xdc, 0x00, 0x14}));
}

TEST(MsgpackIo, TooDeepIsRefused) {
  const Bytes deep{0x91, 0x91, 0x91, 0x91, 0x01};  // [[[[1]]]]: four levels, the limit is 3
  const Refusal r = refusal(deep);
  EXPECT_EQ(r.fault, Fault::malformed);
  EXPECT_TRUE(contains(r.detail, "deeper than 3 levels")) << r.detail;
  const Bytes at_limit{0x91, 0x91, 0x91, 0x01};
  EXPECT_NO_THROW(unpack_whole(at_limit.data(), at_limit.size(), kSmall));
}

TEST(MsgpackIo, TooLongIsRefusedNamingTheLimit) {
  const Refusal message = refusal(Bytes(257, 0xc0));
  EXPECT_EQ(message.fault, Fault::too_large);
  EXPECT_TRUE(contains(message.detail, "257 bytes, the limit is 256")) << message.detail;

  const Refusal array = refusal(written([](Writer& w) { w.u64s(std::vector<std::uint64_t>(9)); }));
  EXPECT_EQ(array.fault, Fault::too_large);
  EXPECT_TRUE(contains(array.detail, "more than 8 elements")) << array.detail;

  const Refusal str = refusal(written([](Writer& w) { w.str(std::string(17, 's')); }));
  EXPECT_EQ(str.fault, Fault::too_large);
  EXPECT_TRUE(contains(str.detail, "longer than 16 bytes")) << str.detail;

  const Refusal bin = refusal(written([](Writer& w) { w.bin(Bytes(33)); }));
  EXPECT_EQ(bin.fault, Fault::too_large);
  EXPECT_TRUE(contains(bin.detail, "longer than 32 bytes")) << bin.detail;

  const Refusal map = refusal(Bytes{0x81, 0x01, 0x02});  // {1: 2}; maps are not allowed
  EXPECT_EQ(map.fault, Fault::too_large);
}

TEST(MsgpackIo, HugeDeclaredCountsAreRefusedBeforeAllocating) {
  // An array32 header claiming 2^32-1 elements: refused at the count, before its table.
  EXPECT_EQ(refusal(Bytes{0xdd, 0xff, 0xff, 0xff, 0xff}).fault, Fault::too_large);
  // A str32 / bin32 claiming 4 GiB: msgpack waits for bytes that never come, allocating none.
  EXPECT_EQ(refusal(Bytes{0xdb, 0xff, 0xff, 0xff, 0xff}).fault, Fault::truncated);
  EXPECT_EQ(refusal(Bytes{0xc6, 0xff, 0xff, 0xff, 0xff}).fault, Fault::truncated);
}

TEST(MsgpackIo, ValuesAreCountedWithoutUnpacking) {
  const Bytes bytes = sample();  // the array, 5 scalars, 2 lists of 2
  EXPECT_EQ(count_values(bytes.data(), bytes.size(), 0, 1000, 3).values, 12u);
  EXPECT_FALSE(count_values(bytes.data(), bytes.size(), 0, 1000, 3).too_deep);
  EXPECT_EQ(count_values(bytes.data(), bytes.size(), 0, 5, 3).values, 6u);  // stops at budget+1
  EXPECT_TRUE(count_values(bytes.data(), bytes.size(), 0, 1000, 1).too_deep);
  const Bytes map{0x82, 0x01, 0xc0, 0xa1, 'k', 0xd4, 0x01, 0x02};  // {1: nil, "k": fixext1}
  EXPECT_EQ(count_values(map.data(), map.size(), 0, 1000, 3).values, 5u);
  // A count on the wire costs nothing: 4G elements claimed, none present.
  const Bytes claimed{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0};
  EXPECT_EQ(count_values(claimed.data(), claimed.size(), 0, 1000, 3).values, 2u);
}

// msgpack spends 24 bytes on every value, however short: lists of one-byte values would take
// 24 times their size. More than one value per bytes_per_value bytes is refused unpacked.
TEST(MsgpackIo, ManyTinyValuesAreRefusedBeforeUnpacking) {
  Limits wide = kSmall;
  wide.message_bytes = 1 << 20;
  wide.array_length = 1 << 16;
  const Bytes nils = written([](Writer& w) {
    w.array(4);
    for (int i = 0; i < 4; ++i) {
      w.array(60000);
      for (int j = 0; j < 60000; ++j) w.boolean(false);
    }
  });
  const Refusal r = refusal(nils, wide);
  EXPECT_EQ(r.fault, Fault::too_large);
  EXPECT_TRUE(contains(r.detail, "values in")) << r.detail;
  // Two-byte values are within the bound.
  const Bytes pairs = written([](Writer& w) {
    w.array(60000);
    for (int j = 0; j < 60000; ++j) w.u64(200);  // 0xcc 0xc8
  });
  EXPECT_NO_THROW(unpack_whole(pairs.data(), pairs.size(), wide));
  EXPECT_EQ(max_values(pairs.size(), wide), kSpareValues + pairs.size() / 2);
}

TEST(MsgpackIo, EveryTruncationIsRefused) {
  const Bytes bytes = sample();
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    const Refusal r = refusal(Bytes(bytes.begin(), bytes.begin() + size));
    EXPECT_EQ(r.fault, Fault::truncated) << size << ": " << r.detail;
  }
}

TEST(MsgpackIo, TrailingBytesAreRefused) {
  Bytes bytes = sample();
  bytes.push_back(0xc0);
  const Refusal r = refusal(bytes);
  EXPECT_EQ(r.fault, Fault::malformed);
  EXPECT_TRUE(contains(r.detail, "1 trailing bytes")) << r.detail;
}

TEST(MsgpackIo, WrongTypeIsRefusedNamingTheField) {
  const Bytes bytes = sample();
  Refusal r = read_refusal(bytes, [](ArrayReader& f) { (void)f.u64("id"); });
  EXPECT_EQ(r.fault, Fault::malformed);
  EXPECT_EQ(r.detail, "msg.id: expected unsigned integer, got string");

  r = read_refusal(bytes, [](ArrayReader& f) {
    (void)f.str("name");
    (void)f.u64("big");
    (void)f.u64("negative");
  });
  EXPECT_EQ(r.detail, "msg.negative: expected unsigned integer, got negative integer");

  r = read_refusal(bytes, [](ArrayReader& f) {
    for (int i = 0; i < 5; ++i) (void)f.next("skip");
    (void)f.u64s("texts");
  });
  EXPECT_EQ(r.detail, "msg.texts[0]: expected unsigned integer, got string");

  const Bytes scalar{0x05};
  r = read_refusal(scalar, [](ArrayReader&) {});
  EXPECT_EQ(r.detail, "msg: expected array, got unsigned integer");
}

TEST(MsgpackIo, RangesCountsAndMissingFieldsAreRefused) {
  const Bytes bytes = sample();
  Refusal r = read_refusal(bytes, [](ArrayReader& f) {
    (void)f.next("name");
    (void)f.u64("big", 1000);
  });
  EXPECT_EQ(r.detail, "msg.big: value 1099511627776 is out of range 0-1000");

  r = read_refusal(bytes, [](ArrayReader& f) {
    (void)f.next("name");
    (void)f.next("big");
    (void)f.i64("negative", 0, 10);
  });
  EXPECT_EQ(r.detail, "msg.negative: value is out of range 0 to 10");

  r = read_refusal(bytes, [](ArrayReader& f) { f.expect_size(3); });
  EXPECT_EQ(r.detail, "msg: expected 3 fields, got 7");
  r = read_refusal(bytes, [](ArrayReader& f) { EXPECT_EQ(f.expect_size(2, 9), 7u); });
  EXPECT_EQ(r.detail, "");
  r = read_refusal(bytes, [](ArrayReader& f) { (void)f.expect_size(8, 9); });
  EXPECT_EQ(r.detail, "msg: expected 8 to 9 fields, got 7");

  r = read_refusal(bytes, [](ArrayReader& f) {
    for (int i = 0; i < 7; ++i) (void)f.next("field");
    (void)f.str("extra");
  });
  EXPECT_EQ(r.detail, "msg.extra: missing");
}

TEST(MsgpackIo, ArrayHeadersAndMagic) {
  EXPECT_EQ(read_array_header(nullptr, 0).status, ArrayHeader::Status::truncated);
  const Bytes fix{0x93};
  EXPECT_EQ(read_array_header(fix.data(), 1).count, 3u);
  EXPECT_EQ(read_array_header(fix.data(), 1).bytes, 1u);
  const Bytes a16{0xdc, 0x01, 0x00};
  EXPECT_EQ(read_array_header(a16.data(), 3).count, 256u);
  EXPECT_EQ(read_array_header(a16.data(), 2).status, ArrayHeader::Status::truncated);
  const Bytes a32{0xdd, 0x00, 0x01, 0x00, 0x00};
  EXPECT_EQ(read_array_header(a32.data(), 5).count, 65536u);
  EXPECT_EQ(read_array_header(a32.data(), 5).bytes, 5u);
  const Bytes str{0xa1, 'x'};
  EXPECT_EQ(read_array_header(str.data(), 2).status, ArrayHeader::Status::not_array);

  const Bytes message = written([](Writer& w) {
    w.array(2);
    w.str("GRDS");
    w.u64(1);
  });
  EXPECT_TRUE(starts_with_magic(message.data(), message.size(), "GRDS"));
  EXPECT_FALSE(starts_with_magic(message.data(), message.size(), "GRDZ"));
  for (std::size_t size = 0; size < 6; ++size)
    EXPECT_FALSE(starts_with_magic(message.data(), size, "GRDS")) << size;
}

TEST(MsgpackIo, RandomBytesNeverCrash) {
  std::mt19937 random(7);
  const Bytes original = sample();
  for (int round = 0; round < 20000; ++round) {
    Bytes bytes = original;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i)
      bytes[random() % bytes.size()] = static_cast<std::uint8_t>(random());
    (void)read_refusal(bytes, [](ArrayReader& f) {
      (void)f.str("name");
      (void)f.u64("big");
      (void)f.i64("negative");
      (void)f.boolean("flag");
      (void)f.bin("bytes");
      (void)f.strs("texts");
      (void)f.u64s("numbers");
    });
  }
}

TEST(MsgpackIo, AnyExceptionBecomesARefusal) {
  const auto of = [](const std::function<void()>& body) {
    try {
      body();
    } catch (...) {
      return current_refusal();
    }
    return Refusal{};
  };
  EXPECT_EQ(of([] { throw std::bad_alloc(); }).fault, Fault::too_large);
  EXPECT_EQ(of([] { throw std::runtime_error("boom"); }).detail, "boom");
  EXPECT_EQ(of([] { throw 42; }).fault, Fault::malformed);
  EXPECT_EQ(of([] { throw Refusal{Fault::bad_magic, "x"}; }).fault, Fault::bad_magic);
}

TEST(MsgpackIo, FaultNamesAreStable) {
  EXPECT_EQ(to_string(Fault::truncated), "truncated");
  EXPECT_EQ(to_string(Fault::bad_magic), "bad_magic");
  EXPECT_EQ(to_string(Fault::malformed), "malformed");
  EXPECT_EQ(to_string(Fault::too_large), "too_large");
  EXPECT_EQ(to_string(Fault::version_mismatch), "version_mismatch");
}

}  // namespace
}  // namespace gossip_rdzv::msgpack_io
