// Layouts (msgpack arrays; docs/store.md has the same tables):
//   request:  [magic, version, run_id, 1, request_id, reply_to, round, at_home, op, keys,
//              values, amount, timeout_ms]
//   response: [magic, version, run_id, 2, request_id, sender, status, values, number, key,
//              detail, home]
//   member stats (a value of a stats response):
//             [member, home_requests, client_requests, forwarded, keys]
// The first six fields keep their place in every version, so a request of another version
// can still be answered with a refusal.
#include "store/store_codec.hpp"

#include <cstring>
#include <limits>
#include <new>

#include <msgpack.hpp>

namespace gossip_rdzv::store {
namespace {

constexpr std::uint64_t kTypeRequest = 1;
constexpr std::uint64_t kTypeResponse = 2;
constexpr std::size_t kRequestFields = 13;
constexpr std::size_t kResponseFields = 12;
constexpr std::size_t kHeaderFields = 6;
constexpr std::size_t kMemberStatsFields = 5;
// message > keys/values > one key or value: three levels; one spare.
constexpr std::size_t kMaxDepth = 4;
constexpr std::size_t kMaxMapEntries = 0;
constexpr std::size_t kMaxExtBytes = 0;

const msgpack::unpack_limit kLimits(kMaxKeysPerRequest, kMaxMapEntries, kMaxKeyBytes,
                                    kMaxStoreMessageBytes, kMaxExtBytes, kMaxDepth);

struct Reject {
  std::string detail;
};

[[noreturn]] void reject(const std::string& detail) {
  throw Reject{detail};
}

struct ByteSink {
  std::vector<std::uint8_t> bytes;
  void write(const char* data, std::size_t size) { bytes.insert(bytes.end(), data, data + size); }
};

class Packer {
 public:
  Packer() : packer_(sink_) {}
  void array(std::size_t size) { packer_.pack_array(static_cast<std::uint32_t>(size)); }
  void str(const std::string& text) {
    // Strings are bounded on the wire; a longer detail is cut rather than refused.
    const auto size = static_cast<std::uint32_t>(std::min(text.size(), kMaxKeyBytes));
    packer_.pack_str(size);
    packer_.pack_str_body(text.data(), size);
  }
  void bin(const Bytes& bytes) {
    packer_.pack_bin(static_cast<std::uint32_t>(bytes.size()));
    packer_.pack_bin_body(reinterpret_cast<const char*>(bytes.data()),
                          static_cast<std::uint32_t>(bytes.size()));
  }
  void u64(std::uint64_t number) { packer_.pack_uint64(number); }
  void i64(std::int64_t number) { packer_.pack_int64(number); }
  void boolean(bool flag) { flag ? packer_.pack_true() : packer_.pack_false(); }
  void header(const std::string& run_id, std::uint64_t type) {
    str(kStoreMagic);
    u64(kStoreVersion);
    str(run_id);
    u64(type);
  }
  void keys(const std::vector<std::string>& keys) {
    array(keys.size());
    for (const auto& key : keys) str(key);
  }
  void values(const std::vector<Bytes>& values) {
    array(values.size());
    for (const auto& value : values) bin(value);
  }
  std::vector<std::uint8_t> take() { return std::move(sink_.bytes); }

 private:
  ByteSink sink_;
  msgpack::packer<ByteSink> packer_;
};

std::vector<std::uint8_t> encode_request(const StoreRequest& r) {
  Packer p;
  p.array(kRequestFields);
  p.header(r.run_id, kTypeRequest);
  p.u64(r.request_id);
  p.str(r.reply_to);
  p.u64(r.round);
  p.boolean(r.at_home);
  p.u64(static_cast<std::uint8_t>(r.op));
  p.keys(r.keys);
  p.values(r.values);
  p.i64(r.amount);
  p.u64(r.timeout_ms);
  return p.take();
}

std::vector<std::uint8_t> encode_response(const StoreResponse& r) {
  Packer p;
  p.array(kResponseFields);
  p.header(r.run_id, kTypeResponse);
  p.u64(r.request_id);
  p.str(r.sender);
  p.u64(static_cast<std::uint8_t>(r.status));
  p.values(r.values);
  p.i64(r.number);
  p.str(r.key);
  p.str(r.detail);
  p.str(r.home);
  return p.take();
}

// Reads the elements of the top-level array in order, checking each type and range.
class Fields {
 public:
  explicit Fields(const msgpack::object& array) : array_(array.via.array) {}
  std::size_t size() const { return array_.size; }

