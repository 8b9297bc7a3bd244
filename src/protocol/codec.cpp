// The msgpack layout of every message, declared once per struct in a `layout` function that
// both the Writer and the Reader run, so the two directions cannot drift apart.
// docs/wire-format.md documents the same layouts in tables.
#include "codec.hpp"

#include <array>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <utility>

#include "msgpack_io.hpp"

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

// What the reader accepts. msgpack allocates an array's element table when it reads the
// count, before the elements arrive; these limits bound that allocation whatever the count on
// the wire says.
const msgpack_io::Limits kLimits{.message_bytes = kMaxMessageBytes,
                                 .depth = kMaxBodyDepth,
                                 .array_length = kMaxListLength,
                                 .map_entries = kMaxMapEntries,
                                 .str_bytes = kMaxStringBytes,
                                 .bin_bytes = kMaxBitsetBytes,
                                 .ext_bytes = kMaxExtBytes};

using Kind = DecodeError::Kind;
using msgpack_io::Fault;
using msgpack_io::Path;
using msgpack_io::Refusal;

// The codec's kinds are the reader's faults, value for value.
static_assert(int(Kind::truncated) == int(Fault::truncated));
static_assert(int(Kind::bad_magic) == int(Fault::bad_magic));
static_assert(int(Kind::malformed) == int(Fault::malformed));
static_assert(int(Kind::too_large) == int(Fault::too_large));
static_assert(int(Kind::version_mismatch) == int(Fault::version_mismatch));
Fault fault(Kind kind) {
  return static_cast<Fault>(kind);
}

