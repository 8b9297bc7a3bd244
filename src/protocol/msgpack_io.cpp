#include "protocol/msgpack_io.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

namespace gossip_rdzv::msgpack_io {
namespace {

msgpack::unpack_limit unpack_limit(const Limits& limits) {
  return msgpack::unpack_limit(limits.array_length, limits.map_entries, limits.str_bytes,
                               limits.bin_bytes, limits.ext_bytes, limits.depth);
}

// msgpack reports a broken limit by exception type only; say which limit it was.
std::string overflow_detail(const msgpack::size_overflow& overflow, const Limits& limits) {
  if (dynamic_cast<const msgpack::array_size_overflow*>(&overflow)) {
    return "a list declares more than " + std::to_string(limits.array_length) + " elements";
  }
  if (dynamic_cast<const msgpack::str_size_overflow*>(&overflow)) {
    return "a string is longer than " + std::to_string(limits.str_bytes) + " bytes";
  }
  if (dynamic_cast<const msgpack::bin_size_overflow*>(&overflow)) {
    return "a binary value is longer than " + std::to_string(limits.bin_bytes) + " bytes";
  }
  return "a map or extension value larger than any message uses";
}

// No valid message nests this deep: a broken or hostile layout, not a big one.
Refusal too_deep(const Limits& limits) {
  return Refusal{Fault::malformed,
                 "values nested deeper than " + std::to_string(limits.depth) + " levels"};
}

}  // namespace

std::string_view to_string(Fault fault) {
  switch (fault) {
    case Fault::truncated:
      return "truncated";
    case Fault::bad_magic:
      return "bad_magic";
    case Fault::malformed:
      return "malformed";
    case Fault::too_large:
      return "too_large";
    case Fault::version_mismatch:
      return "version_mismatch";
  }
  return "unknown";
}

std::string Path::str() const {
  if (!parent_) return std::string(name_);
  if (index_ != kNoIndex) return parent_->str() + "[" + std::to_string(index_) + "]";
  return parent_->str() + "." + std::string(name_);
}

void refuse(Fault fault, const Path& path, const std::string& what) {
  throw Refusal{fault, path.str() + ": " + what};
}

// ---- reading ------------------------------------------------------------------------------

ArrayHeader read_array_header(const std::uint8_t* data, std::size_t size) noexcept {
  if (size == 0) return {};
  const std::uint8_t first = data[0];
  if (first >= 0x90 && first <= 0x9f) return {ArrayHeader::Status::ok, first & 0x0fu, 1};
  std::size_t count_bytes = 0;
  if (first == 0xdc) count_bytes = 2;
  if (first == 0xdd) count_bytes = 4;
  if (count_bytes == 0) return {ArrayHeader::Status::not_array, 0, 0};
  if (size < 1 + count_bytes) return {};
  std::uint32_t count = 0;
  for (std::size_t i = 1; i <= count_bytes; ++i) count = (count << 8) | data[i];
  return {ArrayHeader::Status::ok, count, 1 + count_bytes};
}

bool starts_with_magic(const std::uint8_t* data, std::size_t size,
                       std::string_view magic) noexcept {
  const ArrayHeader header = read_array_header(data, size);
  if (header.status != ArrayHeader::Status::ok || header.count == 0) return false;
  // fixstr: 0xa0 | length, then the bytes.
  const std::size_t at = header.bytes;
  return magic.size() < 32 && size >= at + 1 + magic.size() && data[at] == (0xa0 | magic.size()) &&
         std::memcmp(data + at + 1, magic.data(), magic.size()) == 0;
}

std::size_t max_values(std::size_t bytes, const Limits& limits) {
  if (limits.bytes_per_value == 0) return std::numeric_limits<std::size_t>::max();
  return kSpareValues + bytes / limits.bytes_per_value;
}

namespace {

// What follows a msgpack type byte: the bytes to skip and the values it contains.
struct TypeInfo {
  std::size_t length_bytes = 0;  ///< a big-endian length or count of this many bytes follows
  std::size_t fixed = 0;         ///< bytes of payload after the length (or the whole payload)
  bool counts_children = false;  ///< the length is an element count, not a byte count
  std::uint64_t per_child = 1;   ///< values per counted element (2 for a map entry)
  bool valid = true;
};

TypeInfo type_info(std::uint8_t type) {
  if (type <= 0x7f || type >= 0xe0) return {};  // fixint
  if (type <= 0x8f) return {0, 0, true, 2};     // fixmap: count in the byte
  if (type <= 0x9f) return {0, 0, true, 1};     // fixarray
  if (type <= 0xbf) return {0, static_cast<std::size_t>(type & 0x1fu)};  // fixstr
  switch (type) {
    case 0xc0:  // nil
    case 0xc2:  // false
    case 0xc3:  // true
      return {};
    case 0xc4:  // bin 8, 16, 32
    case 0xd9:  // str 8, 16, 32
      return {1, 0};
    case 0xc5:
    case 0xda:
      return {2, 0};
    case 0xc6:
    case 0xdb:
      return {4, 0};
    case 0xc7:  // ext 8, 16, 32: length, then a type byte and the data
      return {1, 1};
    case 0xc8:
      return {2, 1};
    case 0xc9:
      return {4, 1};
    case 0xca:
      return {0, 4};
    case 0xcb:
      return {0, 8};
    case 0xcc:
    case 0xd0:
      return {0, 1};
    case 0xcd:
    case 0xd1:
      return {0, 2};
    case 0xce:
    case 0xd2:
      return {0, 4};
    case 0xcf:
    case 0xd3:
      return {0, 8};
    case 0xd4:  // fixext 1, 2, 4, 8, 16: a type byte and the data
      return {0, 2};
    case 0xd5:
      return {0, 3};
    case 0xd6:
      return {0, 5};
    case 0xd7:
      return {0, 9};
    case 0xd8:
      return {0, 17};
    case 0xdc:
      return {2, 0, true, 1};
    case 0xdd:
      return {4, 0, true, 1};
    case 0xde:
      return {2, 0, true, 2};
    case 0xdf:
      return {4, 0, true, 2};
    default:  // 0xc1: never used
      return {0, 0, false, 1, false};
  }
}

}  // namespace

ValueCount count_values(const std::uint8_t* data, std::size_t size, std::size_t offset,
                        std::size_t budget, std::size_t depth) noexcept {
  depth = std::min(depth, kMaxCountDepth);
  // remaining[d]: values still to read in the container open at nesting level d (level 0:
  // the one value asked for). Each value takes at least one byte, so the loop ends with the
  // bytes whatever the counts claim; the sums stay far below 2^64.
  std::array<std::uint64_t, kMaxCountDepth + 1> remaining{};
  remaining[0] = 1;
  std::size_t level = 0;
  ValueCount result;
  while (offset < size && result.values <= budget) {
    while (level > 0 && remaining[level] == 0) --level;
    if (remaining[level] == 0) break;  // the value is complete
    --remaining[level];
    const std::uint8_t type = data[offset++];
    ++result.values;
    const TypeInfo info = type_info(type);
    if (!info.valid || size - offset < info.length_bytes) break;
    std::uint64_t length = 0;
    if (info.length_bytes == 0 && info.counts_children) length = type & 0x0fu;
    for (std::size_t i = 0; i < info.length_bytes; ++i) length = (length << 8) | data[offset++];
    if (info.counts_children) {
      if (length == 0) continue;
      if (level + 1 > depth) {
        result.too_deep = true;
        break;
      }
      remaining[++level] = length * info.per_child;
    } else {
      const std::uint64_t skip = info.fixed + length;
      if (skip > size - offset) break;
      offset += static_cast<std::size_t>(skip);
    }
  }
  return result;
}

void check_size(std::size_t size, const Limits& limits) {
  if (size <= limits.message_bytes) return;
  throw Refusal{Fault::too_large, std::to_string(size) + " bytes, the limit is " +
                                      std::to_string(limits.message_bytes)};
}

msgpack::object_handle unpack(const std::uint8_t* data, std::size_t size, std::size_t& offset,
                              const Limits& limits) {
  // Refused before msgpack allocates 24 bytes per value: a message of tiny values nested in
  // long lists would otherwise take 24 times its size.
  const std::size_t budget = max_values(size - std::min(offset, size), limits);
  const ValueCount counted = count_values(data, size, offset, budget, limits.depth);
  if (counted.too_deep) throw too_deep(limits);
  if (counted.values > budget) {
    throw Refusal{Fault::too_large, "more than " + std::to_string(budget) + " values in " +
                                        std::to_string(size - offset) + " bytes (at most one per " +
                                        std::to_string(limits.bytes_per_value) + " bytes, plus " +
                                        std::to_string(kSpareValues) + ")"};
  }
  try {
    return msgpack::unpack(reinterpret_cast<const char*>(data), size, offset, nullptr, nullptr,
                           unpack_limit(limits));
  } catch (const msgpack::depth_size_overflow&) {
    throw too_deep(limits);
  } catch (const msgpack::insufficient_bytes&) {
    throw Refusal{Fault::truncated, "message ends inside a value"};
  } catch (const msgpack::size_overflow& overflow) {
    throw Refusal{Fault::too_large, overflow_detail(overflow, limits)};
  } catch (const msgpack::unpack_error& error) {
    throw Refusal{Fault::malformed, std::string("not valid msgpack: ") + error.what()};
  }
}

msgpack::object_handle unpack_whole(const std::uint8_t* data, std::size_t size,
                                    const Limits& limits) {
  check_size(size, limits);
  std::size_t offset = 0;
  msgpack::object_handle handle = unpack(data, size, offset, limits);
  expect_end(offset, size);
  return handle;
}

void expect_end(std::size_t offset, std::size_t size) {
  if (offset == size) return;
  throw Refusal{Fault::malformed,
                std::to_string(size - offset) + " trailing bytes after the message"};
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
  refuse(
      Fault::malformed, path,
      "expected " + std::string(type_name(type)) + ", got " + std::string(type_name(value.type)));
}

std::uint64_t read_unsigned(const msgpack::object& value, std::uint64_t max, const Path& path) {
  expect_type(value, msgpack::type::POSITIVE_INTEGER, path);
  if (value.via.u64 > max) {
    refuse(Fault::malformed, path,
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
    refuse(Fault::malformed, path,
           "value is out of range " + std::to_string(min) + " to " + std::to_string(max));
  }
  return value.via.i64;
}

std::string read_string(const msgpack::object& value, const Path& path) {
  expect_type(value, msgpack::type::STR, path);
  return std::string(value.via.str.ptr, value.via.str.size);
}

bool read_bool(const msgpack::object& value, const Path& path) {
  expect_type(value, msgpack::type::BOOLEAN, path);
  return value.via.boolean;
}

Bytes read_bin(const msgpack::object& value, const Path& path) {
  expect_type(value, msgpack::type::BIN, path);
  const auto* begin = reinterpret_cast<const std::uint8_t*>(value.via.bin.ptr);
  return Bytes(begin, begin + value.via.bin.size);
}

namespace {

const msgpack::object_array& as_array(const msgpack::object& value, const Path& path) {
  expect_type(value, msgpack::type::ARRAY, path);
  return value.via.array;
}

}  // namespace

ArrayReader::ArrayReader(const msgpack::object& value, const Path& path)
    : array_(as_array(value, path)), path_(path) {}

void ArrayReader::expect_size(std::size_t fields) const {
  if (array_.size == fields) return;
  refuse(Fault::malformed, path_,
         "expected " + std::to_string(fields) + " fields, got " + std::to_string(array_.size));
}

std::size_t ArrayReader::expect_size(std::size_t least, std::size_t most) const {
  if (array_.size >= least && array_.size <= most) return array_.size;
  refuse(Fault::malformed, path_,
         "expected " + std::to_string(least) + " to " + std::to_string(most) + " fields, got " +
             std::to_string(array_.size));
}

const msgpack::object& ArrayReader::next(std::string_view name) {
  if (next_ >= array_.size) refuse(Fault::malformed, Path(&path_, name), "missing");
  return array_.ptr[next_++];
}

std::uint64_t ArrayReader::u64(std::string_view name, std::uint64_t max) {
  return read_unsigned(next(name), max, Path(&path_, name));
}

std::int64_t ArrayReader::i64(std::string_view name, std::int64_t min, std::int64_t max) {
  return read_signed(next(name), min, max, Path(&path_, name));
}

std::string ArrayReader::str(std::string_view name) {
  return read_string(next(name), Path(&path_, name));
}

bool ArrayReader::boolean(std::string_view name) {
  return read_bool(next(name), Path(&path_, name));
}

Bytes ArrayReader::bin(std::string_view name) {
  return read_bin(next(name), Path(&path_, name));
}

template <class T, class Read>
std::vector<T> ArrayReader::list(std::string_view name, Read&& read) {
  const Path path(&path_, name);
  ArrayReader items(next(name), path);
  std::vector<T> out;
  for (std::uint32_t i = 0; i < items.size(); ++i) {
    out.push_back(read(items.array_.ptr[i], Path(&path, i)));
  }
  return out;
}

std::vector<std::uint64_t> ArrayReader::u64s(std::string_view name) {
  return list<std::uint64_t>(name, [](const msgpack::object& value, const Path& path) {
    return read_unsigned(value, std::numeric_limits<std::uint64_t>::max(), path);
  });
}

std::vector<std::string> ArrayReader::strs(std::string_view name) {
  return list<std::string>(name, read_string);
}

std::vector<Bytes> ArrayReader::bins(std::string_view name) {
  return list<Bytes>(name, read_bin);
}

Refusal current_refusal() noexcept {
  try {
    throw;
  } catch (Refusal& refusal) {
    return std::move(refusal);
  } catch (const std::bad_alloc&) {
    return {Fault::too_large, "out of memory while decoding"};
  } catch (const std::exception& error) {
    return {Fault::malformed, error.what()};
  } catch (...) {
    return {Fault::malformed, "unknown error while decoding"};
  }
}

// ---- writing ------------------------------------------------------------------------------

void Writer::str(std::string_view text) {
  packer_.pack_str(static_cast<std::uint32_t>(text.size()));
  packer_.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
}

void Writer::bin(const Bytes& bytes) {
  packer_.pack_bin(static_cast<std::uint32_t>(bytes.size()));
  packer_.pack_bin_body(reinterpret_cast<const char*>(bytes.data()),
                        static_cast<std::uint32_t>(bytes.size()));
}

void Writer::u64s(const std::vector<std::uint64_t>& numbers) {
  array(numbers.size());
  for (std::uint64_t number : numbers) u64(number);
}

void Writer::strs(const std::vector<std::string>& texts) {
  array(texts.size());
  for (const std::string& text : texts) str(text);
}

void Writer::bins(const std::vector<Bytes>& values) {
  array(values.size());
  for (const Bytes& value : values) bin(value);
}

}  // namespace gossip_rdzv::msgpack_io