  std::string str(const char* name) {
    const msgpack::object& value = next(name);
    if (value.type != msgpack::type::STR) reject(std::string(name) + ": expected a string");
    return std::string(value.via.str.ptr, value.via.str.size);
  }
  std::uint64_t u64(const char* name,
                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    const msgpack::object& value = next(name);
    if (value.type != msgpack::type::POSITIVE_INTEGER) {
      reject(std::string(name) + ": expected an unsigned integer");
    }
    if (value.via.u64 > max) reject(std::string(name) + ": value out of range");
    return value.via.u64;
  }
  std::int64_t i64(const char* name) {
    const msgpack::object& value = next(name);
    if (value.type == msgpack::type::NEGATIVE_INTEGER) return value.via.i64;
    if (value.type != msgpack::type::POSITIVE_INTEGER ||
        value.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      reject(std::string(name) + ": expected a 64-bit signed integer");
    }
    return static_cast<std::int64_t>(value.via.u64);
  }
  bool boolean(const char* name) {
    const msgpack::object& value = next(name);
    if (value.type != msgpack::type::BOOLEAN) reject(std::string(name) + ": expected a bool");
    return value.via.boolean;
  }
  std::vector<std::string> keys(const char* name) {
    const msgpack::object& list = next(name);
    if (list.type != msgpack::type::ARRAY) reject(std::string(name) + ": expected an array");
    std::vector<std::string> out;
    // No reserve(): memory grows with elements that parsed, not with the count on the wire.
    for (std::uint32_t i = 0; i < list.via.array.size; ++i) {
      const msgpack::object& key = list.via.array.ptr[i];
      if (key.type != msgpack::type::STR) reject(std::string(name) + ": expected strings");
      out.emplace_back(key.via.str.ptr, key.via.str.size);
    }
    return out;
  }
  std::vector<Bytes> values(const char* name) {
    const msgpack::object& list = next(name);
    if (list.type != msgpack::type::ARRAY) reject(std::string(name) + ": expected an array");
    std::vector<Bytes> out;
    for (std::uint32_t i = 0; i < list.via.array.size; ++i) {
      const msgpack::object& value = list.via.array.ptr[i];
      if (value.type != msgpack::type::BIN) reject(std::string(name) + ": expected binaries");
      const auto* begin = reinterpret_cast<const std::uint8_t*>(value.via.bin.ptr);
      out.emplace_back(begin, begin + value.via.bin.size);
    }
    return out;
  }

 private:
  const msgpack::object& next(const char* name) {
    if (index_ >= array_.size) reject(std::string(name) + ": missing");
    return array_.ptr[index_++];
  }
  const msgpack::object_array& array_;
  std::uint32_t index_ = 0;
};

StoreRequest read_request_header(Fields& fields, std::string run_id) {
  StoreRequest request;
  request.run_id = std::move(run_id);
  request.request_id = fields.u64("request_id");
  request.reply_to = fields.str("reply_to");
  return request;
}

// Once the header is read, a bad field is answered (refused, with the reason): a request of a
// newer client (an op this agent does not know) gets an error, not silence.
StoreMessage read_request(Fields& fields, std::string run_id,
                          std::optional<StoreRequest>& answerable) {
  StoreRequest request = read_request_header(fields, std::move(run_id));
  answerable = request;
  if (fields.size() != kRequestFields) reject("request: wrong number of fields");
  request.round =
      static_cast<std::uint32_t>(fields.u64("round", std::numeric_limits<std::uint32_t>::max()));
  request.at_home = fields.boolean("at_home");
  const auto op = fields.u64("op", kMaxOp);
  if (op == 0) reject("op: value 0 is out of range");
  request.op = static_cast<Op>(op);
  request.keys = fields.keys("keys");
  request.values = fields.values("values");
  request.amount = fields.i64("amount");
  request.timeout_ms = fields.u64("timeout_ms", kMaxTimeoutMs);
  if (const std::string why =
          shape_error(Request{request.op, request.keys, request.values, 0, std::nullopt});
      !why.empty()) {
    reject("request: " + why);
  }
  return request;
}

StoreMessage read_response(Fields& fields, std::string run_id) {
  if (fields.size() != kResponseFields) reject("response: wrong number of fields");
  StoreResponse response;
  response.run_id = std::move(run_id);
  response.request_id = fields.u64("request_id");
  response.sender = fields.str("sender");
  response.status = static_cast<Status>(fields.u64("status", kMaxStatus));
  response.values = fields.values("values");
  response.number = fields.i64("number");
  response.key = fields.str("key");
  response.detail = fields.str("detail");
  response.home = fields.str("home");
  return response;
}

StoreDecodeResult decode_checked(const std::uint8_t* data, std::size_t size,
                                 std::optional<StoreRequest>& answerable) {
  if (size > kMaxStoreMessageBytes) reject("message larger than the 4 MiB limit");
  std::size_t offset = 0;
  msgpack::object_handle handle =
      msgpack::unpack(reinterpret_cast<const char*>(data), size, offset, nullptr, nullptr, kLimits);
  if (offset != size) reject("trailing bytes after the message");
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::ARRAY || root.via.array.size < kHeaderFields) {
    reject("not a store message (expected an array of at least 6 fields)");
  }
  Fields fields(root);
  if (fields.str("magic") != kStoreMagic) reject("bad magic: not a gossip-rdzv store message");
  const std::uint64_t version = fields.u64("version");
  std::string run_id = fields.str("run_id");
  const std::uint64_t type = fields.u64("type");
  if (version != kStoreVersion) {
    if (type == kTypeRequest) answerable = read_request_header(fields, run_id);
    reject("store protocol version " + std::to_string(version) + ", this program speaks " +
           std::to_string(kStoreVersion) + ": run the same gossip-rdzv release everywhere");
  }
  if (type == kTypeRequest) return read_request(fields, std::move(run_id), answerable);
  if (type == kTypeResponse) return read_response(fields, std::move(run_id));
  reject("type " + std::to_string(type) + " is neither request (1) nor response (2)");
}

}  // namespace

