// One file for codec.cpp: every test here shares the sample and hand-built messages below.
#include "protocol/codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <type_traits>

#include <msgpack.hpp>

// Records the largest single malloc request, and the sum of all of them (at least the peak
// of what was held at once), while `g_track_malloc` is set, to show that hostile counts on
// the wire do not turn into huge allocations (msgpack's zone allocates with malloc, so
// overriding operator new would miss it). Forwarding to glibc's own malloc keeps free(),
// realloc() and friends valid for every block. Sanitizers bring their own malloc: no tracking.
namespace {
bool g_track_malloc = false;
std::size_t g_largest_malloc_bytes = 0;
std::size_t g_total_malloc_bytes = 0;
}  // namespace
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kMallocTracked = false;
#else
constexpr bool kMallocTracked = true;
extern "C" void* __libc_malloc(std::size_t size);
extern "C" void* malloc(std::size_t size) noexcept {
  if (g_track_malloc) {
    g_largest_malloc_bytes = std::max(g_largest_malloc_bytes, size);
    g_total_malloc_bytes += size;
  }
  return __libc_malloc(size);
}
#endif

namespace gossip_rdzv::protocol {
namespace {

using Kind = DecodeError::Kind;
using Bytes = std::vector<std::uint8_t>;

// ---- sample messages with every field away from its default --------------------------------

MemberRecord record(std::uint32_t i) {
  MemberRecord r;
  r.ann.endpoint = "node" + std::to_string(i) + ":29400";
  r.ann.node_id = 0xdeadbeefcafef00dULL + i;
  r.ann.generation = 1000 + i;
  r.ann.host = "10.0.0." + std::to_string(i);
  r.ann.hostname = "host-" + std::to_string(i) + ".cluster";
  r.ann.nproc = 8 + i;
  r.ann.rank_hint = (i % 2 == 0) ? static_cast<std::int32_t>(i) : -1;
  r.ann.master_port = static_cast<std::uint16_t>(29500 + i);
  r.ann.min_nodes = 2;
  r.ann.max_nodes = 70000;
  r.incarnation = 7 + i;
  r.status = static_cast<MemberStatus>(i % 3);
  if (r.status == MemberStatus::suspect) r.accuser = "node" + std::to_string(i + 1) + ":29400";
  return r;
}

std::vector<MemberRecord> records(std::uint32_t count) {
  std::vector<MemberRecord> out;
  for (std::uint32_t i = 0; i < count; ++i) out.push_back(record(i));
  return out;
}

// 10 members: two bytes per bitset, bits 0-9 meaningful.
ViewClaim view(std::uint32_t round) {
  ViewClaim v;
  v.round = round;
  v.attempt = 1ULL << 40;
  v.digest = 0xfedcba9876543210ULL;
  for (int i = 0; i < 10; ++i) v.members.push_back({"n" + std::to_string(i) + ":1", 5});
  v.proposed = {0xff, 0x03};
  v.ready = {0x0f, 0x02};
  v.voted = {0x03, 0x00};
  v.committed = {0x01, 0x00};
  v.fenced = {0x00, 0x02};
  return v;
}

Envelope envelope(Body body) {
  Envelope e;
  e.run_id = "job42";
  e.sender = "node0:29400";
  e.sender_generation = 3;
  e.body = std::move(body);
  return e;
}

std::vector<Envelope> one_of_each_type() {
  return {
      envelope(Join{record(4)}),
      envelope(JoinReply{records(5), true}),
      envelope(Ping{1ULL << 33, records(3), {view(1), view(2)}}),
      envelope(Ack{99, records(2), {view(7)}}),
      envelope(PingReq{12345, "[fd00::1]:29400"}),
      envelope(Gossip{true, records(4), {view(3)}}),
      envelope(Query{}),
      envelope(
          QueryReply{records(6), {view(9)}, {0, 1, 1500, 1ULL << 40, 7, QueryReply::kNeverHeard}}),
      envelope(Refuse{RefuseReason::run_id_mismatch, "run 'job42' here, 'job43' there"}),
      envelope(Unreachable{"[fd00::3]:29400", 1ULL << 35, 4}),
  };
}

// ---- comparison (the message structs of messages.hpp have no operator== yet) ---------------

bool same(const Join& a, const Join& b) {
  return a.self == b.self;
}
bool same(const JoinReply& a, const JoinReply& b) {
  return a.sample == b.sample && a.seed_is_member == b.seed_is_member;
}
bool same(const Ping& a, const Ping& b) {
  return a.seq == b.seq && a.updates == b.updates && a.views == b.views;
}
bool same(const Ack& a, const Ack& b) {
  return a.seq == b.seq && a.updates == b.updates && a.views == b.views;
}
bool same(const PingReq& a, const PingReq& b) {
  return a.seq == b.seq && a.target == b.target;
}
bool same(const Gossip& a, const Gossip& b) {
  return a.want_reply == b.want_reply && a.updates == b.updates && a.views == b.views;
}
bool same(const Query&, const Query&) {
  return true;
}
bool same(const QueryReply& a, const QueryReply& b) {
  return a.members == b.members && a.views == b.views && a.last_heard_ms == b.last_heard_ms;
}
bool same(const Refuse& a, const Refuse& b) {
  return a.reason == b.reason && a.detail == b.detail;
}

bool same(const Unreachable& a, const Unreachable& b) {
  return a == b;
}

bool same(const Envelope& a, const Envelope& b) {
  if (a.version != b.version || a.run_id != b.run_id || a.sender != b.sender ||
      a.sender_generation != b.sender_generation || a.body.index() != b.body.index()) {
    return false;
  }
  return std::visit(
      [&](const auto& body_a) {
        return same(body_a, std::get<std::decay_t<decltype(body_a)>>(b.body));
      },
      a.body);
}

// ---- hand-built messages, for bytes encode() never produces --------------------------------

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_string(Packer& p, std::string_view text) {
  p.pack_str(static_cast<std::uint32_t>(text.size()));
  p.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
}

Bytes to_bytes(const msgpack::sbuffer& buffer) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(buffer.data());
  return Bytes(data, data + buffer.size());
}

// An envelope whose header is sound and whose type and body are whatever `body` packs.
Bytes raw_message(std::uint64_t type, const std::function<void(Packer&)>& body,
                  std::uint64_t version = kProtocolVersion, std::uint32_t fields = 7) {
  msgpack::sbuffer buffer;
  Packer p(buffer);
  p.pack_array(fields);
  pack_string(p, "GRDZ");
  p.pack_uint64(version);
  pack_string(p, "job42");
  pack_string(p, "node9:29400");
  p.pack_uint64(77);
  p.pack_uint64(type);
  body(p);
  return to_bytes(buffer);
}

void pack_announcement(Packer& p) {
  p.pack_array(11);
  pack_string(p, "node1:29400");
  p.pack_uint64(1);
  p.pack_uint64(2);
  pack_string(p, "10.0.0.1");
  pack_string(p, "host1");
  p.pack_uint32(8);
  p.pack_int32(-1);
  p.pack_uint16(29500);
  p.pack_uint32(1);
  p.pack_uint32(4);
  p.pack_uint64(0x5eed);
}

// A Join whose record has `status` as its status field.
Bytes join_with_status(const std::function<void(Packer&)>& status) {
  return raw_message(1, [&](Packer& p) {
    p.pack_array(1);
    p.pack_array(4);
    pack_announcement(p);
    p.pack_uint64(0);
    status(p);
    pack_string(p, "");
  });
}

DecodeError expect_error(const Bytes& bytes, Kind kind) {
  const DecodeResult result = decode(bytes);
  EXPECT_FALSE(result.ok());
  if (result.ok()) return {};
  EXPECT_EQ(to_string(result.error().kind), to_string(kind)) << result.error().detail;
  return result.error();
}

// ---- round trips ---------------------------------------------------------------------------

TEST(Codec, EveryMessageTypeRoundTrips) {
  for (const Envelope& original : one_of_each_type()) {
    const DecodeResult result = decode(encode(original));
    ASSERT_TRUE(result.ok()) << to_string(message_type(original.body)) << ": "
                             << describe(result.error());
    EXPECT_TRUE(same(result.envelope(), original)) << to_string(message_type(original.body));
  }
}

TEST(Codec, TypeCodesAreFrozen) {
  EXPECT_EQ(message_type(Join{}), MessageType::join);
  EXPECT_EQ(static_cast<int>(message_type(Refuse{})), 9);
  EXPECT_EQ(static_cast<int>(message_type(Unreachable{})), 10);
  EXPECT_EQ(to_string(MessageType::unreachable), "Unreachable");
  EXPECT_EQ(static_cast<int>(message_type(PingReq{})), 5);
  EXPECT_EQ(to_string(MessageType::query_reply), "QueryReply");
}

// Pins the layout documented in docs/wire-format.md byte for byte.
TEST(Codec, PingReqEncodesToTheDocumentedBytes) {
  Envelope e;
  e.run_id = "r";
  e.sender = "s:1";
  e.sender_generation = 2;
  e.body = PingReq{5, "a:1"};
  const Bytes expected = {0x97, 0xa4, 'G',  'R',  'D',  'Z',  0x05, 0xa1, 'r', 0xa3, 's',
                          ':',  '1',  0x02, 0x05, 0x92, 0x05, 0xa3, 'a',  ':', '1'};
  EXPECT_EQ(encode(e), expected);
}

TEST(Codec, UnreachableEncodesToTheDocumentedBytes) {
  Envelope e;
  e.run_id = "r";
  e.sender = "s:1";
  e.sender_generation = 2;
  e.body = Unreachable{"a:1", 300, 2};
  const Bytes expected = {0x97, 0xa4, 'G',  'R',  'D',  'Z', 0x05, 0xa1, 'r',  0xa3, 's',  ':',
                          '1',  0x02, 0x0a, 0x93, 0xa3, 'a', ':',  '1',  0xcd, 0x01, 0x2c, 0x02};
  EXPECT_EQ(encode(e), expected);
}

// A decoder that predates a message type (as version 1 builds before Unreachable were)
// refuses it cleanly, naming the sender, however well-formed its body is.
TEST(Codec, TypeNewerThanTheDecoderIsRefusedNamingTheSender) {
  const DecodeError error = expect_error(raw_message(11,
                                                     [](Packer& p) {
                                                       p.pack_array(3);
                                                       pack_string(p, "a:1");
                                                       p.pack_uint64(300);
                                                       p.pack_uint64(2);
                                                     }),
                                         Kind::malformed);
  ASSERT_TRUE(error.header.has_value());
  EXPECT_NE(error.detail.find("unknown message type 11"), std::string::npos) << error.detail;
}

// QueryReply gained last_heard_ms after version 1 was first built: a 2-field reply from such
// a node still reads (no timings); a list that does not match the members, or a fourth
// field, is refused.
TEST(Codec, QueryReplyWithoutLastHeardStillReads) {
  const DecodeResult old = decode(raw_message(8, [](Packer& p) {
    p.pack_array(2);  // members: [one record], views: []
    p.pack_array(1);
    p.pack_array(4);
    pack_announcement(p);
    p.pack_uint64(0);
    p.pack_uint64(0);
    pack_string(p, "");
    p.pack_array(0);
  }));
  ASSERT_TRUE(old.ok()) << describe(old.error());
  const auto& reply = std::get<QueryReply>(old.envelope().body);
  ASSERT_EQ(reply.members.size(), 1u);
  EXPECT_EQ(reply.members[0].ann.endpoint, "node1:29400");
  EXPECT_TRUE(reply.last_heard_ms.empty());

  QueryReply mismatched{records(2), {}, {5}};
  const DecodeError error = expect_error(encode(envelope(mismatched)), Kind::malformed);
  EXPECT_NE(error.detail.find("last_heard_ms"), std::string::npos) << error.detail;
  EXPECT_NE(error.detail.find("1 entries for 2 members"), std::string::npos) << error.detail;

  expect_error(raw_message(8,
                           [](Packer& p) {
                             p.pack_array(4);
                             for (int i = 0; i < 4; ++i) p.pack_array(0);
                           }),
               Kind::malformed);
}

TEST(Codec, BitsetsTravelAsBinary) {
  ViewClaim v;
  v.members = {{"a", 1}, {"b", 1}, {"c", 2}};
  v.proposed = {0x05};
  v.ready = {0x00};
  v.voted = {0x06};
  v.committed = {0x07};
  v.fenced = {0x02};
  v.witnesses = {"w:1"};
  v.seniors = {2, 0};
  const Bytes bytes = encode(envelope(Gossip{false, {}, {v}}));
  // ... the view ends with five bin8 values of one byte each, its witnesses, its seniors.
  const Bytes tail(bytes.end() - 23, bytes.end());
  EXPECT_EQ(tail, (Bytes{0xc4, 0x01, 0x05, 0xc4, 0x01, 0x00, 0xc4, 0x01, 0x06, 0xc4, 0x01, 0x07,
                         0xc4, 0x01, 0x02, 0x91, 0xa3, 'w',  ':',  '1',  0x92, 0x02, 0x00}));
  ASSERT_TRUE(decode(bytes).ok());
}

// Seniors are distinct indices into a claim's own members; a claim by reference has none.
TEST(Codec, SeniorsMustBeDistinctMembersOfAFullClaim) {
  ViewClaim v;
  v.members = {{"a", 1}, {"b", 1}};
  v.proposed = v.ready = v.voted = v.committed = v.fenced = {0x00};
  for (const std::vector<std::uint32_t>& bad :
       {std::vector<std::uint32_t>{2}, std::vector<std::uint32_t>{1, 1}}) {
    v.seniors = bad;
    const DecodeError error =
        expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::malformed);
    EXPECT_NE(error.detail.find("seniors"), std::string::npos) << error.detail;
  }
  v.seniors = {1, 0};
  EXPECT_TRUE(decode(encode(envelope(Gossip{false, {}, {v}}))).ok());
  v.members.clear();
  v.seniors = {0};
  const DecodeError by_reference =
      expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::malformed);
  EXPECT_NE(by_reference.detail.find("seniors in a claim by reference"), std::string::npos)
      << by_reference.detail;
}

