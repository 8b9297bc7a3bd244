// Agreement on its own: claims by reference, bit merging limits, announcements of a member
// that restarted after the view formed, commit by a quorum of votes and release by a quorum
// of fences.
#include "protocol/agreement.hpp"

#include <gtest/gtest.h>

#include <optional>
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

/// Node `self` of a `count`-node round (--nnodes min:count) whose table knows all of them,
/// started with the seed list `base` (empty: no base condition), in process `generation`.
struct Node {
  explicit Node(int self, std::uint32_t min = 3, int count = 3, std::vector<std::string> base = {},
                std::uint64_t generation = 1)
      : key{endpoint(self), generation},
        table(endpoint(self)),
        agreement(AgreementConfig{key, 0, min, static_cast<std::uint32_t>(count), Time{0},
                                  QuorumBase(std::move(base))}) {
    table.set_self(record(endpoint(self), generation));
    for (int i = 1; i <= count; ++i) {
      if (i != self) table.merge(record(endpoint(i)), Time{0}, SuspicionClock::fixed(Time{0}), "x");
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
  claim.voted = {0x07};      // votes without a full ready set: not believable
  claim.committed = {0x07};  // commits without a quorum of (believable) votes: neither
  b.agreement.merge(claim);
  b.agreement.step(Time{1}, b.table);
  const auto held = b.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_EQ(bits::count(held->ready), 0u);
  EXPECT_EQ(bits::count(held->voted), 0u);
  EXPECT_EQ(bits::count(held->committed), 0u);
  b.agreement.check_invariants();
}

TEST(Agreement, AClaimCannotSetOurOwnBitsForUs) {
  // Found by fuzz_core (tests/fuzz/crashes/fuzz_core-agreement-invariant): a claim that set
  // b's own voted and fenced bits made b "vote for and fence" one view. Only b sets b's bits.
  Node a(1), b(2);
  a.agreement.step(Time{1}, a.table);
  ViewClaim forged = a.agreement.claims_to_send()[0];
  forged.ready = {0x07};
  forged.voted = {0x02};   // b's vote, claimed by a
  forged.fenced = {0x02};  // and b's fence
  // Unknown view: b takes the others' bits, none of its own.
  EXPECT_TRUE(b.agreement.merge(forged));
  // Known view: the same. b then holds it and must not have voted for or fenced it.
  ViewClaim by_reference = forged;
  by_reference.members.clear();
  b.agreement.merge(by_reference);
  b.agreement.step(Time{1}, b.table);
  const auto held = b.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_TRUE(bits::get(held->ready, 0));  // a's and c's bits count
  EXPECT_TRUE(bits::get(held->ready, 2));
  EXPECT_FALSE(bits::get(held->voted, 1));
  EXPECT_FALSE(bits::get(held->fenced, 1));
  b.agreement.check_invariants();
}

TEST(Agreement, AVoteNeedsAFullReadySetOfOurOwnNotOneThatClaimsOurReadyBit) {
  // Found by fuzz_core (tests/fuzz/corpus/fuzz_core/regression-ready-bit-claimed-for-us): a
  // claim on a view b already held, whose ready set was full only through b's own ready bit
  // (which b had not set and never takes from a peer), brought a's vote in: b then held a
  // vote next to a ready set that was not full ("a vote without a full ready set").
  Node a(1), b(2);
  a.agreement.step(Time{1}, a.table);
  ViewClaim genuine = a.agreement.claims_to_send()[0];
  EXPECT_TRUE(b.agreement.merge(genuine));  // b holds the view, without its own ready bit
  ViewClaim forged = genuine;
  forged.members.clear();  // by reference: b knows the view
  forged.ready = {0x07};   // everyone ready, b included
  forged.voted = {0x01};   // and a's vote
  b.agreement.merge(forged);
  std::optional<ViewClaim> known;  // the view as b tells it (the highest it knows)
  for (const auto& claim : b.agreement.claims_to_send())
    if (claim.digest == genuine.digest) known = claim;
  ASSERT_TRUE(known);
  EXPECT_FALSE(bits::get(known->ready, 1));  // b's ready bit is b's to set
  EXPECT_EQ(bits::count(known->voted), 0u);  // so the vote is not believable yet
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
  n[0].table.merge(record(endpoint(3), 2), Time{2}, SuspicionClock::fixed(Time{0}), "x");
  const auto members = n[0].agreement.committed_members(n[0].table);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[2].endpoint, endpoint(3));
  EXPECT_EQ(members[2].generation, 1u);
}

/// Steps `from` and delivers its claims to each of `to`.
void send(Node& from, std::initializer_list<Node*> to, Time now = Time{1}) {
  from.agreement.step(now, from.table);
  for (Node* peer : to) {
    for (const auto& claim : from.agreement.claims_to_send(&peer->key)) {
      peer->agreement.merge(claim, &from.key);
    }
  }
}

TEST(Agreement, QuorumIsMoreThanHalfAndBlockingIsAtLeastHalf) {
  auto set_of = [](std::size_t size, std::initializer_list<std::size_t> members) {
    auto set = bits::empty(size);
    for (auto i : members) bits::set(set, i);
    return set;
  };
  EXPECT_TRUE(quorum(set_of(1, {0}), 1));
  EXPECT_FALSE(quorum(set_of(1, {}), 1));
  // One vote of a view of two is no quorum, whichever member cast it: nobody commits alone.
  EXPECT_FALSE(quorum(set_of(2, {0}), 2));
  EXPECT_FALSE(quorum(set_of(2, {1}), 2));
  EXPECT_TRUE(quorum(set_of(2, {0, 1}), 2));
  EXPECT_FALSE(quorum(set_of(3, {2}), 3));
  EXPECT_TRUE(quorum(set_of(3, {1, 2}), 3));
  EXPECT_FALSE(quorum(set_of(4, {0, 3}), 4));
  EXPECT_FALSE(quorum(set_of(4, {1, 2}), 4));
  EXPECT_TRUE(quorum(set_of(4, {1, 2, 3}), 4));
  EXPECT_FALSE(quorum(set_of(5, {0, 1}), 5));
  EXPECT_TRUE(quorum(set_of(5, {2, 3, 4}), 5));
  // A blocking set leaves no quorum outside it: one fence of two, two of three or four.
  EXPECT_TRUE(blocking(set_of(2, {1}), 2));
  EXPECT_FALSE(blocking(set_of(3, {0}), 3));
  EXPECT_TRUE(blocking(set_of(3, {0, 2}), 3));
  EXPECT_TRUE(blocking(set_of(4, {1, 2}), 4));
  EXPECT_FALSE(blocking(set_of(4, {3}), 4));
  EXPECT_FALSE(blocking({}, 0));
  // Every quorum meets every blocking set, for every size and every pair of sets.
  for (std::size_t n = 1; n <= 6; ++n) {
    for (unsigned q = 0; q < (1u << n); ++q) {
      for (unsigned b = 0; b < (1u << n); ++b) {
        const bits::Bytes qs{static_cast<std::uint8_t>(q)}, bs{static_cast<std::uint8_t>(b)};
        if (quorum(qs, n) && blocking(bs, n)) {
          EXPECT_NE(q & b, 0u) << n << " " << q << " " << b;
        }
      }
    }
  }
  // Bits past the view (a claim by reference may carry them) do not count.
  EXPECT_FALSE(quorum({0xf8}, 3));
  EXPECT_FALSE(quorum({0x01, 0xff}, 4));
}

/// a, b and c hold the 3-view and are ready on it; c heard everyone's ready bit (and voted)
/// but nothing of c's has reached a or b since its proposed bit.
struct LastReadyUnheard {
  explicit LastReadyUnheard(std::uint32_t min) : a(1, min), b(2, min), c(3, min) {
    send(a, {&b, &c});                   // a proposes the view
    send(c, {&a, &b});                   // c holds it (not ready: b's bit is missing)
    send(b, {&a, &c});                   // b holds it, sees proposed full: ready
    send(a, {&b, &c});                   // a is ready too
    c.agreement.step(Time{1}, c.table);  // c is ready and sees ready full
  }
  Node a, b, c;
};

TEST(Agreement, AMemberThatSawEveryoneReadyVotesButDoesNotCommitAlone) {
  LastReadyUnheard round(3);
  const auto held = round.c.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_TRUE(bits::full(held->ready, 3));
  EXPECT_TRUE(bits::get(held->voted, 2));  // c's vote
  EXPECT_FALSE(bits::any(held->committed));
  // c must not commit here: if it then died, a and b could never know whether it had, and
  // would wait for its ready bit forever.
  EXPECT_FALSE(round.c.agreement.committed());
  // c's claims reach b: b sees ready full, votes, and c and b are a quorum of three.
  send(round.c, {&round.b});
  send(round.b, {&round.c});
  EXPECT_TRUE(round.b.agreement.committed());
  send(round.c, {});
  EXPECT_TRUE(round.c.agreement.committed());
  // a never heard from c, but a quorum voted: it adopts the same view.
  send(round.b, {&round.a});
  send(round.a, {});
  EXPECT_TRUE(round.a.agreement.committed());
  EXPECT_EQ(round.a.agreement.committed_view()->digest, held->digest);
  for (Node* node : {&round.a, &round.b, &round.c}) node->agreement.check_invariants();
}

TEST(Agreement, SurvivorsOfAMemberThatDiedUnheardFenceItsViewAndAgreeWithoutIt) {
  LastReadyUnheard round(2);  // --nnodes 2:3
  const std::uint64_t three = round.c.agreement.held_view()->digest;
  // c dies. a and b declare it dead: ready but without c's ready bit, each fences the view.
  for (Node* survivor : {&round.a, &round.b}) {
    survivor->table.declare_dead(endpoint(3), Time{2});
  }
  send(round.a, {&round.b}, Time{2});
  EXPECT_TRUE(bits::get(round.a.agreement.held_view()->fenced, 0));
  // b fences too: {a, b} is a quorum of three, so no quorum can ever vote for the 3-view
  // and both move on to the 2-view they agree on.
  for (int i = 0; i < 4; ++i) {
    send(round.b, {&round.a}, Time{2});
    send(round.a, {&round.b}, Time{2});
  }
  ASSERT_TRUE(round.a.agreement.committed());
  ASSERT_TRUE(round.b.agreement.committed());
  EXPECT_EQ(round.a.agreement.committed_view()->digest, round.b.agreement.committed_view()->digest);
  EXPECT_EQ(round.a.agreement.committed_view()->members.size(), 2u);
  // Had c lived (cut off, not dead), nothing it hears lets it commit the 3-view: a and b
  // fenced it, so its vote never finds a second one.
  send(round.a, {&round.c}, Time{3});
  send(round.b, {&round.c}, Time{3});
  send(round.c, {}, Time{3});
  EXPECT_FALSE(round.c.agreement.committed() &&
               round.c.agreement.committed_view()->digest == three);
  for (Node* node : {&round.a, &round.b, &round.c}) node->agreement.check_invariants();
}

// Seeds 1 and 3 are the quorum base, so a view needs both their votes. Everyone is ready and
// a and b voted; c dies before its vote reaches anyone. Nobody alive can ever decide the
// view, nor tell whether c did: an elastic job starts the next round (Rounds::blocked).
TEST(Agreement, AViewWhoseDecisionNeedsTheVoteOfAGoneMemberIsBlockedByIt) {
  const std::vector<std::string> base = {endpoint(1), endpoint(3)};
  Node a(1, 3, 3, base), b(2, 3, 3, base), c(3, 3, 3, base);
  send(a, {&b, &c});                   // a proposes
  send(b, {&a, &c});                   // b holds it
  send(c, {&a, &b});                   // c holds it, sees proposed full: ready, and says so
  send(a, {&b});                       // a ready
  send(b, {&a});                       // b ready, sees ready full: votes
  a.agreement.step(Time{1}, a.table);  // a votes
  const auto held = a.agreement.held_view();
  ASSERT_TRUE(held);
  ASSERT_TRUE(bits::get(held->voted, 0) && bits::get(held->voted, 1));
  ASSERT_FALSE(bits::get(held->voted, 2));
  EXPECT_FALSE(a.agreement.committed());
  EXPECT_FALSE(a.agreement.blocked_by_gone(a.table)) << "c may still vote";
  a.table.declare_dead(endpoint(3), Time{2});
  const auto gone = a.agreement.blocked_by_gone(a.table);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->endpoint, endpoint(3));
  // Had c's vote reached a (it was on its way), the view would be a's outcome, not blocked.
  send(b, {&c});  // c sees ready full and votes
  send(c, {&a});
  a.agreement.step(Time{2}, a.table);
  EXPECT_TRUE(a.agreement.committed());
  EXPECT_FALSE(a.agreement.blocked_by_gone(a.table));
}

