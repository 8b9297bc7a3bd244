// The core's side of agreement (agreement.hpp, quorum_base.hpp, witness.hpp): claims heard
// from peers go into the Agreement, a dedicated seed witnesses views (Witness), voters ask the
// base's dedicated seeds for witnesses, and a peer started with other sizes or another seed
// list (or at our very endpoint) stops the round with a Fatal event instead of a timeout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core_context.hpp"
#include "witness.hpp"

namespace gossip_rdzv::protocol {

class Dissemination;

class AgreementLink {
 public:
  explicit AgreementLink(const CoreContext& ctx);

  /// Steps the agreement against the table unless it may not yet (a joiner that has not
  /// heard from its run) or must not (a Fatal configuration mismatch, a dedicated seed).
  /// Returns whether it stepped.
  bool step(CoreContext& ctx, Time now, bool joined);

  /// Merges a peer's claims; asks it for its table when they name members we lack.
  void learn_views(CoreContext& ctx, const std::vector<ViewClaim>& claims, const std::string& via,
                   std::uint64_t via_generation, Time now, Dissemination& dissemination);
  /// A dedicated seed: witnesses what it may of `claims` and answers with what `asker` lacks.
  void answer_as_witness(CoreContext& ctx, const std::string& asker,
                         const std::vector<ViewClaim>& claims);
  /// Members that voted for a view whose base is not won yet ask the base endpoints outside
  /// the view (dedicated seeds) to witness it, with the whole claim.
  void ask_witnesses(CoreContext& ctx) const;

  /// A rumour about our endpoint from another live process (not an earlier one of ours):
  /// reports the shared endpoint (once) and returns true.
  bool other_process_at_our_endpoint(CoreContext& ctx, const Announcement& ann);
  /// Reports a peer started with other --nnodes or another --seed list (once).
  void check_peer(CoreContext& ctx, const Announcement& ann);

  void check_invariants() const { witness_.check_invariants(); }
  /// A new round: a dedicated seed witnesses its views from scratch.
  void start_round(const CoreContext& ctx) {
    witness_ = Witness(ctx.config.self.endpoint, ctx.config.round);
  }

 private:
  bool names_members_we_lack(const CoreContext& ctx, const ViewClaim& claim) const;
  void check_sizes(CoreContext& ctx, const Announcement& ann);
  void check_seed_list(CoreContext& ctx, const Announcement& ann);
  std::string seed_list_text(const CoreContext& ctx) const;

  Witness witness_;  ///< a dedicated seed's part in agreement (witness.hpp)
  bool config_fatal_ = false;
};

}  // namespace gossip_rdzv::protocol
