// The msgpack layout of every message, declared once per struct in a `layout` function that
// both the Writer and the Reader run, so the two directions cannot drift apart.
// docs/wire-format.md documents the same layouts in tables.
#include "codec.hpp"

#include <array>
#include <cassert>
#include <cstdio>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include <msgpack.hpp>

namespace gossip_rdzv::protocol {
namespace {

// Type codes are the position in Body plus one. Pin every position, so that reordering Body
// in messages.hpp breaks the build instead of silently renumbering the wire.
static_assert(std::is_same_v<std::variant_alternative_t<0, Body>, Join>);
static_assert(std::is_same_v<std::variant_alternative_t<1, Body>, JoinReply>);
static_assert(std::is_same_v<std::variant_alternative_t<2, Body>, Ping>);
static_assert(std::is_same_v<std::variant_alternative_t<3, Body>, Ack>);
static_assert(std::is_same_v<std::variant_alternative_t<4, Body>, PingReq>);
static_assert(std::is_same_v<std::variant_alternative_t<5, Body>, Gossip>);
static_assert(std::is_same_v<std::variant_alternative_t<6, Body>, Query>);
static_assert(std::is_same_v<std::variant_alternative_t<7, Body>, QueryReply>);
static_assert(std::is_same_v<std::variant_alternative_t<8, Body>, Refuse>);
static_assert(std::is_same_v<std::variant_alternative_t<9, Body>, Unreachable>);
static_assert(std::variant_size_v<Body> == 10);

constexpr std::array<std::string_view, 10> kTypeNames = {
    "Join",   "JoinReply", "Ping",       "Ack",    "PingReq",
    "Gossip", "Query",     "QueryReply", "Refuse", "Unreachable"};

// Header fields (magic, version, run_id, sender, sender_generation) and, in version 1,
// type and body.
constexpr std::size_t kHeaderFields = 5;
constexpr std::size_t kEnvelopeFieldsV1 = 7;

// The deepest body of version 1 is body > views > ViewClaim > members > MemberKey (5 levels);
// one spare level, and no more, so nesting bombs stop early.
constexpr std::size_t kMaxBodyDepth = 6;
// Maps and extension types never appear in a valid message; small limits keep them cheap
// until the reader refuses them by type.
constexpr std::size_t kMaxMapEntries = 16;
constexpr std::size_t kMaxExtBytes = 16;
// Witnesses of a view are dedicated seeds of the quorum base: a few, never thousands.
constexpr std::size_t kMaxWitnesses = 64;

// msgpack allocates an array's element table when it reads the count, before the elements
// arrive; these limits bound that allocation whatever the count on the wire says.
const msgpack::unpack_limit kLimits(kMaxListLength, kMaxMapEntries, kMaxStringBytes,
                                    kMaxBitsetBytes, kMaxExtBytes, kMaxBodyDepth);

using Kind = DecodeError::Kind;

// Thrown by the readers below and caught in decode() only: unwinding from a field deep inside
// a nested list is shorter and clearer than threading an error value through every reader.
struct Reject {
  Kind kind;
  std::string detail;
};

// Where a value sits in a message, for error details ("Ping.updates[3].ann.host"). Built on
// the stack and only turned into a string when something is wrong.
class Path {
 public:
  explicit Path(std::string_view root) : name_(root) {}
  Path(const Path* parent, std::string_view name) : parent_(parent), name_(name) {}
  Path(const Path* parent, std::size_t index) : parent_(parent), index_(index) {}

  std::string str() const {
    if (!parent_) return std::string(name_);
    if (index_ != kNoIndex) return parent_->str() + "[" + std::to_string(index_) + "]";
    return parent_->str() + "." + std::string(name_);
  }

