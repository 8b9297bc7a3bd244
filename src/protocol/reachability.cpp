#include "reachability.hpp"

#include <algorithm>

namespace gossip_rdzv::protocol {
namespace {

// Unanswered messages to one endpoint before we call it unreachable and tell its owner: one
// can be a connection still being set up (a lost SYN costs a second), two can be a lossy
// network (at 10% loss a probe and its ack both get through 81% of the time: two failures
// in a row 3.6%, three 0.7%); three in a row is a pattern.
constexpr std::uint32_t kUnreachableAfter = UnreachablePeer::kReportAfter;
// Endpoints remembered for reachability (members and joiners); past this many the memory is
// forgotten, so a flood of spoofed joiners cannot grow it without bound.
constexpr std::size_t kMaxReachabilityEntries = 4096;

}  // namespace

Reachability::Unanswered& Reachability::entry(const std::string& endpoint, std::uint64_t generation,
                                              Time now) {
  if (unanswered_.size() >= kMaxReachabilityEntries && !unanswered_.contains(endpoint))
    unanswered_.clear();
  Unanswered& found = unanswered_[endpoint];
  if (found.count == 0 || found.generation != generation)
    found = Unanswered{generation, 0, now, false, {}};
  return found;
}

void Reachability::note_unanswered_probe(const CoreContext& ctx, const std::string& endpoint,
                                         Time now) {
  const Member* row = ctx.table.find(endpoint);
  if (row == nullptr) return;
  ++entry(endpoint, row->ann->generation, now).count;
}

void Reachability::note_join(const CoreContext& ctx, Time now, const std::string& joiner,
                             std::uint64_t generation) {
  if (joins_answered_.size() >= kMaxReachabilityEntries && !joins_answered_.contains(joiner))
    joins_answered_.clear();
  JoinSeen& seen = joins_answered_[joiner];
  if (seen.answers == 0 || seen.generation != generation) seen = JoinSeen{generation, 0, now};
  // Answered often enough, and two probe intervals for the answers to arrive.
  if (seen.answers >= kUnreachableAfter &&
      now >= seen.first_answer_at + 2 * as_time(ctx.config.timing.probe_interval)) {
    Unanswered& found = entry(joiner, generation, seen.first_answer_at);
    found.count = std::max(found.count, seen.answers);
    found.heard_meanwhile = true;  // this very Join
    found.since = std::min(found.since, seen.first_answer_at);
  }
  ++seen.answers;  // the JoinReply the core sends now
}

void Reachability::maybe_tell(CoreContext& ctx, Time now, const Envelope& env) {
  auto it = unanswered_.find(env.sender);
  if (it == unanswered_.end()) return;
  Unanswered& found = it->second;
  if (env.sender_generation != found.generation) {
    if (env.sender_generation > found.generation) unanswered_.erase(it);  // it restarted
    return;
  }
  if (found.count == 0) return;
  found.heard_meanwhile = true;
  if (found.count < kUnreachableAfter) return;
  if (found.last_notice && now < *found.last_notice + as_time(ctx.config.timing.probe_interval))
    return;
  if (!found.last_notice)
    ctx.events.push_back(PeerUnreachable{env.sender, found.count, now - found.since});
  found.last_notice = now;
  Unreachable notice;
  notice.tried_endpoint = env.sender;
  notice.failing_for_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - found.since).count());
  notice.unanswered = found.count;
  ctx.reply(env.sender, std::move(notice));
}

void Reachability::on_notice(CoreContext& ctx, const Envelope& env, const Unreachable& notice) {
  ctx.events.push_back(UnreachableReported{
      env.sender, notice.tried_endpoint, notice.unanswered,
      std::chrono::duration_cast<Time>(std::chrono::milliseconds(notice.failing_for_ms))});
}

std::vector<UnreachablePeer> Reachability::unreachable_peers() const {
  std::vector<UnreachablePeer> peers;
  for (const auto& [endpoint, found] : unanswered_) {
    if (found.count == 0) continue;
    peers.push_back(UnreachablePeer{endpoint, found.count, found.since, found.heard_meanwhile,
                                    found.last_notice.has_value()});
  }
  std::sort(peers.begin(), peers.end(), [](const UnreachablePeer& a, const UnreachablePeer& b) {
    return a.endpoint < b.endpoint;
  });
  return peers;
}

}  // namespace gossip_rdzv::protocol
