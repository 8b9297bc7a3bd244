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

#include <limits>
#include <string_view>

#include "protocol/msgpack_io.hpp"

namespace gossip_rdzv::store {
namespace {

using msgpack_io::ArrayReader;
using msgpack_io::Path;

constexpr std::uint64_t kTypeRequest = 1;
constexpr std::uint64_t kTypeResponse = 2;
constexpr std::size_t kRequestFields = 13;
constexpr std::size_t kResponseFields = 12;
constexpr std::size_t kHeaderFields = 6;
constexpr std::size_t kMemberStatsFields = 5;

// message > keys/values > one key or value: three levels; one spare. Maps and extension
// values appear in no store message.
const msgpack_io::Limits kLimits{.message_bytes = kMaxStoreMessageBytes,
                                 .depth = 4,
                                 .array_length = kMaxKeysPerRequest,
                                 .map_entries = 0,
                                 .str_bytes = kMaxKeyBytes,
                                 .bin_bytes = kMaxStoreMessageBytes,
                                 .ext_bytes = 0};

[[noreturn]] void reject(std::string detail) {
  throw msgpack_io::Refusal{msgpack_io::Fault::malformed, std::move(detail)};
}

// msgpack_io::Writer with the store's own rule for strings: they are bounded on the wire, so
// a longer detail is cut rather than refused.
class Packer : public msgpack_io::Writer {
 public:
  void str(std::string_view text) { Writer::str(text.substr(0, kMaxKeyBytes)); }
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
  p.bins(r.values);
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
  p.bins(r.values);
  p.i64(r.number);
  p.str(r.key);
  p.str(r.detail);
  p.str(r.home);
  return p.take();
}

StoreRequest read_request_header(ArrayReader& fields, std::string run_id) {
  StoreRequest request;
  request.run_id = std::move(run_id);
  request.request_id = fields.u64("request_id");
  request.reply_to = fields.str("reply_to");
  return request;
}

// Once the header is read, a bad field is answered (refused, with the reason): a request of a
// newer client (an op this agent does not know) gets an error, not silence.
StoreMessage read_request(ArrayReader& fields, std::string run_id,
                          std::optional<StoreRequest>& answerable) {
  StoreRequest request = read_request_header(fields, std::move(run_id));
  answerable = request;
  fields.expect_size(kRequestFields);
  request.round =
      static_cast<std::uint32_t>(fields.u64("round", std::numeric_limits<std::uint32_t>::max()));
  request.at_home = fields.boolean("at_home");
  const auto op = fields.u64("op", kMaxOp);
  if (op == 0) reject("store.op: value 0 is out of range 1-" + std::to_string(kMaxOp));
  request.op = static_cast<Op>(op);
  request.keys = fields.strs("keys");
  request.values = fields.bins("values");
  request.amount = fields.i64("amount");
  request.timeout_ms = fields.u64("timeout_ms", kMaxTimeoutMs);
  if (const std::string why =
          shape_error(Request{request.op, request.keys, request.values, 0, std::nullopt});
      !why.empty()) {
    reject("request: " + why);
  }
  return request;
}

StoreMessage read_response(ArrayReader& fields, std::string run_id) {
  fields.expect_size(kResponseFields);
  StoreResponse response;
  response.run_id = std::move(run_id);
  response.request_id = fields.u64("request_id");
  response.sender = fields.str("sender");
  response.status = static_cast<Status>(fields.u64("status", kMaxStatus));
  response.values = fields.bins("values");
  response.number = fields.i64("number");
  response.key = fields.str("key");
  response.detail = fields.str("detail");
  response.home = fields.str("home");
  return response;
}

StoreDecodeResult decode_checked(const std::uint8_t* data, std::size_t size,
                                 std::optional<StoreRequest>& answerable) {
  const msgpack::object_handle handle = msgpack_io::unpack_whole(data, size, kLimits);
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::ARRAY || root.via.array.size < kHeaderFields) {
    reject("not a store message (expected an array of at least 6 fields)");
  }
  const Path path("store");
  ArrayReader fields(root, path);
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
  return msgpack_io::starts_with_magic(data, size, kStoreMagic);
}

std::vector<std::uint8_t> encode(const StoreMessage& message) {
  if (const auto* request = std::get_if<StoreRequest>(&message)) return encode_request(*request);
  return encode_response(std::get<StoreResponse>(message));
}

StoreDecodeResult decode_store(const std::uint8_t* data, std::size_t size) noexcept {
  std::optional<StoreRequest> answerable;
  try {
    return decode_checked(data, size, answerable);
  } catch (...) {
    return StoreDecodeError{msgpack_io::current_refusal().detail, std::move(answerable)};
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
    const msgpack::object_handle handle =
        msgpack_io::unpack_whole(bytes.data(), bytes.size(), kLimits);
    const Path path("member_stats");
    ArrayReader fields(handle.get(), path);
    fields.expect_size(kMemberStatsFields);
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