 private:
  static constexpr std::size_t kNoIndex = std::numeric_limits<std::size_t>::max();
  const Path* parent_ = nullptr;
  std::string_view name_;
  std::size_t index_ = kNoIndex;
};

[[noreturn]] void reject(Kind kind, const Path& path, const std::string& what) {
  throw Reject{kind, path.str() + ": " + what};
}

std::string_view type_name(msgpack::type::object_type type) {
  switch (type) {
    case msgpack::type::NIL:
      return "nil";
    case msgpack::type::BOOLEAN:
      return "bool";
    case msgpack::type::POSITIVE_INTEGER:
      return "unsigned integer";
    case msgpack::type::NEGATIVE_INTEGER:
      return "negative integer";
    case msgpack::type::FLOAT32:
      return "float";
    case msgpack::type::FLOAT64:
      return "float";
    case msgpack::type::STR:
      return "string";
    case msgpack::type::BIN:
      return "binary";
    case msgpack::type::ARRAY:
      return "array";
    case msgpack::type::MAP:
      return "map";
    case msgpack::type::EXT:
      return "extension";
  }
  return "unknown";
}

void expect_type(const msgpack::object& value, msgpack::type::object_type type, const Path& path) {
  if (value.type == type) return;
  reject(
      Kind::malformed, path,
      "expected " + std::string(type_name(type)) + ", got " + std::string(type_name(value.type)));
}

// Escapes everything but printable ASCII, so wire strings cannot break a log line.
std::string printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
    out += escaped;
  }
  return out;
}

std::uint64_t read_unsigned(const msgpack::object& value, std::uint64_t max, const Path& path) {
  expect_type(value, msgpack::type::POSITIVE_INTEGER, path);
  if (value.via.u64 > max) {
    reject(Kind::malformed, path,
           "value " + std::to_string(value.via.u64) + " is out of range 0-" + std::to_string(max));
  }
  return value.via.u64;
}

std::int64_t read_signed(const msgpack::object& value, std::int64_t min, std::int64_t max,
                         const Path& path) {
  bool in_range = false;
  if (value.type == msgpack::type::NEGATIVE_INTEGER) {
    in_range = value.via.i64 >= min;
  } else {
    expect_type(value, msgpack::type::POSITIVE_INTEGER, path);
    in_range = value.via.u64 <= static_cast<std::uint64_t>(max);
  }
  if (!in_range) {
    reject(Kind::malformed, path,
           "value is out of range " + std::to_string(min) + " to " + std::to_string(max));
  }
  return value.via.i64;
}

std::string read_string(const msgpack::object& value, const Path& path) {
  expect_type(value, msgpack::type::STR, path);
  return std::string(value.via.str.ptr, value.via.str.size);
}

// ---- the two directions ------------------------------------------------------------------

template <class T, class Io>
using In = std::conditional_t<Io::kWriting, const T, T>;

// Appends packed bytes to a vector (msgpack's packer wants a stream with write()).
struct ByteSink {
  std::vector<std::uint8_t> bytes;
  void write(const char* data, std::size_t size) { bytes.insert(bytes.end(), data, data + size); }
};

class Writer {
 public:
  static constexpr bool kWriting = true;
  explicit Writer(msgpack::packer<ByteSink>& packer) : packer_(packer) {}