TEST(Agreement, AWronglyBuriedMemberThatRefutesIsAgreedWithAgainAfterTheFence) {
  LastReadyUnheard round(3);  // --nnodes 3: nothing can be agreed without c
  const std::uint64_t fenced_attempt = round.c.agreement.held_view()->attempt;
  for (Node* survivor : {&round.a, &round.b}) {
    survivor->table.declare_dead(endpoint(3), Time{2});
  }
  for (int i = 0; i < 3; ++i) {
    send(round.a, {&round.b}, Time{2});
    send(round.b, {&round.a}, Time{2});
  }
  EXPECT_FALSE(round.a.agreement.committed());
  // c was only cut off: it refutes (a higher incarnation, alive) and everyone talks again.
  // The fenced view can never commit, so it must not be held again: the three agree on a
  // new view of the same members.
  MemberRecord refuted = record(endpoint(3));
  refuted.incarnation = 7;
  for (Node* survivor : {&round.a, &round.b}) {
    survivor->table.merge(refuted, Time{3}, SuspicionClock::fixed(Time{10}), "x");
  }
  for (int i = 0; i < 6; ++i) {
    for (Node* from : {&round.a, &round.b, &round.c}) {
      send(*from, {&round.a, &round.b, &round.c}, Time{3});
    }
  }
  for (Node* node : {&round.a, &round.b, &round.c}) {
    ASSERT_TRUE(node->agreement.committed());
    // The same three members (so the same digest), under a higher attempt.
    EXPECT_GT(node->agreement.committed_view()->attempt, fenced_attempt);
    EXPECT_EQ(node->agreement.committed_view()->members.size(), 3u);
    node->agreement.check_invariants();
  }
}

