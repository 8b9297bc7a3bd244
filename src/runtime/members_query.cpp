// gossip_rdzv::query_members (node.hpp), what `gossip-rdzv members` and doctor's handshake
// ask: one Query to a running node or seed, repeated until its QueryReply or a refusal
// arrives, over a throwaway transport of its own.
#include <algorithm>
#include <optional>
#include <variant>

#include <spdlog/fmt/fmt.h>

#include "gossip_rdzv/config.hpp"
#include "gossip_rdzv/error.hpp"
#include "gossip_rdzv/node.hpp"
#include "protocol/codec.hpp"
#include "protocol/endpoint.hpp"
#include "runtime/auth_report.hpp"
#include "runtime/failure_report.hpp"
#include "runtime/seed_resolver.hpp"
#include "transport/keyring.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv {
namespace {

using Clock = std::chrono::steady_clock;
using runtime::endpoint_text;

// How often query_members repeats its question: the first may wait for the connection.
constexpr milliseconds kQueryResendInterval{500};

struct QueryTarget {
  protocol::Endpoint given;
  std::string ip;
};

QueryTarget resolve_query_target(const std::string& endpoint) {
  std::string why;
  const auto given = runtime::parse_seed(endpoint, &why);
  if (!given) throw Error(ErrorCode::usage, "'" + endpoint + "' is not HOST:PORT: " + why);
  const auto ip = runtime::resolve_host(given->host, given->ipv6, &why);
  if (!ip) {
    throw Error(ErrorCode::seed_unresolved, "name '" + given->host +
                                                "' does not resolve (getaddrinfo: " + why +
                                                "): check the spelling, /etc/hosts or DNS");
  }
  return QueryTarget{*given, *ip};
}

std::optional<std::vector<MemberProgress>> answer_rows(const protocol::DecodeResult& result,
                                                       const std::string& run_id) {
  if (!result.ok()) {
    const auto& error = result.error();
    if (error.kind == protocol::DecodeError::Kind::version_mismatch && error.header) {
      throw Error(
          ErrorCode::version_mismatch,
          fmt::format("{} speaks gossip-rdzv protocol version {}, this program version "
                      "{}: use the same gossip-rdzv version",
                      error.header->sender, error.header->version, protocol::kProtocolVersion));
    }
    return std::nullopt;
  }
  const protocol::Envelope& envelope = result.envelope();
  if (const auto* refuse = std::get_if<protocol::Refuse>(&envelope.body)) {
    throw runtime::refusal_error(
        protocol::PeerRefused{envelope.sender, refuse->reason, refuse->detail, false}, run_id,
        "the query");
  }
  const auto* reply = std::get_if<protocol::QueryReply>(&envelope.body);
  if (!reply) return std::nullopt;
  std::vector<MemberProgress> rows;
  for (std::size_t i = 0; i < reply->members.size(); ++i) {
    const auto& record = reply->members[i];
    std::optional<milliseconds> last_heard;
    if (i < reply->last_heard_ms.size() &&
        reply->last_heard_ms[i] != protocol::QueryReply::kNeverHeard &&
        reply->last_heard_ms[i] <= static_cast<std::uint64_t>(milliseconds::max().count())) {
      last_heard = milliseconds(static_cast<milliseconds::rep>(reply->last_heard_ms[i]));
    }
    rows.push_back(MemberProgress{record.ann.endpoint, record.ann.hostname,
                                  runtime::status_text(record.status), last_heard});
  }
  return rows;
}

}  // namespace

std::vector<MemberProgress> query_members(const std::string& endpoint, const std::string& run_id,
                                          milliseconds timeout) {
  return query_members(endpoint, run_id, timeout, std::string());
}

std::vector<MemberProgress> query_members(const std::string& endpoint, const std::string& run_id,
                                          milliseconds timeout, const std::string& key_file) {
  if (auto problem = find_run_id_problem(run_id)) {
    throw Error(ErrorCode::usage, problem->message());
  }
  transport::TransportOptions options;
  // Before any name is resolved: a key file that cannot be read is the first thing to fix.
  if (!key_file.empty()) options.keyring = transport::Keyring::load_file(key_file);
  const QueryTarget target = resolve_query_target(endpoint);
  const std::string source = runtime::self_advertise_for(target.ip);
  options.linger = milliseconds::zero();  // an unanswered query need not outlive this call
  transport::ZmqTransport client(source, 0, options);
  protocol::Envelope query;
  query.run_id = run_id;
  query.sender = endpoint_text(source, client.bound_port());
  query.body = protocol::Query{};
  const auto bytes = protocol::encode(query);
  const std::string destination = endpoint_text(target.ip, target.given.port);

  const auto deadline = Clock::now() + timeout;
  auto next_send = Clock::now();
  while (Clock::now() < deadline) {
    if (Clock::now() >= next_send) {
      client.send(destination, bytes);
      next_send = Clock::now() + kQueryResendInterval;
    }
    const auto wait = std::min(std::chrono::ceil<milliseconds>(next_send - Clock::now()),
                               std::chrono::ceil<milliseconds>(deadline - Clock::now()));
    const auto message = client.receive_from(std::max(wait, milliseconds(1)));
    if (!message) continue;
    // The node refused the query for want of the key (its notice came back on our own
    // connection). What we refuse ourselves on our inbox could come from anyone: ignored.
    if (message->refusal && !message->refusal->by_us) {
      std::optional<transport::KeyId> ours;
      if (options.keyring) ours = options.keyring->primary_id();
      throw runtime::refusal_error(runtime::key_refusal(*message->refusal, ours), run_id,
                                   "the query");
    }
    if (message->refusal) continue;
    if (auto rows = answer_rows(protocol::decode(message->bytes), run_id)) return *rows;
  }
  throw Error(ErrorCode::seed_unreachable,
              endpoint + " did not answer within " + runtime::seconds_text(timeout) + ": " +
                  runtime::explain_silent_seed(target.given.host, target.given.port));
}

}  // namespace gossip_rdzv