  void begin(std::size_t fields) { packer_.pack_array(static_cast<std::uint32_t>(fields)); }
  /// A body that gained trailing fields: written with all of them.
  std::size_t begin(std::size_t, std::size_t most) {
    begin(most);
    return most;
  }
  void field(std::string_view, const std::string& text) {
    packer_.pack_str(static_cast<std::uint32_t>(text.size()));
    packer_.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
  }
  void field(std::string_view, std::uint64_t number) { packer_.pack_uint64(number); }
  void field(std::string_view, const std::vector<std::uint64_t>& numbers) {
    packer_.pack_array(static_cast<std::uint32_t>(numbers.size()));
    for (std::uint64_t number : numbers) packer_.pack_uint64(number);
  }
  void field(std::string_view, std::uint32_t number) { packer_.pack_uint64(number); }
  void field(std::string_view, std::uint16_t number) { packer_.pack_uint64(number); }
  void field(std::string_view, std::int32_t number) { packer_.pack_int64(number); }
  void field(std::string_view, bool flag) { flag ? packer_.pack_true() : packer_.pack_false(); }
  void field(std::string_view, MemberStatus status) { packer_.pack_uint64(std::uint8_t(status)); }
  void field(std::string_view, RefuseReason reason) { packer_.pack_uint64(std::uint8_t(reason)); }
  void field(std::string_view, const std::vector<std::string>& texts) {
    packer_.pack_array(static_cast<std::uint32_t>(texts.size()));
    for (const auto& text : texts) field("", text);
  }
  // Bitsets travel as msgpack binary, one bit per member.
  void field(std::string_view, const std::vector<std::uint8_t>& bits) {
    packer_.pack_bin(static_cast<std::uint32_t>(bits.size()));
    packer_.pack_bin_body(reinterpret_cast<const char*>(bits.data()),
                          static_cast<std::uint32_t>(bits.size()));
  }
  template <class T>
  void field(std::string_view, const std::vector<T>& items) {
    packer_.pack_array(static_cast<std::uint32_t>(items.size()));
    for (const T& item : items) layout(*this, item);
  }
  template <class T>
  void field(std::string_view, const T& nested) {
    layout(*this, nested);
  }

 private:
  msgpack::packer<ByteSink>& packer_;
};

// Reads the fields of one msgpack array in order, checking each type and range.
class Reader {
 public:
  static constexpr bool kWriting = false;
  Reader(const msgpack::object& value, const Path& path) : value_(value), path_(path) {}

  void begin(std::size_t fields) {
    expect_type(value_, msgpack::type::ARRAY, path_);
    if (value_.via.array.size == fields) return;
    reject(Kind::malformed, path_,
           "expected " + std::to_string(fields) + " fields, got " +
               std::to_string(value_.via.array.size));
  }
  /// A body that gained trailing fields: accepts `least` to `most` of them and returns how
  /// many came (the layout reads only those).
  std::size_t begin(std::size_t least, std::size_t most) {
    expect_type(value_, msgpack::type::ARRAY, path_);
    const std::size_t count = value_.via.array.size;
    if (count >= least && count <= most) return count;
    reject(Kind::malformed, path_,
           "expected " + std::to_string(least) + " to " + std::to_string(most) + " fields, got " +
               std::to_string(count));
    return 0;
  }
  void field(std::string_view name, std::string& text) {
    text = read_string(next(), Path(&path_, name));
  }
  void field(std::string_view name, std::vector<std::uint64_t>& numbers) {
    const Path path(&path_, name);
    const msgpack::object& list = next();
    expect_type(list, msgpack::type::ARRAY, path);
    numbers.clear();
    for (std::uint32_t i = 0; i < list.via.array.size; ++i) {
      numbers.push_back(read_unsigned(list.via.array.ptr[i],
                                      std::numeric_limits<std::uint64_t>::max(), Path(&path, i)));
    }
  }
  void field(std::string_view name, std::uint64_t& number) {
    number = read_unsigned(next(), std::numeric_limits<std::uint64_t>::max(), Path(&path_, name));
  }
  void field(std::string_view name, std::uint32_t& number) {
    number = static_cast<std::uint32_t>(
        read_unsigned(next(), std::numeric_limits<std::uint32_t>::max(), Path(&path_, name)));
  }
  void field(std::string_view name, std::uint16_t& number) {
    number = static_cast<std::uint16_t>(
        read_unsigned(next(), std::numeric_limits<std::uint16_t>::max(), Path(&path_, name)));
  }
  void field(std::string_view name, std::int32_t& number) {
    number = static_cast<std::int32_t>(read_signed(next(), std::numeric_limits<std::int32_t>::min(),
                                                   std::numeric_limits<std::int32_t>::max(),
                                                   Path(&path_, name)));
  }
  void field(std::string_view name, bool& flag) {
    const msgpack::object& value = next();
    expect_type(value, msgpack::type::BOOLEAN, Path(&path_, name));
    flag = value.via.boolean;
  }
  void field(std::string_view name, MemberStatus& status) {
    status = static_cast<MemberStatus>(read_unsigned(next(), 2, Path(&path_, name)));
  }
  void field(std::string_view name, RefuseReason& reason) {
    const Path path(&path_, name);
    const std::uint64_t code = read_unsigned(next(), 3, path);
    if (code == 0) reject(Kind::malformed, path, "value 0 is out of range 1-3");
    reason = static_cast<RefuseReason>(code);
  }
  void field(std::string_view name, std::vector<std::string>& texts) {
    const Path path(&path_, name);
    const msgpack::object& list = next();
    expect_type(list, msgpack::type::ARRAY, path);
    texts.clear();
    for (std::uint32_t i = 0; i < list.via.array.size; ++i) {
      texts.push_back(read_string(list.via.array.ptr[i], Path(&path, i)));
    }
  }
  void field(std::string_view name, std::vector<std::uint8_t>& bits) {
    const msgpack::object& value = next();
    expect_type(value, msgpack::type::BIN, Path(&path_, name));
    const auto* begin = reinterpret_cast<const std::uint8_t*>(value.via.bin.ptr);
    bits.assign(begin, begin + value.via.bin.size);
  }
  template <class T>
  void field(std::string_view name, std::vector<T>& items) {
    const Path path(&path_, name);
    const msgpack::object& list = next();
    expect_type(list, msgpack::type::ARRAY, path);
    items.clear();
    // No reserve(): memory grows with elements that parsed, not with the count on the wire.
    for (std::uint32_t i = 0; i < list.via.array.size; ++i) {
      Reader element(list.via.array.ptr[i], Path(&path, i));
      layout(element, items.emplace_back());
    }
  }
  template <class T>
  void field(std::string_view name, T& nested) {
    Reader inner(next(), Path(&path_, name));
    layout(inner, nested);
  }