TEST(Codec, WitnessesMustBeSortedUniqueAndFew) {
  ViewClaim v;
  v.members = {{"a", 1}};
  v.proposed = v.ready = v.voted = v.committed = v.fenced = {0x00};
  v.witnesses = {"b:1", "a:1"};
  expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::malformed);
  v.witnesses = {"a:1", "a:1"};
  expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::malformed);
  v.witnesses.clear();
  for (int i = 0; i < 65; ++i) v.witnesses.push_back("w" + std::to_string(100 + i) + ":1");
  expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::too_large);
  v.witnesses.resize(64);
  EXPECT_TRUE(decode(encode(envelope(Gossip{false, {}, {v}}))).ok());
}

TEST(Codec, LimitsThemselvesAreAccepted) {
  ViewClaim v;
  for (std::size_t i = 0; i < kMaxListLength; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "e%06zu", i);
    v.members.push_back({name, 0});
  }
  v.proposed.assign(kMaxBitsetBytes, 0xff);
  v.ready.assign(kMaxBitsetBytes, 0);
  v.voted.assign(kMaxBitsetBytes, 0);
  v.committed.assign(kMaxBitsetBytes, 0);
  v.fenced.assign(kMaxBitsetBytes, 0);
  MemberRecord r = record(1);
  r.ann.hostname = std::string(kMaxStringBytes, 'h');
  const Envelope original = envelope(Ping{1, {r}, {v}});
  const DecodeResult result = decode(encode(original));
  ASSERT_TRUE(result.ok()) << describe(result.error());
  EXPECT_TRUE(same(result.envelope(), original));

  v.members.push_back({"f", 0});  // one member too many (and bitsets one bit short)
  expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::too_large);
}