// Refusals unwind from a field deep inside a nested list to decode(): shorter and clearer
// than threading an error value through every reader.
[[noreturn]] void reject(Kind kind, const Path& path, const std::string& what) {
  msgpack_io::refuse(fault(kind), path, what);
}
[[noreturn]] void reject(Kind kind, std::string detail) {
  throw Refusal{fault(kind), std::move(detail)};
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

// ---- the two directions ------------------------------------------------------------------

template <class T, class Io>
using In = std::conditional_t<Io::kWriting, const T, T>;

// Writes each field as the layout names it; msgpack_io::Writer does the packing.
class Writer {
 public:
  static constexpr bool kWriting = true;
  explicit Writer(msgpack_io::Writer& out) : out_(out) {}

  void begin(std::size_t fields) { out_.array(fields); }
  /// A body that gained trailing fields: written with all of them.
  std::size_t begin(std::size_t, std::size_t most) {
    begin(most);
    return most;
  }
  void field(std::string_view, const std::string& text) { out_.str(text); }
  void field(std::string_view, std::uint64_t number) { out_.u64(number); }
  void field(std::string_view, const std::vector<std::uint64_t>& numbers) { out_.u64s(numbers); }
  void field(std::string_view, const std::vector<std::uint32_t>& numbers) {
    out_.array(numbers.size());
    for (const std::uint32_t number : numbers) out_.u64(number);
  }
  void field(std::string_view, std::uint32_t number) { out_.u64(number); }
  void field(std::string_view, std::uint16_t number) { out_.u64(number); }
  void field(std::string_view, std::int32_t number) { out_.i64(number); }
  void field(std::string_view, bool flag) { out_.boolean(flag); }
  void field(std::string_view, MemberStatus status) { out_.u64(std::uint8_t(status)); }
  void field(std::string_view, RefuseReason reason) { out_.u64(std::uint8_t(reason)); }
  void field(std::string_view, const std::vector<std::string>& texts) { out_.strs(texts); }
  // Bitsets travel as msgpack binary, one bit per member.
  void field(std::string_view, const std::vector<std::uint8_t>& bits) { out_.bin(bits); }
  template <class T>
  void field(std::string_view, const std::vector<T>& items) {
    out_.array(items.size());
    for (const T& item : items) layout(*this, item);
  }
  template <class T>
  void field(std::string_view, const T& nested) {
    layout(*this, nested);
  }

 private:
  msgpack_io::Writer& out_;
};

// Reads the fields of one msgpack array in order into the layout's fields; the
// msgpack_io::ArrayReader checks each type and range.
class Reader {
 public:
  static constexpr bool kWriting = false;
  Reader(const msgpack::object& value, const Path& path) : in_(value, path) {}

  void begin(std::size_t fields) { in_.expect_size(fields); }
  /// A body that gained trailing fields: accepts `least` to `most` of them and returns how
  /// many came (the layout reads only those).
  std::size_t begin(std::size_t least, std::size_t most) { return in_.expect_size(least, most); }
  void field(std::string_view name, std::string& text) { text = in_.str(name); }
  void field(std::string_view name, std::vector<std::uint64_t>& numbers) {
    numbers = in_.u64s(name);
  }
  void field(std::string_view name, std::vector<std::uint32_t>& numbers) {
    numbers.clear();
    for (const std::uint64_t number : in_.u64s(name)) {
      if (number > std::numeric_limits<std::uint32_t>::max())
        reject(Kind::malformed, Path(&path(), name),
               "value " + std::to_string(number) + " does not fit 32 bits");
      numbers.push_back(static_cast<std::uint32_t>(number));
    }
  }
  void field(std::string_view name, std::uint64_t& number) { number = in_.u64(name); }
  void field(std::string_view name, std::uint32_t& number) {
    number = static_cast<std::uint32_t>(in_.u64(name, std::numeric_limits<std::uint32_t>::max()));
  }
  void field(std::string_view name, std::uint16_t& number) {
    number = static_cast<std::uint16_t>(in_.u64(name, std::numeric_limits<std::uint16_t>::max()));
  }
  void field(std::string_view name, std::int32_t& number) {
    number = static_cast<std::int32_t>(in_.i64(name, std::numeric_limits<std::int32_t>::min(),
                                               std::numeric_limits<std::int32_t>::max()));
  }
  void field(std::string_view name, bool& flag) { flag = in_.boolean(name); }
  void field(std::string_view name, MemberStatus& status) {
    status = static_cast<MemberStatus>(in_.u64(name, 2));
  }
  void field(std::string_view name, RefuseReason& reason) {
    const std::uint64_t code = in_.u64(name, 3);
    if (code == 0) reject(Kind::malformed, Path(&path(), name), "value 0 is out of range 1-3");
    reason = static_cast<RefuseReason>(code);
  }
  void field(std::string_view name, std::vector<std::string>& texts) { texts = in_.strs(name); }
  void field(std::string_view name, std::vector<std::uint8_t>& bits) { bits = in_.bin(name); }
  template <class T>
  void field(std::string_view name, std::vector<T>& items) {
    const Path path(&this->path(), name);
    msgpack_io::ArrayReader list(in_.next(name), path);
    items.clear();
    // No reserve(): memory grows with elements that parsed, not with the count on the wire.
    for (std::size_t i = 0; i < list.size(); ++i) {
      Reader element(list.next(name), Path(&path, i));
      layout(element, items.emplace_back());
    }
  }
  template <class T>
  void field(std::string_view name, T& nested) {
    Reader inner(in_.next(name), Path(&path(), name));
    layout(inner, nested);
  }

  const Path& path() const { return in_.path(); }

 private:
  msgpack_io::ArrayReader in_;  // children point at its path, so it outlives their Readers
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
  io.begin(4);
  io.field("ann", r.ann);
  io.field("incarnation", r.incarnation);
  io.field("status", r.status);
  io.field("accuser", r.accuser);
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
    if (!v.seniors.empty())
      reject(Kind::malformed, Path(&path, "seniors"), "seniors in a claim by reference");
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
  std::vector<bool> seen(v.members.size(), false);
  for (std::size_t i = 0; i < v.seniors.size(); ++i) {
    const std::uint32_t index = v.seniors[i];
    if (index >= v.members.size() || seen[index]) {
      reject(Kind::malformed, Path(&path, "seniors"),
             "index " + std::to_string(index) + " at " + std::to_string(i) +
                 (index >= v.members.size()
                      ? " is past the " + std::to_string(v.members.size()) + " members"
                      : " appears twice"));
    }
    seen[index] = true;
  }
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
  io.begin(11);
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
  io.field("seniors", v.seniors);
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
    reject(Kind::malformed, "unknown message type " + std::to_string(index + 1));
  }
}

// The envelope's own array count is read by hand so its fields can be unpacked one at a time:
// the header of a message of another version must be readable even when its body is not.
std::uint32_t read_envelope_count(const std::uint8_t* data, std::size_t size, std::size_t& off) {
  if (size == 0) reject(Kind::truncated, "empty message");
  const msgpack_io::ArrayHeader envelope = msgpack_io::read_array_header(data, size);
  if (envelope.status == msgpack_io::ArrayHeader::Status::not_array) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "0x%02x", data[0]);
    reject(Kind::bad_magic,
           std::string("not a gossip-rdzv message: first byte ") + hex + " is not an array");
  }
  if (envelope.status == msgpack_io::ArrayHeader::Status::truncated) {
    reject(Kind::truncated, "message ends inside its first byte");
  }
  off = envelope.bytes;
  return envelope.count;
}