TEST(Agreement, AMemberThatSawReadyFullVotesEvenOnceTheOtherIsDead) {
  LastReadyUnheard round(2);
  // c's claims reached b before c died: b saw ready full and votes rather than fences, as
  // does a once it hears from b, although both declared c dead. Fencing here could split
  // the survivors into voters and fencers with no quorum on either side.
  send(round.c, {&round.b});
  for (Node* survivor : {&round.a, &round.b}) {
    survivor->table.declare_dead(endpoint(3), Time{2});
  }
  send(round.b, {&round.a}, Time{2});
  send(round.a, {&round.b}, Time{2});
  send(round.b, {}, Time{2});
  ASSERT_TRUE(round.a.agreement.committed());
  ASSERT_TRUE(round.b.agreement.committed());
  EXPECT_EQ(round.a.agreement.committed_view()->members.size(), 3u);
  EXPECT_FALSE(bits::any(round.a.agreement.committed_view()->fenced));
  // b's commit bit says it knows the outcome; a vote alone would not have.
  EXPECT_TRUE(bits::get(round.a.agreement.committed_view()->committed, 1));
}

TEST(Agreement, AViewOfTwoNeverCommitsOnOneVoteSoARestartCannotGiveTheRoundTwoOutcomes) {
  // --nnodes 2, seed a. a and b are ready; b's ready bit reaches a, a's never reaches b. a
  // votes; with "half including the first member" that vote alone was a quorum and a
  // committed. Then a restarts as a2, b fences (a restarted before b saw a's ready bit),
  // releases the view and commits {a2, b}: two outcomes of round 0.
  const std::vector<std::string> seeds{endpoint(1)};
  Node a(1, 2, 2, seeds), b(2, 2, 2, seeds);
  send(a, {&b});  // a proposes {a, b}
  send(b, {&a});  // b holds it: proposed full, ready
  send(a, {});    // a is ready, and sees b's ready bit: ready full
  ASSERT_TRUE(bits::get(a.agreement.held_view()->voted, 0));
  EXPECT_FALSE(a.agreement.committed()) << "a committed on its own vote";
  const std::uint64_t first_view = a.agreement.held_view()->digest;
  // a is killed; its new process a2 starts on the same endpoint. b learns the restart.
  Node a2(1, 2, 2, seeds, /*generation=*/2);
  b.table.merge(record(endpoint(1), 2), Time{2}, SuspicionClock::fixed(Time{0}), "x");
  a2.table.merge(record(endpoint(2)), Time{2}, SuspicionClock::fixed(Time{0}), "x");
  for (int i = 0; i < 6; ++i) {
    send(b, {&a2}, Time{2});
    send(a2, {&b}, Time{2});
  }
  ASSERT_TRUE(b.agreement.committed());
  ASSERT_TRUE(a2.agreement.committed());
  EXPECT_NE(b.agreement.committed_view()->digest, first_view);
  // The first view can never commit anywhere: b fenced it, and b is half of it.
  EXPECT_FALSE(a.agreement.committed());
  EXPECT_TRUE(blocking(b.agreement.committed_view()->fenced, 2) ||
              b.agreement.committed_view()->digest != first_view);
  for (Node* node : {&a, &a2, &b}) node->agreement.check_invariants();
}