// ---- rejection -----------------------------------------------------------------------------

TEST(Codec, EveryPrefixOfEveryMessageIsTruncated) {
  for (const Envelope& original : one_of_each_type()) {
    const Bytes bytes = encode(original);
    for (std::size_t size = 0; size < bytes.size(); ++size) {
      const DecodeResult result = decode(bytes.data(), size);
      ASSERT_FALSE(result.ok()) << "prefix " << size << " of " << bytes.size();
      ASSERT_EQ(result.error().kind, Kind::truncated)
          << "prefix " << size << ": " << describe(result.error());
    }
  }
}

TEST(Codec, HeaderIsReportedOnceReadEvenWhenTheBodyIsCut) {
  const Bytes bytes = encode(envelope(Ping{1, records(2), {}}));
  const DecodeResult result = decode(bytes.data(), bytes.size() - 3);
  ASSERT_FALSE(result.ok());
  ASSERT_TRUE(result.error().header.has_value());
  EXPECT_EQ(result.error().header->sender, "node0:29400");
  EXPECT_EQ(result.error().header->sender_generation, 3u);
}

TEST(Codec, WrongMagicIsRefused) {
  Bytes bytes = encode(envelope(Query{}));
  bytes[5] = 'X';  // "GRDX"
  const DecodeError error = expect_error(bytes, Kind::bad_magic);
  EXPECT_NE(error.detail.find("GRDX"), std::string::npos) << error.detail;
  EXPECT_FALSE(error.header.has_value());

  expect_error(Bytes{'G', 'E', 'T', ' ', '/'}, Kind::bad_magic);  // an HTTP request
  expect_error(Bytes{0x90}, Kind::bad_magic);                     // an empty array
  msgpack::sbuffer buffer;
  Packer p(buffer);
  p.pack_array(7);
  p.pack_uint32(0x4752445a);  // the magic as a number is not the magic
  expect_error(to_bytes(buffer), Kind::bad_magic);
}

