#include "agreement_link.hpp"

#include <algorithm>

#include "dissemination.hpp"

namespace gossip_rdzv::protocol {

AgreementLink::AgreementLink(const CoreContext& ctx)
    : witness_(ctx.config.self.endpoint, ctx.config.round) {}

bool AgreementLink::step(CoreContext& ctx, Time now, bool joined) {
  if (ctx.config.seed_only || config_fatal_) return false;
  // Given a seed that is not ourselves, we agree only once we have heard from our run:
  // alone we would commit a view of one (with MIN 1) before learning that the seed belongs
  // to another run or already holds the members. A member among several seeds may start a
  // round alone, as the only seed does.
  if (!joined && !ctx.listed_seed) return false;
  if (ctx.agreement.step(now, ctx.table)) ctx.dirty = true;
  return true;
}

void AgreementLink::learn_views(CoreContext& ctx, const std::vector<ViewClaim>& claims,
                                const std::string& via, std::uint64_t via_generation, Time now,
                                Dissemination& dissemination) {
  if (ctx.config.seed_only) return;
  const MemberKey sender{via, via_generation};
  for (const auto& claim : claims) {
    if (ctx.agreement.merge(claim, &sender)) ctx.dirty = true;
    if (names_members_we_lack(ctx, claim)) dissemination.pull_table(ctx, via, now);
  }
  // We may hold a view before our table has all its members (Agreement::valid); claims by
  // reference no longer name them, so ask the peers that talk about it for their tables.
  if (ctx.agreement.held_size() > ctx.table.rows().size()) dissemination.pull_table(ctx, via, now);
}

// A view that names us and more members than our table has rows: the sender knows members
// we missed (a late joiner whose rumours were already spent). Epidemic push leaves such a
// tail, which would otherwise wait for the next periodic push-pull. (Members we know but
// think dead do not count: pulling a table every gossip period under loss costs a lot and
// brings no row we lack.)
bool AgreementLink::names_members_we_lack(const CoreContext& ctx, const ViewClaim& claim) const {
  if (claim.round != ctx.config.round || claim.members.size() <= ctx.table.rows().size())
    return false;
  const MemberKey self{ctx.config.self.endpoint, ctx.config.self.generation};
  return std::binary_search(claim.members.begin(), claim.members.end(), self);
}

// A dedicated seed is a base endpoint: members that voted for a view ask it to witness
// (witness.hpp); it answers with its copy of each view it knows, its witness included.
void AgreementLink::answer_as_witness(CoreContext& ctx, const std::string& asker,
                                      const std::vector<ViewClaim>& claims) {
  if (claims.empty()) return;
  Gossip answer;
  for (const auto& claim : claims) {
    witness_.merge(claim);
    auto mine = witness_.answer(claim);
    // Only what the asker lacks: a committed member answers every message from outside
    // its view with the outcome, and an answer to that would never end.
    if (mine && !std::includes(claim.witnesses.begin(), claim.witnesses.end(),
                               mine->witnesses.begin(), mine->witnesses.end())) {
      answer.views.push_back(std::move(*mine));
    }
  }
  if (!answer.views.empty()) ctx.send(asker, std::move(answer));
}

void AgreementLink::ask_witnesses(CoreContext& ctx) const {
  const auto seeds = ctx.agreement.witnesses_wanted();
  if (seeds.empty()) return;
  const auto claims = ctx.agreement.claims_to_send();
  for (const auto& seed : seeds) {
    Gossip request;
    request.views = claims;
    ctx.send(seed, std::move(request));
  }
}

// Earlier processes of ours have an older generation and, being on this machine, our host
// name. Two nodes that advertise the same address:port (a copied --advertise, a host name
// resolving to 127.0.1.1 on both) would otherwise replace each other in everyone's table as
// if restarted.
bool AgreementLink::other_process_at_our_endpoint(CoreContext& ctx, const Announcement& ann) {
  const Announcement& self = ctx.config.self;
  if (ann.node_id == self.node_id) return false;
  if (ann.generation < self.generation && ann.hostname == self.hostname) return false;
  if (config_fatal_) return true;
  config_fatal_ = true;
  ctx.events.push_back(
      Fatal{ErrorCode::usage,
            "node " + ann.hostname + " advertises the same endpoint " + ann.endpoint +
                " as this node (" + self.hostname +
                "); every node needs an address:port of its own that the others can dial: give "
                "each node its own --advertise address (or --listen port), and check that the "
                "host name does not resolve to a loopback address such as 127.0.1.1"});
  return true;
}

void AgreementLink::check_peer(CoreContext& ctx, const Announcement& ann) {
  check_sizes(ctx, ann);
  check_seed_list(ctx, ann);
}

void AgreementLink::check_sizes(CoreContext& ctx, const Announcement& ann) {
  const CoreConfig& config = ctx.config;
  if (config.seed_only || config_fatal_) return;
  if (ann.min_nodes == config.min_nodes && ann.max_nodes == config.max_nodes) return;
  config_fatal_ = true;
  auto sizes = [](std::uint32_t lo, std::uint32_t hi) {
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + ":" + std::to_string(hi);
  };
  ctx.events.push_back(
      Fatal{ErrorCode::usage,
            "node " + ann.hostname + " (" + ann.endpoint + ") was started with --nnodes " +
                sizes(ann.min_nodes, ann.max_nodes) + " but this node with --nnodes " +
                sizes(config.min_nodes, config.max_nodes) + "; start every node of run '" +
                config.run_id + "' with the same --nnodes"});
}

/// The seed list is round 0's quorum base: nodes started with different lists could each
/// win their own base, so they never hold the same view; say so instead of timing out.
void AgreementLink::check_seed_list(CoreContext& ctx, const Announcement& ann) {
  const CoreConfig& config = ctx.config;
  if (config.seed_only || config_fatal_ || ctx.agreement.committed() ||
      ctx.agreement.not_admitted())
    return;
  if (ann.seeds_digest == config.self.seeds_digest) return;
  config_fatal_ = true;
  ctx.events.push_back(Fatal{
      ErrorCode::usage, "node " + ann.hostname + " (" + ann.endpoint +
                            ") was started with another --seed list than this node (" +
                            seed_list_text(ctx) + "); start every node of run '" + config.run_id +
                            "' with the same --seed list (a seed name must resolve to the same "
                            "addresses on every node): it decides which group may agree "
                            "(docs/protocol.md, \"Quorum base\")"});
}

std::string AgreementLink::seed_list_text(const CoreContext& ctx) const {
  std::string text;
  for (const auto& endpoint : ctx.agreement.base().endpoints()) {
    text += (text.empty() ? "" : ", ") + endpoint;
  }
  return text.empty() ? "none" : text;
}

}  // namespace gossip_rdzv::protocol