  const Path& path() const { return path_; }

 private:
  const msgpack::object& next() {
    // begin() checked the count; reading more fields than declared is a bug in a layout.
    assert(next_index_ < value_.via.array.size);
    return value_.via.array.ptr[next_index_++];
  }

  const msgpack::object& value_;
  Path path_;  // children point at it, so a Reader outlives the Readers of its fields
  std::uint32_t next_index_ = 0;
};

// ---- layouts: the single declaration of every array on the wire --------------------------

template <class Io>
void layout(Io& io, In<Announcement, Io>& a) {
  io.begin(11);
  io.field("endpoint", a.endpoint);
  io.field("node_id", a.node_id);
  io.field("generation", a.generation);
  io.field("host", a.host);
  io.field("hostname", a.hostname);
  io.field("nproc", a.nproc);
  io.field("rank_hint", a.rank_hint);
  io.field("master_port", a.master_port);
  io.field("min_nodes", a.min_nodes);
  io.field("max_nodes", a.max_nodes);
  io.field("seeds_digest", a.seeds_digest);
}

template <class Io>
void layout(Io& io, In<MemberRecord, Io>& r) {
  io.begin(3);
  io.field("ann", r.ann);
  io.field("incarnation", r.incarnation);
  io.field("status", r.status);
}

template <class Io>
void layout(Io& io, In<MemberKey, Io>& k) {
  io.begin(2);
  io.field("endpoint", k.endpoint);
  io.field("generation", k.generation);
}

