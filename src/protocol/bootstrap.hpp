// Joining through the seeds: a node sends Join to its seeds, with exponential backoff, until
// one answers; a seed answers with a bounded sample of members and spreads the joiner (a
// dedicated seed introduces it to a few members and to the other seeds, a member seed tells
// the collector seeds once per gossip period). A member that is itself one of several seeds
// keeps joining the other seeds until it knows each of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core_context.hpp"

namespace gossip_rdzv::protocol {

class Bootstrap {
 public:
  explicit Bootstrap(const CoreContext& ctx);

  void start(CoreContext& ctx, Time now);
  bool joined() const { return joined_; }
  /// The first answer from a seed or peer: emits JoinedCluster once.
  void mark_joined(CoreContext& ctx, const std::string& via);
  /// `has_outcome`: the round's outcome is known (committed or not admitted).
  void tick(CoreContext& ctx, Time now, bool has_outcome);
  /// Tells the collector seeds the joiners gathered over the last gossip period.
  void forward_joiners(CoreContext& ctx, Time now);
  /// When tick or forward_joiners next has work (kNever: none).
  Time next_wakeup(const CoreContext& ctx, bool has_outcome) const;

  /// Answers a joiner that may join (a member of the round, or no outcome yet) with a sample
  /// of members, and spreads it to the seeds that must know it.
  void answer_join(CoreContext& ctx, Time now, const Envelope& env, const Join& join);
  /// A dedicated seed introduces a joiner to a few members now; they spread it from there.
  void introduce(CoreContext& ctx, const MemberRecord& joiner);

 private:
  /// Whether we still meet other seeds (we are a member seed, before the outcome).
  bool meeting_seeds(CoreContext& ctx);
  /// Joined, without an outcome, and no live peer known: ask the seed again.
  bool lost_touch(const CoreContext& ctx, bool has_outcome) const;
  void tell_seeds(CoreContext& ctx, const std::vector<std::string>& seeds,
                  const std::vector<MemberRecord>& joiners);

  bool joined_ = false;
  std::uint64_t join_attempts_ = 0;
  std::size_t first_seed_ = 0;  ///< random: with several seeds, the joins spread over them
  Time join_backoff_{0};
  Time next_join_at_{0};
  std::vector<std::string> collectors_;  ///< the seeds our joiners go to (we are a member seed)
  std::vector<MemberRecord> joiners_to_forward_;  ///< to the collectors
  Time next_forward_at_{0};
  std::vector<std::string> unmet_seeds_;  ///< other seeds not yet in our table (we are a seed)
};

}  // namespace gossip_rdzv::protocol
