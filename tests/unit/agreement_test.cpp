// Agreement on its own: claims by reference, bit merging limits, announcements of a member
// that restarted after the view formed.
#include "protocol/agreement.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/bitset.hpp"

namespace gossip_rdzv::protocol {
namespace {

MemberRecord record(const std::string& endpoint, std::uint64_t generation = 1) {
  MemberRecord r;
  r.ann.endpoint = endpoint;
  r.ann.host = endpoint.substr(0, endpoint.find(':'));
  r.ann.hostname = "h-" + endpoint;
  r.ann.generation = generation;
  r.ann.node_id = 100 + generation;
  return r;
}

std::string endpoint(int i) {
  return "10.0.0." + std::to_string(i) + ":1";
}

/// Node `self` of a 3-node round whose table knows all three.
struct Node {
  explicit Node(int self)
      : key{endpoint(self), 1},
        table(endpoint(self)),
        agreement(AgreementConfig{key, 0, 3, 3, Time{0}}) {
    table.set_self(record(endpoint(self)));
    for (int i = 1; i <= 3; ++i) {
      if (i != self) table.merge(record(endpoint(i)), Time{0}, Time{0}, "x");
    }
  }
  MemberKey key;
  MemberTable table;
  Agreement agreement;
};

TEST(Agreement, ClaimsGoByReferenceOnlyToMembersKnownToHoldTheView) {
  Node a(1), b(2);
  a.agreement.step(Time{1}, a.table);
  const MemberKey b_key{endpoint(2), 1};
  // b's proposed bit is not set at a: a sends the members.
  auto claims = a.agreement.claims_to_send(&b_key);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].members.size(), 3u);
  EXPECT_TRUE(b.agreement.merge(claims[0]));
  b.agreement.step(Time{1}, b.table);
  for (const auto& claim : b.agreement.claims_to_send(&a.key)) a.agreement.merge(claim);
  // Now a knows b holds the view: the id and the bits are enough.
  claims = a.agreement.claims_to_send(&b_key);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_TRUE(claims[0].members.empty());
  EXPECT_EQ(claims[0].proposed.size(), 1u);
  // Not a member, or no receiver: always the members.
  const MemberKey stranger{endpoint(9), 1};
  EXPECT_EQ(a.agreement.claims_to_send(&stranger)[0].members.size(), 3u);
  EXPECT_EQ(a.agreement.claims_to_send()[0].members.size(), 3u);
  // A restarted process of b is another member key: it gets the members too.
  const MemberKey b_restarted{endpoint(2), 2};
  EXPECT_EQ(a.agreement.claims_to_send(&b_restarted)[0].members.size(), 3u);
}

TEST(Agreement, EachMemberGetsTheMemberListOnceOrNotAtAllIfItShowedItKnowsIt) {
  Node a(1), b(2), c(3);
  a.agreement.step(Time{1}, a.table);
  const MemberKey b_key{endpoint(2), 1}, c_key{endpoint(3), 1};
  // b holds nothing yet: the first claim to b carries the members, the next ones do not.
  ASSERT_EQ(a.agreement.claims_to_send(&b_key)[0].members.size(), 3u);
  EXPECT_TRUE(a.agreement.claims_to_send(&b_key)[0].members.empty());
  EXPECT_TRUE(a.agreement.claims_to_send(&b_key)[0].members.empty());
  // c sends a claim of the view (it has the members): a never sends c the list.
  const ViewClaim full = a.agreement.claims_to_send()[0];
  c.agreement.merge(full);
  ViewClaim from_c = c.agreement.claims_to_send()[0];
  from_c.members.clear();  // even by reference: c cannot name a view it does not know
  a.agreement.merge(from_c, &c_key);
  EXPECT_TRUE(a.agreement.claims_to_send(&c_key)[0].members.empty());
  // A lost copy is sent again after max(16, members) claims of the view.
  std::size_t full_copies = 0;
  for (int i = 0; i < 40; ++i) full_copies += a.agreement.claims_to_send(&b_key)[0].members.size();
  EXPECT_GE(full_copies, 3u);
  EXPECT_LE(full_copies, 9u);
}

TEST(Agreement, ClaimByReferenceMergesBitsOfAKnownViewAndIsIgnoredOtherwise) {
  Node a(1), b(2), c(3);
  a.agreement.step(Time{1}, a.table);
  const ViewClaim full = a.agreement.claims_to_send()[0];
  ViewClaim by_reference = full;
  by_reference.members.clear();
  // c never saw the view: a reference teaches it nothing.
  EXPECT_FALSE(c.agreement.merge(by_reference));
  EXPECT_FALSE(c.agreement.held_view());
  // b knows the view: the reference's bits merge.
  b.agreement.merge(full);
  ViewClaim more = by_reference;
  bits::set(more.proposed, 2);  // c's bit, as if a had heard from c
  EXPECT_TRUE(b.agreement.merge(more));
  b.agreement.step(Time{1}, b.table);
  const auto held = b.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_TRUE(bits::get(held->proposed, 2));
  EXPECT_FALSE(b.agreement.merge(more));  // nothing new
}

TEST(Agreement, BitsPastTheViewAndUncertifiedCommitBitsAreIgnored) {
  Node a(1), b(2);
  a.agreement.step(Time{1}, a.table);
  ViewClaim claim = a.agreement.claims_to_send()[0];
  b.agreement.merge(claim);
  claim.members.clear();
  claim.ready = {0xf8};      // only bits past member 2: must not count
  claim.committed = {0x07};  // a commit without a full ready set: not believable
  b.agreement.merge(claim);
  b.agreement.step(Time{1}, b.table);
  const auto held = b.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_EQ(bits::count(held->ready), 0u);
  EXPECT_EQ(bits::count(held->committed), 0u);
  b.agreement.check_invariants();
}

TEST(Agreement, CommitsWithTheAnnouncementOfAMemberThatRestartedSince) {
  Node n[] = {Node(1), Node(2), Node(3)};
  // Gossip every claim to everyone until nothing changes.
  for (int round = 0; round < 10; ++round) {
    for (auto& from : n) {
      from.agreement.step(Time{1}, from.table);
      for (auto& to : n) {
        if (&to == &from) continue;
        for (const auto& claim : from.agreement.claims_to_send(&to.key)) to.agreement.merge(claim);
      }
    }
  }
  ASSERT_TRUE(n[0].agreement.committed());
  // Node 3 restarts after the commit; node 1 learns it. The committed assignment still
  // names the process that was agreed.
  n[0].table.merge(record(endpoint(3), 2), Time{2}, Time{0}, "x");
  const auto members = n[0].agreement.committed_members(n[0].table);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[2].endpoint, endpoint(3));
  EXPECT_EQ(members[2].generation, 1u);
}

}  // namespace
}  // namespace gossip_rdzv::protocol