// A bit past the last member would make a seen-by set look fuller than it is, so padding
// must be zero. Bit order: member i is bit (i % 8) of byte i / 8, least significant first.
void check_bitset(const std::vector<std::uint8_t>& bits, std::size_t members, std::string_view name,
                  const Path& claim) {
  const Path path(&claim, name);
  const std::size_t expected_bytes = (members + 7) / 8;
  if (bits.size() != expected_bytes) {
    reject(Kind::malformed, path,
           std::to_string(bits.size()) + " bytes for " + std::to_string(members) +
               " members, expected " + std::to_string(expected_bytes));
  }
  const unsigned used_bits_in_last = members % 8;
  if (used_bits_in_last != 0 && (bits.back() >> used_bits_in_last) != 0) {
    reject(Kind::malformed, path, "bits set past the last member");
  }
}

void check_view_claim(const ViewClaim& v, const Path& path) {
  if (v.members.empty()) {
    // By reference: the receiver knows the members from (round, attempt, digest) and checks
    // the sizes against them; here the five sets only have to agree with each other.
    for (const auto* set : {&v.ready, &v.voted, &v.committed, &v.fenced}) {
      if (set->size() != v.proposed.size()) {
        reject(Kind::malformed, path,
               "seen-by sets of a claim by reference differ in size (" +
                   std::to_string(v.proposed.size()) + " and " + std::to_string(set->size()) +
                   " bytes)");
      }
    }
    return;
  }
  for (std::size_t i = 1; i < v.members.size(); ++i) {
    if (!(v.members[i - 1] < v.members[i])) {
      reject(Kind::malformed, Path(&path, "members"),
             "not sorted or not unique at index " + std::to_string(i));
    }
  }
  check_bitset(v.proposed, v.members.size(), "proposed", path);
  check_bitset(v.ready, v.members.size(), "ready", path);
  check_bitset(v.voted, v.members.size(), "voted", path);
  check_bitset(v.committed, v.members.size(), "committed", path);
  check_bitset(v.fenced, v.members.size(), "fenced", path);
}

void check_witnesses(const std::vector<std::string>& witnesses, const Path& claim) {
  const Path path(&claim, "witnesses");
  if (witnesses.size() > kMaxWitnesses) {
    reject(
        Kind::too_large, path,
        std::to_string(witnesses.size()) + " witnesses, at most " + std::to_string(kMaxWitnesses));
  }
  for (std::size_t i = 1; i < witnesses.size(); ++i) {
    if (!(witnesses[i - 1] < witnesses[i]))
      reject(Kind::malformed, path, "not sorted or not unique at index " + std::to_string(i));
  }
}

template <class Io>
void layout(Io& io, In<ViewClaim, Io>& v) {
  io.begin(10);
  io.field("round", v.round);
  io.field("attempt", v.attempt);
  io.field("digest", v.digest);
  io.field("members", v.members);
  io.field("proposed", v.proposed);
  io.field("ready", v.ready);
  io.field("voted", v.voted);
  io.field("committed", v.committed);
  io.field("fenced", v.fenced);
  io.field("witnesses", v.witnesses);
  if constexpr (!Io::kWriting) {
    check_view_claim(v, io.path());
    check_witnesses(v.witnesses, io.path());
  }
}

template <class Io>
void layout(Io& io, In<Join, Io>& m) {
  io.begin(1);
  io.field("self", m.self);
}

template <class Io>
void layout(Io& io, In<JoinReply, Io>& m) {
  io.begin(2);
  io.field("sample", m.sample);
  io.field("seed_is_member", m.seed_is_member);
}

template <class Io>
void layout(Io& io, In<Ping, Io>& m) {
  io.begin(3);
  io.field("seq", m.seq);
  io.field("updates", m.updates);
  io.field("views", m.views);
}

template <class Io>
void layout(Io& io, In<Ack, Io>& m) {
  io.begin(3);
  io.field("seq", m.seq);
  io.field("updates", m.updates);
  io.field("views", m.views);
}

template <class Io>
void layout(Io& io, In<PingReq, Io>& m) {
  io.begin(2);
  io.field("seq", m.seq);
  io.field("target", m.target);
}

