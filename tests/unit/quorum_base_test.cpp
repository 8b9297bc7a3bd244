// The quorum base: which views can still win the seed list, and which have.
#include "protocol/quorum_base.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gossip_rdzv::protocol {
namespace {

TEST(QuorumBase, IsSortedUniqueAndItsDigestIgnoresOrder) {
  const QuorumBase a({"b:1", "a:1", "b:1"});
  const QuorumBase b({"a:1", "b:1"});
  EXPECT_EQ(a.endpoints(), (std::vector<std::string>{"a:1", "b:1"}));
  EXPECT_EQ(a.digest(), b.digest());
  EXPECT_NE(a.digest(), QuorumBase({"a:1"}).digest());
  EXPECT_TRUE(QuorumBase().empty());
}

TEST(QuorumBase, IsWonByVotingMemberSeedsAndWitnessesTogether) {
  const QuorumBase base({"s1:1", "s2:1", "s3:1"});
  const std::vector<MemberKey> members{{"n1:1", 1}, {"s1:1", 1}, {"s1:1", 2}};
  bits::Bytes voted = bits::empty(3);
  EXPECT_EQ(base.won(members, voted, {}), 0u);
  bits::set(voted, 2);  // the restarted process of s1 voted: s1 counts once
  bits::set(voted, 1);
  EXPECT_EQ(base.won(members, voted, {}), 1u);
  EXPECT_FALSE(base.reached(members, voted, {}));
  EXPECT_TRUE(base.reached(members, voted, {"s3:1"}));
  EXPECT_FALSE(base.reached(members, voted, {"elsewhere:1"}));
  EXPECT_EQ(base.to_ask(members, {"s3:1"}), std::vector<std::string>{"s2:1"});
  EXPECT_TRUE(QuorumBase().reached(members, bits::empty(3), {}));
}

TEST(QuorumBase, AViewCannotWinWhenTheSeedsOutsideItAreMembers) {
  // Seeds s1 and s2 are member processes; a view holding only s1 can never win 2 of 2.
  const QuorumBase base({"s1:1", "s2:1"});
  const std::vector<MemberKey> half{{"n1:1", 1}, {"s1:1", 1}};
  auto members_are = [](std::vector<std::string> known) {
    return [known](const std::string& endpoint) {
      return std::find(known.begin(), known.end(), endpoint) != known.end();
    };
  };
  EXPECT_FALSE(base.can_win(half, {}, members_are({"s1:1", "s2:1"})));
  // While s2 is unknown it may be a dedicated seed that can still witness.
  EXPECT_TRUE(base.can_win(half, {}, members_are({"s1:1"})));
  EXPECT_TRUE(base.can_win({{"s1:1", 1}, {"s2:1", 1}}, {}, members_are({"s1:1", "s2:1"})));
}

TEST(QuorumBase, AViewCannotWinOnceItsSeedFencedIt) {
  // A fence is a promise never to vote: a seed that fenced the view cannot count for it.
  const QuorumBase base({"s1:1"});
  const std::vector<MemberKey> members{{"n1:1", 1}, {"n2:1", 1}, {"s1:1", 1}};
  const auto nobody_else = [](const std::string&) { return true; };
  bits::Bytes fenced = bits::empty(3);
  EXPECT_TRUE(base.can_win(members, fenced, nobody_else));
  bits::set(fenced, 0);  // n1 fenced: the seed may still vote
  EXPECT_TRUE(base.can_win(members, fenced, nobody_else));
  bits::set(fenced, 2);  // s1 fenced
  EXPECT_FALSE(base.can_win(members, fenced, nobody_else));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
