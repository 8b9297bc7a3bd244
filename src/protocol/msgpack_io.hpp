// The bounded msgpack reader and writer both wire codecs are built on: the gossip codec
// (codec.cpp) and the store codec (store/store_codec.cpp). Each codec brings its own Limits
// table; everything here enforces them the same way.
//
//   const Limits limits{.message_bytes = 4 << 20, .depth = 4, ...};
//   try {
//     msgpack::object_handle root = unpack_whole(data, size, limits);
//     ArrayReader fields(root.get(), Path("request"));
//     fields.expect_size(3);
//     std::uint64_t id = fields.u64("id");               // "request.id: expected ..."
//     std::string name = fields.str("name");
//   } catch (...) {
//     Refusal why = current_refusal();                    // never a crash, never a throw
//   }
//
// The promises a decoder gets: a value over any limit is refused before it is allocated, a
// wrong type or a cut message is a Refusal naming where it happened, and memory use is
// bounded by a small multiple of the input: msgpack spends 24 bytes (one msgpack::object)
// per value however few bytes the value takes on the wire, so before unpacking, the values
// are counted without allocating and more than max_values(bytes) of them are refused. That
// bounds what one unpack allocates to about 24 * max_values(bytes) + bytes (the copied
// strings): 13 times the input for a large one (docs/wire-format.md, "Limits").
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

namespace gossip_rdzv::msgpack_io {

using Bytes = std::vector<std::uint8_t>;

/// What a decoder accepts. Every value here is an upper bound; input over one is refused,
/// never truncated.
struct Limits {
  std::size_t message_bytes = 0;  ///< the whole message
  std::size_t depth = 0;          ///< nesting of arrays and maps, the message itself included
  std::size_t array_length = 0;   ///< elements of any one array
  std::size_t map_entries = 0;    ///< entries of any one map (0: messages use none)
  std::size_t str_bytes = 0;      ///< bytes of any one string
  std::size_t bin_bytes = 0;      ///< bytes of any one binary value
  std::size_t ext_bytes = 0;      ///< bytes of any one extension value (0: messages use none)
  /// The fewest wire bytes per msgpack value, on average, over a whole unpacked value (see
  /// max_values); 0: no bound. No message of either codec averages 2 bytes or fewer.
  std::size_t bytes_per_value = 2;
};

/// Values that unpacking `bytes` bytes under `limits` may create: kSpareValues +
/// bytes / limits.bytes_per_value (no bound when bytes_per_value is 0).
std::size_t max_values(std::size_t bytes, const Limits& limits);
inline constexpr std::size_t kSpareValues = 64;

/// What count_values() found.
struct ValueCount {
  std::size_t values = 0;  ///< stops at budget + 1
  bool too_deep = false;   ///< arrays or maps nested deeper than the depth asked for
};
/// Counts the msgpack values (every array, map key and value, scalar and string counts one)
/// of the one value at data[offset..size) without allocating, stopping at `budget` + 1 or at
/// nesting deeper than `depth` (at most kMaxCountDepth). Stops early, with the count so far,
/// where the bytes end or are not msgpack: unpack() then reports that.
inline constexpr std::size_t kMaxCountDepth = 32;
ValueCount count_values(const std::uint8_t* data, std::size_t size, std::size_t offset,
                        std::size_t budget, std::size_t depth) noexcept;

/// Why input was refused.
enum class Fault {
  truncated,         ///< the bytes end inside a value
  bad_magic,         ///< not a message of this codec at all
  malformed,         ///< wrong types, wrong field counts, values out of range, trailing bytes
  too_large,         ///< over message_bytes, or a string / array / binary over its limit
  version_mismatch,  ///< a well-formed header of another version
};
std::string_view to_string(Fault fault);

/// Thrown by the readers below; current_refusal() turns any exception into one.
struct Refusal {
  Fault fault = Fault::malformed;
  std::string detail;  ///< what is wrong and where, e.g. "Ping.updates[3].status: value 7 ..."
};

/// Where a value sits in a message, for error details ("Ping.updates[3].ann.host"). Built on
/// the stack (a child points at its parent) and only turned into a string when something is
/// wrong.
class Path {
 public:
  explicit Path(std::string_view root) : name_(root) {}
  Path(const Path* parent, std::string_view name) : parent_(parent), name_(name) {}
  Path(const Path* parent, std::size_t index) : parent_(parent), index_(index) {}

  std::string str() const;