TEST(Codec, UnknownMessageTypesAreRefused) {
  for (std::uint64_t type : {0ULL, 11ULL, 255ULL, 256ULL, 1ULL << 40}) {
    const DecodeError error =
        expect_error(raw_message(type, [](Packer& p) { p.pack_array(0); }), Kind::malformed);
    EXPECT_TRUE(error.header.has_value());
  }
}

TEST(Codec, WrongFieldTypesAreRefusedNamingTheField) {
  // Ping.seq as a string.
  DecodeError error = expect_error(raw_message(3,
                                               [](Packer& p) {
                                                 p.pack_array(3);
                                                 pack_string(p, "1");
                                                 p.pack_array(0);
                                                 p.pack_array(0);
                                               }),
                                   Kind::malformed);
  EXPECT_NE(error.detail.find("Ping.seq"), std::string::npos) << error.detail;
  EXPECT_NE(error.detail.find("got string"), std::string::npos) << error.detail;

  // A record's status as nil.
  error = expect_error(join_with_status([](Packer& p) { p.pack_nil(); }), Kind::malformed);
  EXPECT_NE(error.detail.find("Join.self.status"), std::string::npos) << error.detail;

  // The body as a map, a record with a field missing, a negative sequence number.
  expect_error(raw_message(7, [](Packer& p) { p.pack_map(0); }), Kind::malformed);
  expect_error(raw_message(1,
                           [](Packer& p) {
                             p.pack_array(1);
                             p.pack_array(2);
                             pack_announcement(p);
                             p.pack_uint64(0);
                           }),
               Kind::malformed);
  expect_error(raw_message(5,
                           [](Packer& p) {
                             p.pack_array(2);
                             p.pack_int64(-1);
                             pack_string(p, "a:1");
                           }),
               Kind::malformed);
  // Binary where a string belongs.
  expect_error(raw_message(5,
                           [](Packer& p) {
                             p.pack_array(2);
                             p.pack_uint64(1);
                             p.pack_bin(3);
                             p.pack_bin_body("a:1", 3);
                           }),
               Kind::malformed);
}