template <class Io>
void layout(Io& io, In<Gossip, Io>& m) {
  io.begin(3);
  io.field("want_reply", m.want_reply);
  io.field("updates", m.updates);
  io.field("views", m.views);
}

template <class Io>
void layout(Io& io, In<Query, Io>&) {
  io.begin(0);
}

template <class Io>
void layout(Io& io, In<QueryReply, Io>& m) {
  // last_heard_ms came after the first release of protocol version 1: a reply without it is
  // still read.
  const std::size_t fields = io.begin(2, 3);
  io.field("members", m.members);
  io.field("views", m.views);
  if (fields < 3) return;
  io.field("last_heard_ms", m.last_heard_ms);
  if constexpr (!Io::kWriting) {
    if (!m.last_heard_ms.empty() && m.last_heard_ms.size() != m.members.size())
      reject(Kind::malformed, Path(&io.path(), "last_heard_ms"),
             std::to_string(m.last_heard_ms.size()) + " entries for " +
                 std::to_string(m.members.size()) + " members");
  }
}

template <class Io>
void layout(Io& io, In<Refuse, Io>& m) {
  io.begin(2);
  io.field("reason", m.reason);
  io.field("detail", m.detail);
}

template <class Io>
void layout(Io& io, In<Unreachable, Io>& m) {
  io.begin(3);
  io.field("tried_endpoint", m.tried_endpoint);
  io.field("failing_for_ms", m.failing_for_ms);
  io.field("unanswered", m.unanswered);
}

// ---- envelope -----------------------------------------------------------------------------

// Builds the body alternative at `index` (type code - 1) from its array.
template <std::size_t I = 0>
Body read_body_v1(std::size_t index, const msgpack::object& value) {
  if constexpr (I < std::variant_size_v<Body>) {
    if (index != I) return read_body_v1<I + 1>(index, value);
    const Path path(kTypeNames[I]);
    Reader reader(value, path);
    std::variant_alternative_t<I, Body> message;
    layout(reader, message);
    return message;
  } else {
    throw Reject{Kind::malformed, "unknown message type " + std::to_string(index + 1)};
  }
}

// The envelope's own array count is read by hand so its fields can be unpacked one at a time:
// the header of a message of another version must be readable even when its body is not.
std::uint32_t read_envelope_count(const std::uint8_t* data, std::size_t size, std::size_t& off) {
  if (size == 0) throw Reject{Kind::truncated, "empty message"};
  const std::uint8_t first = data[0];
  std::size_t count_bytes = 0;
  if (first >= 0x90 && first <= 0x9f) {
    off = 1;
    return first & 0x0f;
  }
  if (first == 0xdc) count_bytes = 2;
  if (first == 0xdd) count_bytes = 4;
  if (count_bytes == 0) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "0x%02x", first);
    throw Reject{Kind::bad_magic,
                 std::string("not a gossip-rdzv message: first byte ") + hex + " is not an array"};
  }
  if (size < 1 + count_bytes) throw Reject{Kind::truncated, "message ends inside its first byte"};
  std::uint32_t count = 0;
  for (std::size_t i = 1; i <= count_bytes; ++i) count = (count << 8) | data[i];
  off = 1 + count_bytes;
  return count;
}

// Unpacks the next top-level field; the zone behind the handle owns any copied strings.
msgpack::object_handle next_field(const std::uint8_t* data, std::size_t size, std::size_t& off) {
  return msgpack::unpack(reinterpret_cast<const char*>(data), size, off, nullptr, nullptr, kLimits);
}

void check_magic(const msgpack::object& magic) {
  const std::string_view expected(kMagic);
  if (magic.type == msgpack::type::STR &&
      std::string_view(magic.via.str.ptr, magic.via.str.size) == expected) {
    return;
  }
  std::string got = std::string(type_name(magic.type));
  if (magic.type == msgpack::type::STR) {
    got = "\"" + printable(std::string_view(magic.via.str.ptr, magic.via.str.size)) + "\"";
  }
  throw Reject{Kind::bad_magic, "not a gossip-rdzv message: magic is " + got + ", expected \"" +
                                    std::string(expected) + "\""};
}

