// A dedicated seed's witness: it witnesses a view only once every member is ready on it, then
// no other view until that one is provably dead.
#include "protocol/witness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/bitset.hpp"

namespace gossip_rdzv::protocol {
namespace {

MemberKey key(int i) {
  return MemberKey{"10.0.0." + std::to_string(i) + ":1", 1};
}

/// A full claim of the view of `members` under `attempt`, every member ready.
ViewClaim ready_view(std::uint64_t attempt, std::vector<int> members) {
  ViewClaim claim;
  claim.attempt = attempt;
  claim.digest = 1000 + attempt;
  for (int i : members) claim.members.push_back(key(i));
  const std::size_t n = claim.members.size();
  claim.proposed = claim.ready = bits::empty(n);
  claim.voted = claim.committed = claim.fenced = bits::empty(n);
  for (std::size_t i = 0; i < n; ++i) bits::set(claim.proposed, i), bits::set(claim.ready, i);
  return claim;
}

bool witnessed(const Witness& witness, const ViewClaim& view) {
  auto mine = witness.answer(view);
  return mine && std::find(mine->witnesses.begin(), mine->witnesses.end(), "seed:1") !=
                     mine->witnesses.end();
}

TEST(Witness, WitnessesAViewOnlyOnceEveryMemberIsReady) {
  Witness witness("seed:1", 0);
  ViewClaim view = ready_view(1, {1, 2, 3});
  view.ready = bits::empty(3);
  bits::set(view.ready, 0);
  witness.merge(view);
  EXPECT_FALSE(witnessed(witness, view));
  EXPECT_FALSE(witness.locked());
  witness.merge(ready_view(1, {1, 2, 3}));
  EXPECT_TRUE(witnessed(witness, view));
  witness.check_invariants();
}

TEST(Witness, NeverWitnessesADisjointGroupWhileTheFirstViewCanCommit) {
  // Two halves of a partition, each ready on its own view: the seed takes one side only.
  Witness witness("seed:1", 0);
  const ViewClaim left = ready_view(1, {1, 2});
  const ViewClaim right = ready_view(2, {3, 4});
  witness.merge(left);
  witness.merge(right);
  EXPECT_TRUE(witnessed(witness, left));
  EXPECT_FALSE(witnessed(witness, right));
  witness.check_invariants();
}

TEST(Witness, ReleasesAViewABlockingSetFencedOrAMemberLeftForAHigherView) {
  Witness witness("seed:1", 0);
  ViewClaim first = ready_view(1, {1, 2, 3, 4});
  witness.merge(first);
  ASSERT_TRUE(witnessed(witness, first));
  // Half of the members fenced it: no quorum of votes is left, so it can never commit.
  bits::set(first.fenced, 0);
  bits::set(first.fenced, 3);
  const ViewClaim second = ready_view(2, {5, 6});
  witness.merge(second);
  EXPECT_FALSE(witnessed(witness, second));  // not yet: one fence is not enough... until both
  witness.merge(first);
  witness.merge(second);
  EXPECT_TRUE(witnessed(witness, second));
  // A member of the locked view proposes a higher view: the locked one is dead too.
  Witness other("seed:1", 0);
  const ViewClaim low = ready_view(1, {1, 2, 3});
  other.merge(low);
  ViewClaim high = ready_view(3, {1, 2});
  high.ready = bits::empty(2);  // not ready yet: only its proposal is known
  other.merge(high);
  EXPECT_FALSE(other.locked());
  other.merge(ready_view(3, {1, 2}));
  EXPECT_TRUE(witnessed(other, high));
  witness.check_invariants();
  other.check_invariants();
}

TEST(Witness, IgnoresAnotherRoundAndReferencesToUnknownViews) {
  Witness witness("seed:1", 0);
  ViewClaim other_round = ready_view(1, {1, 2});
  other_round.round = 1;
  EXPECT_FALSE(witness.merge(other_round));
  ViewClaim reference = ready_view(1, {1, 2});
  reference.members.clear();
  EXPECT_FALSE(witness.merge(reference));
  EXPECT_FALSE(witness.locked());
}

}  // namespace
}  // namespace gossip_rdzv::protocol