bool is_store_message(const std::uint8_t* data, std::size_t size) {
  // fixarray (0x90-0x9f) or array 16 (0xdc, two length bytes), then fixstr of 4: "GRDS".
  std::size_t at = 0;
  if (size >= 1 && (data[0] & 0xf0) == 0x90) {
    at = 1;
  } else if (size >= 3 && data[0] == 0xdc) {
    at = 3;
  } else {
    return false;
  }
  return size >= at + 5 && data[at] == 0xa4 && std::memcmp(data + at + 1, kStoreMagic, 4) == 0;
}

std::vector<std::uint8_t> encode(const StoreMessage& message) {
  if (const auto* request = std::get_if<StoreRequest>(&message)) return encode_request(*request);
  return encode_response(std::get<StoreResponse>(message));
}

StoreDecodeResult decode_store(const std::uint8_t* data, std::size_t size) noexcept {
  std::optional<StoreRequest> answerable;
  try {
    return decode_checked(data, size, answerable);
  } catch (const Reject& rejected) {
    return StoreDecodeError{rejected.detail, std::move(answerable)};
  } catch (const msgpack::insufficient_bytes&) {
    return StoreDecodeError{"truncated: the message ends inside a value", std::nullopt};
  } catch (const msgpack::depth_size_overflow&) {
    return StoreDecodeError{"values nested deeper than any store message", std::nullopt};
  } catch (const msgpack::size_overflow&) {
    return StoreDecodeError{"a key, list or value over its limit", std::nullopt};
  } catch (const msgpack::unpack_error& error) {
    return StoreDecodeError{std::string("not valid msgpack: ") + error.what(), std::nullopt};
  } catch (const std::bad_alloc&) {
    return StoreDecodeError{"out of memory while decoding", std::nullopt};
  } catch (const std::exception& error) {
    return StoreDecodeError{error.what(), std::nullopt};
  }
}

Bytes encode_member_stats(const MemberStats& stats) {
  Packer p;
  p.array(kMemberStatsFields);
  p.str(stats.member);
  p.u64(stats.home_requests);
  p.u64(stats.client_requests);
  p.u64(stats.forwarded);
  p.u64(stats.keys);
  return p.take();
}

std::optional<MemberStats> decode_member_stats(const Bytes& bytes) noexcept {
  try {
    std::size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(reinterpret_cast<const char*>(bytes.data()), bytes.size(), offset, nullptr,
                        nullptr, kLimits);
    const msgpack::object& root = handle.get();
    if (offset != bytes.size() || root.type != msgpack::type::ARRAY ||
        root.via.array.size != kMemberStatsFields) {
      return std::nullopt;
    }
    Fields fields(root);
    MemberStats stats;
    stats.member = fields.str("member");
    stats.home_requests = fields.u64("home_requests");
    stats.client_requests = fields.u64("client_requests");
    stats.forwarded = fields.u64("forwarded");
    stats.keys = fields.u64("keys");
    return stats;
  } catch (...) {
    return std::nullopt;  // truncated, malformed or over a limit: not a stats record
  }
}

}  // namespace gossip_rdzv::store