Header read_header(const std::uint8_t* data, std::size_t size, std::size_t& off,
                   std::uint32_t& count) {
  count = read_envelope_count(data, size, off);
  if (count == 0) throw Reject{Kind::bad_magic, "not a gossip-rdzv message: empty array"};
  check_magic(next_field(data, size, off).get());
  if (count < kHeaderFields) {
    throw Reject{Kind::malformed,
                 "envelope has " + std::to_string(count) + " fields, every version has at least 5"};
  }
  const Path root("header");
  Header header;
  header.version = static_cast<std::uint16_t>(
      read_unsigned(next_field(data, size, off).get(), 0xffff, Path(&root, "version")));
  header.run_id = read_string(next_field(data, size, off).get(), Path(&root, "run_id"));
  header.sender = read_string(next_field(data, size, off).get(), Path(&root, "sender"));
  header.sender_generation =
      read_unsigned(next_field(data, size, off).get(), std::numeric_limits<std::uint64_t>::max(),
                    Path(&root, "sender_generation"));
  return header;
}

// Fills `header` as soon as it is known, so that later errors can still name the sender.
Envelope decode_envelope(const std::uint8_t* data, std::size_t size,
                         std::optional<Header>& header) {
  std::size_t off = 0;
  std::uint32_t count = 0;
  header = read_header(data, size, off, count);
  if (header->version != kProtocolVersion) {
    throw Reject{Kind::version_mismatch,
                 "peer speaks protocol version " + std::to_string(header->version) +
                     ", this node speaks " + std::to_string(kProtocolVersion)};
  }
  if (count != kEnvelopeFieldsV1) {
    throw Reject{Kind::malformed, "envelope has " + std::to_string(count) + " fields, expected " +
                                      std::to_string(kEnvelopeFieldsV1)};
  }
  const std::uint64_t type =
      read_unsigned(next_field(data, size, off).get(), 0xff, Path("header.type"));
  const msgpack::object_handle body = next_field(data, size, off);
  if (off != size) {
    throw Reject{Kind::malformed, std::to_string(size - off) + " trailing bytes after the message"};
  }
  if (type == 0 || type > std::variant_size_v<Body>) {
    throw Reject{Kind::malformed, "unknown message type " + std::to_string(type)};
  }
  Envelope envelope;
  envelope.version = header->version;
  envelope.run_id = header->run_id;
  envelope.sender = header->sender;
  envelope.sender_generation = header->sender_generation;
  envelope.body = read_body_v1(type - 1, body.get());
  return envelope;
}

// msgpack reports a broken limit by exception type only; say which limit it was.
std::string overflow_detail(const msgpack::size_overflow& overflow) {
  if (dynamic_cast<const msgpack::array_size_overflow*>(&overflow)) {
    return "a list declares more than " + std::to_string(kMaxListLength) + " elements";
  }
  if (dynamic_cast<const msgpack::str_size_overflow*>(&overflow)) {
    return "a string is longer than " + std::to_string(kMaxStringBytes) + " bytes";
  }
  if (dynamic_cast<const msgpack::bin_size_overflow*>(&overflow)) {
    return "a bitset is longer than " + std::to_string(kMaxBitsetBytes) + " bytes";
  }
  return "a map or extension value larger than any message uses";
}

// Names the sender of an oversized message when its header is sound; nothing more.
std::optional<Header> header_if_readable(const std::uint8_t* data, std::size_t size) {
  try {
    std::size_t off = 0;
    std::uint32_t count = 0;
    return read_header(data, size, off, count);
  } catch (...) {
    return std::nullopt;
  }
}