TEST(Codec, EnumAndIntegerRangesAreChecked) {
  expect_error(join_with_status([](Packer& p) { p.pack_uint8(3); }), Kind::malformed);
  ASSERT_TRUE(decode(join_with_status([](Packer& p) { p.pack_uint8(2); })).ok());
  for (std::uint64_t reason : {0ULL, 4ULL}) {
    expect_error(raw_message(9,
                             [&](Packer& p) {
                               p.pack_array(2);
                               p.pack_uint64(reason);
                               pack_string(p, "why");
                             }),
                 Kind::malformed);
  }
  // rank_hint beyond int32, nproc beyond uint32, master_port beyond uint16.
  const auto with_announcement_field = [](int index, std::int64_t value) {
    return raw_message(1, [=](Packer& p) {
      p.pack_array(1);
      p.pack_array(4);
      p.pack_array(11);
      for (int i = 0; i < 11; ++i) {
        if (i == index) {
          p.pack_int64(value);
        } else if (i == 0 || i == 3 || i == 4) {
          pack_string(p, "x");
        } else {
          p.pack_uint64(1);
        }
      }
      p.pack_uint64(0);
      p.pack_uint64(0);
      pack_string(p, "");
    });
  };
  ASSERT_TRUE(decode(with_announcement_field(6, -1)).ok());
  expect_error(with_announcement_field(6, -(1LL << 31) - 1), Kind::malformed);
  expect_error(with_announcement_field(6, 1LL << 31), Kind::malformed);
  expect_error(with_announcement_field(5, 1LL << 32), Kind::malformed);
  expect_error(with_announcement_field(7, 65536), Kind::malformed);
  expect_error(raw_message(
                   7, [](Packer& p) { p.pack_array(0); }, 70000),
               Kind::malformed);
}

TEST(Codec, OversizedStringsAreRefused) {
  Envelope e = envelope(Refuse{RefuseReason::bad_message, std::string(kMaxStringBytes + 1, 'x')});
  expect_error(encode(e), Kind::too_large);
  e.run_id = std::string(kMaxStringBytes + 1, 'r');
  e.body = Query{};
  const DecodeError error = expect_error(encode(e), Kind::too_large);
  EXPECT_NE(error.detail.find("1024"), std::string::npos) << error.detail;
}