TEST(Agreement, AViewCommitsOnlyOnceAMajorityOfTheSeedListVotedOrWitnessed) {
  // Seeds 1, 4 and 5; 4 and 5 are not in the view (dedicated seeds, or cut off). Every
  // member votes, but one base endpoint of three is no majority: no commit until a
  // dedicated seed's witness arrives.
  const std::vector<std::string> seeds{endpoint(1), endpoint(4), endpoint(5)};
  Node a(1, 3, 3, seeds), b(2, 3, 3, seeds), c(3, 3, 3, seeds);
  for (int i = 0; i < 4; ++i) {
    for (Node* from : {&a, &b, &c}) send(*from, {&a, &b, &c});
  }
  auto held = a.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_TRUE(quorum(held->voted, 3));
  EXPECT_FALSE(a.agreement.committed());
  EXPECT_EQ(a.agreement.witnesses_wanted(), (std::vector<std::string>{endpoint(4), endpoint(5)}));
  const auto status = a.agreement.base_status();
  EXPECT_EQ(status.won, 1u);
  EXPECT_EQ(status.size, 3u);
  EXPECT_TRUE(status.all_ready);
  EXPECT_EQ(status.missing, (std::vector<std::string>{endpoint(4), endpoint(5)}));
  ViewClaim witnessed = *held;
  witnessed.witnesses = {endpoint(5)};
  a.agreement.merge(witnessed);
  send(a, {&b, &c});
  send(b, {});
  EXPECT_TRUE(a.agreement.committed());
  EXPECT_TRUE(b.agreement.committed());
  EXPECT_TRUE(a.agreement.witnesses_wanted().empty());
  // A witness that is no base endpoint counts for nothing.
  Node d(1, 3, 3, seeds), e(2, 3, 3, seeds), f(3, 3, 3, seeds);
  for (int i = 0; i < 4; ++i) {
    for (Node* from : {&d, &e, &f}) send(*from, {&d, &e, &f});
  }
  ViewClaim stranger = *d.agreement.held_view();
  stranger.witnesses = {"10.9.9.9:1"};
  d.agreement.merge(stranger);
  send(d, {});
  EXPECT_FALSE(d.agreement.committed());
}