DecodeResult decode_checked(const std::uint8_t* data, std::size_t size,
                            std::optional<Header>& header) {
  if (size > kMaxMessageBytes) {
    header = header_if_readable(data, size);
    throw Reject{Kind::too_large,
                 std::to_string(size) + " bytes, the limit is " + std::to_string(kMaxMessageBytes)};
  }
  return decode_envelope(data, size, header);
}

}  // namespace

MessageType message_type(const Body& body) {
  return static_cast<MessageType>(body.index() + 1);
}

std::string_view to_string(MessageType type) {
  const auto index = static_cast<std::size_t>(type) - 1;
  return index < kTypeNames.size() ? kTypeNames[index] : "unknown";
}

std::string_view to_string(DecodeError::Kind kind) {
  switch (kind) {
    case Kind::truncated:
      return "truncated";
    case Kind::bad_magic:
      return "bad_magic";
    case Kind::malformed:
      return "malformed";
    case Kind::too_large:
      return "too_large";
    case Kind::version_mismatch:
      return "version_mismatch";
  }
  return "unknown";
}

std::vector<std::uint8_t> encode(const Envelope& envelope) {
  ByteSink sink;
  msgpack::packer<ByteSink> packer(sink);
  Writer writer(packer);
  writer.begin(kEnvelopeFieldsV1);
  writer.field("magic", std::string(kMagic));
  writer.field("version", envelope.version);
  writer.field("run_id", envelope.run_id);
  writer.field("sender", envelope.sender);
  writer.field("sender_generation", envelope.sender_generation);
  packer.pack_uint8(static_cast<std::uint8_t>(message_type(envelope.body)));
  std::visit([&](const auto& body) { layout(writer, body); }, envelope.body);
  return std::move(sink.bytes);
}

DecodeResult decode(const std::uint8_t* data, std::size_t size) noexcept {
  std::optional<Header> header;
  // Every failure below becomes a value: nothing that arrives on the wire may throw past here.
  try {
    return decode_checked(data, size, header);
  } catch (const Reject& rejected) {
    return DecodeError{rejected.kind, rejected.detail, std::move(header)};
  } catch (const msgpack::depth_size_overflow&) {
    // No valid message nests this deep: a broken or hostile layout, not a big one.
    return DecodeError{Kind::malformed,
                       "values nested deeper than " + std::to_string(kMaxBodyDepth) + " levels",
                       std::move(header)};
  } catch (const msgpack::insufficient_bytes&) {
    return DecodeError{Kind::truncated, "message ends inside a value", std::move(header)};
  } catch (const msgpack::size_overflow& overflow) {
    return DecodeError{Kind::too_large, overflow_detail(overflow), std::move(header)};
  } catch (const msgpack::unpack_error& error) {
    return DecodeError{Kind::malformed, std::string("not valid msgpack: ") + error.what(),
                       std::move(header)};
  } catch (const std::bad_alloc&) {
    return DecodeError{Kind::too_large, "out of memory while decoding", std::move(header)};
  } catch (const std::exception& error) {
    return DecodeError{Kind::malformed, error.what(), std::move(header)};
  }
}

std::string describe(const DecodeError& error) {
  std::string text;
  switch (error.kind) {
    case Kind::truncated:
      text = "truncated message";
      break;
    case Kind::bad_magic:
      text = "not a gossip-rdzv message";
      break;
    case Kind::malformed:
      text = "malformed message";
      break;
    case Kind::too_large:
      text = "message too large";
      break;
    case Kind::version_mismatch:
      text = "protocol version mismatch";
      break;
  }
  text += ": " + printable(error.detail);
  if (error.kind == Kind::version_mismatch) {
    text += " (run the same gossip-rdzv release on every node)";
  }
  if (error.header) {
    text += " [from " + printable(error.header->sender) + " generation " +
            std::to_string(error.header->sender_generation) + ", run '" +
            printable(error.header->run_id) + "', protocol version " +
            std::to_string(error.header->version) + "]";
  }
  return text;
}

}  // namespace gossip_rdzv::protocol