 private:
  static constexpr std::size_t kNoIndex = std::numeric_limits<std::size_t>::max();
  const Path* parent_ = nullptr;
  std::string_view name_;
  std::size_t index_ = kNoIndex;
};

/// Throws Refusal{fault, "<path>: <what>"}.
[[noreturn]] void refuse(Fault fault, const Path& path, const std::string& what);

// ---- reading ------------------------------------------------------------------------------

/// The array header at the start of `data`: its element count and its own length in bytes.
struct ArrayHeader {
  enum class Status { ok, not_array, truncated };
  Status status = Status::truncated;
  std::uint32_t count = 0;
  std::size_t bytes = 0;
};
/// Reads only the header, so a message's fields can be unpacked one at a time.
ArrayHeader read_array_header(const std::uint8_t* data, std::size_t size) noexcept;
/// Whether `data` is an array whose first element is the string `magic` (under 32 bytes).
bool starts_with_magic(const std::uint8_t* data, std::size_t size, std::string_view magic) noexcept;

/// Refuses (too_large) a message over limits.message_bytes.
void check_size(std::size_t size, const Limits& limits);
/// Unpacks the one value at data[offset..size) and moves `offset` past it. The handle owns
/// what the value points into. Throws Refusal naming the broken limit, never a msgpack error.
msgpack::object_handle unpack(const std::uint8_t* data, std::size_t size, std::size_t& offset,
                              const Limits& limits);
/// check_size, unpack, and refuses bytes after the value.
msgpack::object_handle unpack_whole(const std::uint8_t* data, std::size_t size,
                                    const Limits& limits);
/// Refuses (malformed) input that goes on after `offset`.
void expect_end(std::size_t offset, std::size_t size);

/// "unsigned integer", "string", ...: msgpack type names for error details.
std::string_view type_name(msgpack::type::object_type type);
/// Refuses (malformed) a value of another type: "<path>: expected string, got array".
void expect_type(const msgpack::object& value, msgpack::type::object_type type, const Path& path);

std::uint64_t read_unsigned(const msgpack::object& value, std::uint64_t max, const Path& path);
std::int64_t read_signed(const msgpack::object& value, std::int64_t min, std::int64_t max,
                         const Path& path);
std::string read_string(const msgpack::object& value, const Path& path);
bool read_bool(const msgpack::object& value, const Path& path);
Bytes read_bin(const msgpack::object& value, const Path& path);

/// Reads the elements of one msgpack array in order, checking each type and range. Lists are
/// filled as their elements parse (no reserve() from a count on the wire).
class ArrayReader {
 public:
  /// Refuses a value that is not an array. `path` names the array.
  ArrayReader(const msgpack::object& value, const Path& path);

  std::size_t size() const { return array_.size; }
  const Path& path() const { return path_; }
  /// Refuses an array of another length.
  void expect_size(std::size_t fields) const;
  /// Refuses an array shorter than `least` or longer than `most`; returns its length.
  std::size_t expect_size(std::size_t least, std::size_t most) const;

  /// The next element as it is; refuses when there is none left ("<path>.<name>: missing").
  const msgpack::object& next(std::string_view name);
  std::uint64_t u64(std::string_view name,
                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
  std::int64_t i64(std::string_view name,
                   std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                   std::int64_t max = std::numeric_limits<std::int64_t>::max());
  std::string str(std::string_view name);
  bool boolean(std::string_view name);
  Bytes bin(std::string_view name);
  std::vector<std::uint64_t> u64s(std::string_view name);
  std::vector<std::string> strs(std::string_view name);
  std::vector<Bytes> bins(std::string_view name);

 private:
  // Reads the next element as an array and every one of its elements with `read`.
  template <class T, class Read>
  std::vector<T> list(std::string_view name, Read&& read);

  const msgpack::object_array& array_;
  Path path_;  // the paths of its elements point at it
  std::uint32_t next_ = 0;
};

/// Inside a catch block: whatever was thrown while decoding, as a Refusal (out of memory is
/// too_large; anything else unexpected is malformed). Never throws.
Refusal current_refusal() noexcept;

// ---- writing ------------------------------------------------------------------------------

/// Appends msgpack values to a byte buffer, each in its shortest form. It checks no limit:
/// each codec keeps what it writes within the limits its readers enforce.
class Writer {
 public:
  Writer() : packer_(sink_) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void array(std::size_t length) { packer_.pack_array(static_cast<std::uint32_t>(length)); }
  void str(std::string_view text);
  void bin(const Bytes& bytes);
  void u64(std::uint64_t number) { packer_.pack_uint64(number); }
  void i64(std::int64_t number) { packer_.pack_int64(number); }
  void boolean(bool flag) { flag ? packer_.pack_true() : packer_.pack_false(); }
  void u64s(const std::vector<std::uint64_t>& numbers);
  void strs(const std::vector<std::string>& texts);
  void bins(const std::vector<Bytes>& values);

  /// The bytes written so far; the writer is empty afterwards.
  Bytes take() { return std::move(sink_.bytes); }

 private:
  // msgpack's packer wants a stream with write().
  struct Sink {
    Bytes bytes;
    void write(const char* data, std::size_t size) { bytes.insert(bytes.end(), data, data + size); }
  };
  Sink sink_;
  msgpack::packer<Sink> packer_;
};

}  // namespace gossip_rdzv::msgpack_io