TEST(Codec, HugeDeclaredCountsNeitherAllocateNorCrash) {
  const std::vector<Bytes> hostile = {
      {0xdd, 0xff, 0xff, 0xff, 0xff},  // the envelope: an array of 4G fields
      raw_message(3,
                  [](Packer& p) {
                    p.pack_array(3);
                    p.pack_uint64(1);
                    p.pack_array(0xffffffff);  // Ping.updates: 4G records, none present
                  }),
      raw_message(3, [](Packer& p) { p.pack_map(0xffffffff); }),
      raw_message(5,
                  [](Packer& p) {
                    p.pack_array(2);
                    p.pack_uint64(1);
                    p.pack_str(0xffffffff);  // a 4 GiB string, none of it present
                  }),
      raw_message(6,
                  [](Packer& p) {
                    p.pack_array(3);
                    p.pack_true();
                    p.pack_array(0);
                    p.pack_array(1);
                    p.pack_array(7);
                    p.pack_uint64(1);
                    p.pack_uint64(1);
                    p.pack_uint64(1);
                    p.pack_array(0);
                    p.pack_bin(0xffffffff);  // a 4 GiB bitset
                  }),
      raw_message(3, [](Packer& p) { p.pack_ext(0xffffffff, 1); }),
      raw_message(3, [](Packer& p) { p.pack_array(kMaxListLength); }),  // allowed, but cut
  };
  for (const Bytes& bytes : hostile) {
    g_largest_malloc_bytes = 0;
    g_track_malloc = true;
    const DecodeResult result = decode(bytes);
    g_track_malloc = false;
    ASSERT_FALSE(result.ok());
    EXPECT_TRUE(result.error().kind == Kind::too_large || result.error().kind == Kind::truncated)
        << describe(result.error());
    // 65536 msgpack objects of 24 bytes (1.5 MiB), rounded up to a power of two by msgpack's
    // zone, is the most any one count may reserve; without limits it would be 96 GiB.
    if (kMallocTracked) {
      EXPECT_LE(g_largest_malloc_bytes, 4u * 1024 * 1024) << describe(result.error());
    }
  }
  // The last case does reserve its 65536 elements: proof that the tracking sees msgpack.
  if (kMallocTracked) {
    EXPECT_GE(g_largest_malloc_bytes, kMaxListLength * sizeof(msgpack::object));
  }
}

// Bytes malloc'd (an upper bound of the peak) while decoding `bytes`.
std::size_t bytes_allocated_decoding(const Bytes& bytes, DecodeResult& result) {
  g_total_malloc_bytes = 0;
  g_track_malloc = true;
  result = decode(bytes);
  g_track_malloc = false;
  return g_total_malloc_bytes;
}

// msgpack spends 24 bytes per value: 4 MB of one-byte values in 65535-element lists would
// take about 100 MB to unpack. They are counted, and refused, before anything is allocated.
TEST(Codec, ManyTinyValuesAreRefusedBeforeUnpacking) {
  constexpr std::size_t kLists = 63;
  const Bytes bomb = raw_message(6, [](Packer& p) {
    p.pack_array(kLists);
    for (std::size_t i = 0; i < kLists; ++i) {
      p.pack_array(65535);
      for (int j = 0; j < 65535; ++j) p.pack_nil();
    }
  });
  ASSERT_GT(bomb.size(), 4'000'000u);
  ASSERT_LE(bomb.size(), kMaxMessageBytes);
  DecodeResult result = DecodeError{};
  const std::size_t allocated = bytes_allocated_decoding(bomb, result);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, Kind::too_large) << describe(result.error());
  EXPECT_NE(result.error().detail.find("values in"), std::string::npos) << result.error().detail;
  if (kMallocTracked) {
    EXPECT_LT(allocated, 64u * 1024) << "bytes allocated refusing it";
  }
}