// Unpacks the next top-level field; the zone behind the handle owns any copied strings.
msgpack::object_handle next_field(const std::uint8_t* data, std::size_t size, std::size_t& off) {
  return msgpack_io::unpack(data, size, off, kLimits);
}

void check_magic(const msgpack::object& magic) {
  const std::string_view expected(kMagic);
  if (magic.type == msgpack::type::STR &&
      std::string_view(magic.via.str.ptr, magic.via.str.size) == expected) {
    return;
  }
  std::string got = std::string(msgpack_io::type_name(magic.type));
  if (magic.type == msgpack::type::STR) {
    got = "\"" + printable(std::string_view(magic.via.str.ptr, magic.via.str.size)) + "\"";
  }
  reject(Kind::bad_magic, "not a gossip-rdzv message: magic is " + got + ", expected \"" +
                              std::string(expected) + "\"");
}

Header read_header(const std::uint8_t* data, std::size_t size, std::size_t& off,
                   std::uint32_t& count) {
  count = read_envelope_count(data, size, off);
  if (count == 0) reject(Kind::bad_magic, "not a gossip-rdzv message: empty array");
  check_magic(next_field(data, size, off).get());
  if (count < kHeaderFields) {
    reject(Kind::malformed,
           "envelope has " + std::to_string(count) + " fields, every version has at least 5");
  }
  const Path root("header");
  Header header;
  header.version = static_cast<std::uint16_t>(
      msgpack_io::read_unsigned(next_field(data, size, off).get(), 0xffff, Path(&root, "version")));
  header.run_id = msgpack_io::read_string(next_field(data, size, off).get(), Path(&root, "run_id"));
  header.sender = msgpack_io::read_string(next_field(data, size, off).get(), Path(&root, "sender"));
  header.sender_generation = msgpack_io::read_unsigned(next_field(data, size, off).get(),
                                                       std::numeric_limits<std::uint64_t>::max(),
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
    reject(Kind::version_mismatch, "peer speaks protocol version " +
                                       std::to_string(header->version) + ", this node speaks " +
                                       std::to_string(kProtocolVersion));
  }
  if (count != kEnvelopeFieldsV1) {
    reject(Kind::malformed, "envelope has " + std::to_string(count) + " fields, expected " +
                                std::to_string(kEnvelopeFieldsV1));
  }
  const std::uint64_t type =
      msgpack_io::read_unsigned(next_field(data, size, off).get(), 0xff, Path("header.type"));
  const msgpack::object_handle body = next_field(data, size, off);
  msgpack_io::expect_end(off, size);
  if (type == 0 || type > std::variant_size_v<Body>) {
    reject(Kind::malformed, "unknown message type " + std::to_string(type));
  }
  Envelope envelope;
  envelope.version = header->version;
  envelope.run_id = header->run_id;
  envelope.sender = header->sender;
  envelope.sender_generation = header->sender_generation;
  envelope.body = read_body_v1(type - 1, body.get());
  return envelope;
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
  if (size > kLimits.message_bytes) header = header_if_readable(data, size);
  msgpack_io::check_size(size, kLimits);
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
  return msgpack_io::to_string(fault(kind));
}

std::vector<std::uint8_t> encode(const Envelope& envelope) {
  msgpack_io::Writer out;
  Writer writer(out);
  writer.begin(kEnvelopeFieldsV1);
  writer.field("magic", std::string(kMagic));
  writer.field("version", envelope.version);
  writer.field("run_id", envelope.run_id);
  writer.field("sender", envelope.sender);
  writer.field("sender_generation", envelope.sender_generation);
  out.u64(static_cast<std::uint8_t>(message_type(envelope.body)));
  std::visit([&](const auto& body) { layout(writer, body); }, envelope.body);
  return out.take();
}

DecodeResult decode(const std::uint8_t* data, std::size_t size) noexcept {
  std::optional<Header> header;
  // Every failure below becomes a value: nothing that arrives on the wire may throw past here.
  try {
    return decode_checked(data, size, header);
  } catch (...) {
    Refusal refusal = msgpack_io::current_refusal();
    return DecodeError{static_cast<Kind>(refusal.fault), std::move(refusal.detail),
                       std::move(header)};
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