TEST(Agreement, NodesGivenDifferentSeedListsNeverHoldTheSameView) {
  Node a(1, 2, 2, {endpoint(1)}), b(2, 2, 2, {endpoint(2)});
  for (int i = 0; i < 4; ++i) {
    send(a, {&b});
    send(b, {&a});
  }
  EXPECT_FALSE(a.agreement.committed());
  EXPECT_FALSE(b.agreement.committed());
  EXPECT_NE(a.agreement.held_view()->digest, b.agreement.held_view()->digest);
}

// ---- seniors: stable ranks across rounds ------------------------------------------------

/// Node `self` of round 1 of three nodes 1-3, knowing round 0's outcome (`previous`) or not.
struct RoundOneNode {
  RoundOneNode(int self, std::optional<std::vector<MemberKey>> previous)
      : key{endpoint(self), 1}, table(endpoint(self)), agreement([&] {
          AgreementConfig config{key, 1, 3, 3, Time{0}, QuorumBase(std::vector<std::string>{})};
          config.previous = std::move(previous);
          return config;
        }()) {
    table.set_self(record(endpoint(self)));
    for (int i = 1; i <= 3; ++i) {
      if (i != self) table.merge(record(endpoint(i)), Time{0}, SuspicionClock::fixed(Time{0}), "x");
    }
  }
  MemberKey key;
  MemberTable table;
  Agreement agreement;
};