// A large valid message still decodes, within the documented bound: at most 13 times its size
// (24 bytes per value, at most one value per 2 bytes, plus its strings).
TEST(Codec, DecodingALargeMessageTakesASmallMultipleOfItsSize) {
  const Envelope original = envelope(QueryReply{records(20000), {}, {}});
  const Bytes bytes = encode(original);
  ASSERT_GT(bytes.size(), 1'000'000u);
  DecodeResult result = DecodeError{};
  const std::size_t allocated = bytes_allocated_decoding(bytes, result);
  ASSERT_TRUE(result.ok()) << describe(result.error());
  EXPECT_TRUE(same(result.envelope(), original));
  if (kMallocTracked) {
    std::printf("decoding %zu bytes allocated %zu bytes (%.1f times)\n", bytes.size(), allocated,
                static_cast<double>(allocated) / static_cast<double>(bytes.size()));
    EXPECT_LT(allocated, 13 * bytes.size());
  }
}

TEST(Codec, DeepNestingIsRefused) {
  const DecodeError error = expect_error(raw_message(3,
                                                     [](Packer& p) {
                                                       for (int i = 0; i < 100000; ++i) {
                                                         p.pack_array(1);
                                                       }
                                                       p.pack_nil();
                                                     }),
                                         Kind::malformed);
  EXPECT_NE(error.detail.find("nested"), std::string::npos) << error.detail;
}

TEST(Codec, BitsetsMustMatchTheMembers) {
  ViewClaim v = view(1);
  v.ready = {0x0f};  // 10 members need 2 bytes
  DecodeError error = expect_error(encode(envelope(Gossip{false, {}, {v}})), Kind::malformed);
  EXPECT_NE(error.detail.find("Gossip.views[0].ready"), std::string::npos) << error.detail;

  v = view(1);
  v.committed = {0x00, 0x04};  // bit 10 of 10 members
  error = expect_error(encode(envelope(Ack{1, {}, {view(2), v}})), Kind::malformed);
  EXPECT_NE(error.detail.find("Ack.views[1].committed"), std::string::npos) << error.detail;

  v = view(1);
  v.proposed = {0xff, 0x03, 0x00};
  expect_error(encode(envelope(Ping{1, {}, {v}})), Kind::malformed);

  v = ViewClaim{};  // no members, no bytes
  ASSERT_TRUE(decode(encode(envelope(Ping{1, {}, {v}}))).ok());
}

// A claim by reference (docs/wire-format.md): no members, five sets of one length.
TEST(Codec, ClaimByReferenceRoundTripsAndItsSetsMustAgree) {
  ViewClaim v = view(1);
  v.members.clear();
  const DecodeResult result = decode(encode(envelope(Gossip{false, {}, {v}})));
  ASSERT_TRUE(result.ok()) << result.error().detail;
  EXPECT_EQ(std::get<Gossip>(result.envelope().body).views[0], v);

  v.fenced = {0x00};  // one byte where the others have two
  const DecodeError error = expect_error(encode(envelope(Ack{1, {}, {v}})), Kind::malformed);
  EXPECT_NE(error.detail.find("Ack.views[0]"), std::string::npos) << error.detail;
  EXPECT_NE(error.detail.find("by reference"), std::string::npos) << error.detail;
}

TEST(Codec, ViewMembersMustBeSortedAndUnique) {
  ViewClaim v = view(1);
  std::swap(v.members[3], v.members[4]);
  expect_error(encode(envelope(Ping{1, {}, {v}})), Kind::malformed);
  v = view(1);
  v.members[4] = v.members[3];
  const DecodeError error = expect_error(encode(envelope(Ping{1, {}, {v}})), Kind::malformed);
  EXPECT_NE(error.detail.find("index 4"), std::string::npos) << error.detail;
}

TEST(Codec, OversizedMessagesAreRefusedButNamed) {
  Bytes bytes = encode(envelope(Query{}));
  bytes.resize(kMaxMessageBytes + 1, 0xc0);
  const DecodeError error = expect_error(bytes, Kind::too_large);
  ASSERT_TRUE(error.header.has_value());
  EXPECT_EQ(error.header->run_id, "job42");
}

TEST(Codec, TrailingBytesAndWrongFieldCountsAreRefused) {
  Bytes bytes = encode(envelope(Query{}));
  bytes.push_back(0xc0);
  expect_error(bytes, Kind::malformed);
  const DecodeError error =
      expect_error(raw_message(
                       7, [](Packer& p) { p.pack_array(0); }, kProtocolVersion, 8),
                   Kind::malformed);
  EXPECT_TRUE(error.header.has_value());
  expect_error(raw_message(
                   7, [](Packer& p) { p.pack_array(0); }, kProtocolVersion, 6),
               Kind::malformed);
  expect_error(raw_message(7,
                           [](Packer& p) {
                             p.pack_array(1);
                             p.pack_nil();
                           }),
               Kind::malformed);
}