// Round 0 committed {3, 1} with 3 at node rank 0; node 2 is new and knows no outcome. It
// proposes first, naming no seniors; the nodes that know will not hold that view and propose
// one naming 3 then 1; the newcomer takes it, and all commit it.
TEST(Agreement, NodesThatKnowThePreviousOutcomeHoldOnlyViewsNamingItsMembersAsSeniors) {
  const std::vector<MemberKey> previous = {{endpoint(3), 1}, {endpoint(1), 1}};
  RoundOneNode a(1, previous), b(2, std::nullopt), c(3, previous);
  std::vector<RoundOneNode*> nodes = {&b, &a, &c};
  b.agreement.step(Time{1}, b.table);
  const auto newcomers = b.agreement.held_view();
  ASSERT_TRUE(newcomers);
  EXPECT_TRUE(newcomers->seniors.empty());
  a.agreement.merge(*newcomers);
  a.agreement.step(Time{1}, a.table);
  const auto held = a.agreement.held_view();
  ASSERT_TRUE(held);
  EXPECT_GT(held->attempt, newcomers->attempt) << "a holds the view naming no seniors";
  EXPECT_EQ(held->seniors, (std::vector<std::uint32_t>{2, 0}));  // members are sorted
  for (int pass = 0; pass < 8; ++pass) {
    for (RoundOneNode* from : nodes) {
      for (RoundOneNode* to : nodes) {
        if (from == to) continue;
        for (const auto& claim : from->agreement.claims_to_send(&to->key))
          to->agreement.merge(claim, &from->key);
      }
    }
    for (RoundOneNode* node : nodes) {
      node->agreement.step(Time{1}, node->table);
      node->agreement.check_invariants();
    }
  }
  for (RoundOneNode* node : nodes) {
    ASSERT_TRUE(node->agreement.committed()) << node->key.endpoint;
    EXPECT_EQ(node->agreement.committed_seniors(),
              (std::vector<std::string>{endpoint(3), endpoint(1)}));
  }
}

// The digest covers the seniors: a claim whose seniors were changed on the way names
// another view than its digest says and is ignored.
TEST(Agreement, SeniorsAreCoveredByTheDigest) {
  const std::vector<MemberKey> previous = {{endpoint(3), 1}, {endpoint(1), 1}};
  RoundOneNode a(1, previous), b(2, std::nullopt);
  a.agreement.step(Time{1}, a.table);
  ViewClaim claim = a.agreement.claims_to_send()[0];
  claim.seniors = {0, 2};
  EXPECT_FALSE(b.agreement.merge(claim));
  claim.seniors = {2, 0};
  EXPECT_TRUE(b.agreement.merge(claim));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