TEST(Codec, AnotherVersionIsNamedFromItsHeader) {
  Envelope e = envelope(Ping{1, records(2), {view(1)}});
  e.version = kProtocolVersion + 1;
  DecodeError error = expect_error(encode(e), Kind::version_mismatch);
  ASSERT_TRUE(error.header.has_value());
  EXPECT_EQ(error.header->version, kProtocolVersion + 1);
  EXPECT_EQ(error.header->sender, "node0:29400");
  EXPECT_EQ(error.header->run_id, "job42");
  EXPECT_EQ(error.header->sender_generation, 3u);

  // A future version may change everything after the header, even the envelope's length.
  const std::uint16_t future = kProtocolVersion + 1;
  error = expect_error(raw_message(
                           200, [](Packer& p) { p.pack_map(1); }, future, 11),
                       Kind::version_mismatch);
  ASSERT_TRUE(error.header.has_value());
  EXPECT_EQ(error.header->version, future);
  EXPECT_EQ(error.header->sender, "node9:29400");
  EXPECT_NE(describe(error).find("version " + std::to_string(future)), std::string::npos)
      << describe(error);

  // Version 1 (before votes, docs/protocol.md "Rules") is refused by name too: its nodes
  // commit on a full ready set alone, which a node of this version must not meet in a round.
  error = expect_error(raw_message(
                           1, [](Packer& p) { p.pack_map(1); }, 1, 7),
                       Kind::version_mismatch);
  EXPECT_NE(describe(error).find("version 1"), std::string::npos) << describe(error);
}

TEST(Codec, DescribeNamesTheSenderAndEscapesWireText) {
  DecodeError error;
  error.kind = Kind::malformed;
  error.detail = "Ping.seq: expected unsigned integer, got string";
  error.header = Header{1, "job\n42", "evil\x1b[31m:1", 9};
  const std::string text = describe(error);
  EXPECT_NE(text.find("malformed message: Ping.seq"), std::string::npos) << text;
  EXPECT_NE(text.find("evil\\x1b[31m:1"), std::string::npos) << text;
  EXPECT_NE(text.find("job\\x0a42"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
}

// Random corruption of valid messages: decode() must return, never crash or throw (it is
// noexcept, so a throw would terminate), and whatever it accepts must encode and decode back
// to itself. Seeded, so a failure reproduces.
TEST(Codec, RandomMutationsNeverCrash) {
  constexpr std::uint64_t kSeed = 0x5eed;
  constexpr int kMutations = 20000;
  std::mt19937_64 rng(kSeed);
  std::vector<Bytes> valid;
  for (const Envelope& e : one_of_each_type()) valid.push_back(encode(e));
  const std::uint8_t interesting[] = {0x00, 0x7f, 0x80, 0x90, 0xc0, 0xc1, 0xc4, 0xcc, 0xcf,
                                      0xd0, 0xd3, 0xd9, 0xdc, 0xdd, 0xde, 0xdf, 0xff};
  int accepted = 0;
  for (int i = 0; i < kMutations; ++i) {
    Bytes bytes = valid[rng() % valid.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int edit = 0; edit < edits && !bytes.empty(); ++edit) {
      const std::size_t at = rng() % bytes.size();
      switch (rng() % 5) {
        case 0:
          bytes[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          bytes[at] = interesting[rng() % sizeof interesting];
          break;
        case 2:
          bytes.insert(bytes.begin() + at, static_cast<std::uint8_t>(rng()));
          break;
        case 3:
          bytes.erase(bytes.begin() + at);
          break;
        case 4:
          bytes.resize(at);
          break;
      }
    }
    const DecodeResult result = decode(bytes);
    if (!result.ok()) continue;
    ++accepted;
    const DecodeResult again = decode(encode(result.envelope()));
    ASSERT_TRUE(again.ok()) << "seed " << kSeed << " mutation " << i;
    ASSERT_TRUE(same(again.envelope(), result.envelope())) << "seed " << kSeed << " mutation " << i;
  }
  // Most corruptions must be caught, but the loop must also reach the accepting paths.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kMutations / 2);
}

TEST(Codec, KindNamesAreStable) {
  EXPECT_EQ(to_string(Kind::version_mismatch), "version_mismatch");
  EXPECT_EQ(to_string(Kind::truncated), "truncated");
}

}  // namespace
}  // namespace gossip_rdzv::protocol
