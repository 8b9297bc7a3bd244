// MemberTable: SWIM precedence, the incremental indexes (live peers, suspects by deadline,
// generation log, retired announcements) and the piggyback queue's order.
#include "protocol/member_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace gossip_rdzv::protocol {
namespace {

using namespace std::chrono_literals;

MemberRecord rumour(const std::string& endpoint, std::uint64_t generation = 1,
                    std::uint64_t incarnation = 0, MemberStatus status = MemberStatus::alive) {
  MemberRecord r;
  r.ann.endpoint = endpoint;
  r.ann.host = endpoint.substr(0, endpoint.find(':'));
  r.ann.hostname = "h-" + endpoint;
  r.ann.generation = generation;
  r.ann.node_id = generation * 1000 + endpoint.size();
  r.incarnation = incarnation;
  r.status = status;
  return r;
}

const std::string kSelf = "10.0.0.1:1";

MemberTable table_with(int peers) {
  MemberTable table(kSelf);
  table.set_self(rumour(kSelf));
  for (int i = 2; i < 2 + peers; ++i)
    table.merge(rumour("10.0.0." + std::to_string(i) + ":1"), Time{0},
                SuspicionClock::fixed(Time{0}), "seed");
  return table;
}

TEST(MemberTable, PrecedenceFollowsSwim) {
  MemberTable table = table_with(1);
  const std::string peer = "10.0.0.2:1";
  // Same incarnation: suspect overrides alive, dead overrides suspect, alive does not return.
  EXPECT_EQ(table.merge(rumour(peer, 1, 0, MemberStatus::suspect), Time{1},
                        SuspicionClock::fixed(Time{100}), "x"),
            MemberChange::suspected);
  EXPECT_EQ(table.merge(rumour(peer, 1, 0, MemberStatus::alive), Time{2},
                        SuspicionClock::fixed(Time{100}), "x"),
            MemberChange::none);
  EXPECT_EQ(table.merge(rumour(peer, 1, 0, MemberStatus::dead), Time{3},
                        SuspicionClock::fixed(Time{100}), "x"),
            MemberChange::died);
  EXPECT_EQ(table.live_peer_count(), 0u);
  // A higher incarnation refutes; a newer generation is a restart whatever its incarnation.
  EXPECT_EQ(table.merge(rumour(peer, 1, 1, MemberStatus::alive), Time{4},
                        SuspicionClock::fixed(Time{100}), "x"),
            MemberChange::recovered);
  EXPECT_EQ(table.live_peer_count(), 1u);
  EXPECT_EQ(table.merge(rumour(peer, 2, 0, MemberStatus::alive), Time{5},
                        SuspicionClock::fixed(Time{100}), "x"),
            MemberChange::restarted);
  EXPECT_EQ(table.merge(rumour(peer, 1, 9, MemberStatus::dead), Time{6},
                        SuspicionClock::fixed(Time{100}), "x"),
            MemberChange::none);
  EXPECT_EQ(table.find(peer)->ann->generation, 2u);
}

TEST(MemberTable, SuspectsExpireInDeadlineOrderAndLeaveWhenTheyChange) {
  MemberTable table = table_with(4);
  EXPECT_FALSE(table.earliest_suspect_deadline());
  EXPECT_TRUE(table.suspect("10.0.0.3:1", SuspicionClock::fixed(Time{300}), ""));
  EXPECT_TRUE(table.suspect("10.0.0.2:1", SuspicionClock::fixed(Time{200}), ""));
  EXPECT_TRUE(table.suspect("10.0.0.4:1", SuspicionClock::fixed(Time{400}), ""));
  EXPECT_FALSE(table.suspect("10.0.0.4:1", SuspicionClock::fixed(Time{50}),
                             ""));  // already suspect: deadline kept
  EXPECT_EQ(table.earliest_suspect_deadline(), Time{200});
  EXPECT_EQ(table.expired_suspects(Time{300}),
            (std::vector<std::string>{"10.0.0.2:1", "10.0.0.3:1"}));
  // Refuted by a higher incarnation, declared dead, restarted: each leaves the suspects.
  table.merge(rumour("10.0.0.2:1", 1, 1), Time{10}, SuspicionClock::fixed(Time{999}), "x");
  EXPECT_TRUE(table.declare_dead("10.0.0.3:1", Time{10}));
  EXPECT_EQ(table.earliest_suspect_deadline(), Time{400});
  table.merge(rumour("10.0.0.4:1", 2), Time{10}, SuspicionClock::fixed(Time{999}), "x");
  EXPECT_FALSE(table.earliest_suspect_deadline());
  EXPECT_TRUE(table.expired_suspects(Time{10000}).empty());
}

// Lifeguard: every member that suspects the same incarnation on its own brings the deadline
// closer (suspicion.hpp); a repeated accuser, one we hold no row for and the suspect itself
// confirm nothing, and a record of the suspect names its latest accuser.
TEST(MemberTable, DistinctAccusersConfirmASuspicionAndBringItsDeadlineCloser) {
  MemberTable table = table_with(5);  // peers 10.0.0.2 .. 10.0.0.6
  const std::string suspect = "10.0.0.2:1";
  const SuspicionClock clock{Time{0}, Time{4s}, Time{24s}, 2};
  auto suspicion = [&](const std::string& accuser) {
    MemberRecord r = rumour(suspect, 1, 0, MemberStatus::suspect);
    r.accuser = accuser;
    return r;
  };
  EXPECT_EQ(table.merge(suspicion("10.0.0.3:1"), Time{0}, clock, "10.0.0.3:1"),
            MemberChange::suspected);
  EXPECT_EQ(table.earliest_suspect_deadline(), clock.deadline(0));
  EXPECT_EQ(table.record(*table.find(suspect)).accuser, "10.0.0.3:1");

  for (const std::string& nobody :
       {std::string("10.0.0.3:1"), std::string("10.9.9.9:1"), suspect, std::string()}) {
    EXPECT_EQ(table.merge(suspicion(nobody), Time{1}, clock, "10.0.0.5:1"), MemberChange::none)
        << nobody;
  }
  EXPECT_EQ(table.earliest_suspect_deadline(), clock.deadline(0));

  EXPECT_EQ(table.merge(suspicion("10.0.0.4:1"), Time{1}, clock, "10.0.0.5:1"),
            MemberChange::confirmed);
  EXPECT_EQ(table.earliest_suspect_deadline(), clock.deadline(1));
  EXPECT_EQ(table.record(*table.find(suspect)).accuser, "10.0.0.4:1");
  // Our own unanswered probes confirm it too; after `expected` confirmations, nothing more.
  EXPECT_TRUE(table.confirm(suspect, kSelf));
  EXPECT_EQ(table.earliest_suspect_deadline(), clock.min);
  EXPECT_FALSE(table.confirm(suspect, "10.0.0.5:1"));
  EXPECT_EQ(table.earliest_suspect_deadline(), clock.min);
  EXPECT_EQ(table.expired_suspects(clock.min), (std::vector<std::string>{suspect}));
}

// A suspicion of a newer incarnation is a new suspicion: its clock starts again with no
// confirmations; a refutation ends it and its accusers with it.
TEST(MemberTable, ANewerSuspicionStartsAfreshAndARefutationEndsIt) {
  MemberTable table = table_with(4);
  const std::string suspect = "10.0.0.2:1";
  auto suspicion = [&](std::uint64_t incarnation, const std::string& accuser) {
    MemberRecord r = rumour(suspect, 1, incarnation, MemberStatus::suspect);
    r.accuser = accuser;
    return r;
  };
  table.merge(suspicion(0, "10.0.0.3:1"), Time{0}, SuspicionClock{Time{0}, Time{4s}, Time{24s}, 2},
              "x");
  table.merge(suspicion(0, "10.0.0.4:1"), Time{0}, SuspicionClock{}, "x");
  const SuspicionClock later{Time{10s}, Time{4s}, Time{24s}, 2};
  EXPECT_EQ(table.merge(suspicion(1, "10.0.0.4:1"), Time{10s}, later, "x"),
            MemberChange::recovered);  // a newer incarnation: news, still suspect
  EXPECT_EQ(table.earliest_suspect_deadline(), later.deadline(0));
  // 10.0.0.4 accused incarnation 0 and 1: for 1 it is the first accuser, not a confirmation.
  EXPECT_EQ(table.merge(suspicion(1, "10.0.0.3:1"), Time{10s}, later, "x"),
            MemberChange::confirmed);
  EXPECT_EQ(table.earliest_suspect_deadline(), later.deadline(1));
  table.merge(rumour(suspect, 1, 2), Time{11s}, later, "x");  // refuted
  EXPECT_FALSE(table.earliest_suspect_deadline());
  EXPECT_EQ(table.record(*table.find(suspect)).accuser, "");
  EXPECT_FALSE(table.confirm(suspect, "10.0.0.4:1"));
}

TEST(MemberTable, RestartOfASuspectReplacesItsDeadline) {
  // A suspect that restarts with a suspect rumour of its new process: one deadline, the new
  // one. (A stale entry kept the earliest deadline in the past: a busy loop of the core.)
  MemberTable table = table_with(1);
  table.suspect("10.0.0.2:1", SuspicionClock::fixed(Time{100}), "");
  table.merge(rumour("10.0.0.2:1", 2, 0, MemberStatus::suspect), Time{10},
              SuspicionClock::fixed(Time{500}), "x");
  EXPECT_EQ(table.earliest_suspect_deadline(), Time{500});
  table.merge(rumour("10.0.0.2:1", 2, 1, MemberStatus::alive), Time{20},
              SuspicionClock::fixed(Time{0}), "x");
  EXPECT_FALSE(table.earliest_suspect_deadline());
}

TEST(MemberTable, LiveKeysAreSortedAndIncludeSelfButNotTheDead) {
  MemberTable table = table_with(3);
  table.declare_dead("10.0.0.3:1", Time{1});
  const auto keys = table.live_keys();
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(table.live_count(), 3u);
  EXPECT_EQ(keys[0].endpoint, kSelf);
  EXPECT_EQ(keys[2].endpoint, "10.0.0.4:1");
}

TEST(MemberTable, RetiredAnnouncementStaysReadableAfterARestart) {
  MemberTable table = table_with(1);
  const auto first = rumour("10.0.0.2:1", 1);
  table.merge(rumour("10.0.0.2:1", 2), Time{1}, SuspicionClock::fixed(Time{0}), "x");
  const Announcement* old_process = table.announcement(MemberKey{"10.0.0.2:1", 1});
  ASSERT_NE(old_process, nullptr);
  EXPECT_EQ(*old_process, first.ann);
  EXPECT_EQ(table.announcement(MemberKey{"10.0.0.2:1", 2})->generation, 2u);
  EXPECT_EQ(table.announcement(MemberKey{"10.0.0.2:1", 3}), nullptr);
  EXPECT_EQ(table.announcement(MemberKey{"10.0.0.9:1", 1}), nullptr);
}

TEST(MemberTable, GenerationLogNamesNewRowsAndRestartsOnly) {
  MemberTable table = table_with(2);  // self, .2, .3
  EXPECT_EQ(table.generation_log().size(), 3u);
  table.suspect("10.0.0.2:1", SuspicionClock::fixed(Time{5}), "");
  table.declare_dead("10.0.0.2:1", Time{5});
  EXPECT_EQ(table.generation_log().size(), 3u);
  table.merge(rumour("10.0.0.3:1", 4), Time{1}, SuspicionClock::fixed(Time{0}), "x");
  ASSERT_EQ(table.generation_log().size(), 4u);
  EXPECT_EQ(table.rows()[table.generation_log().back()].ann->endpoint, "10.0.0.3:1");
}

TEST(MemberTable, PiggybackSendsTheLeastTransmittedFirst) {
  MemberTable table = table_with(3);  // .2 .3 .4, each queued below
  table.enqueue("10.0.0.2:1", 3);
  table.enqueue("10.0.0.3:1", 3);
  auto first = table.take_piggyback(1);  // newest among the never-sent
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].ann.endpoint, "10.0.0.3:1");
  table.enqueue("10.0.0.4:1", 3);
  // .2 and .4 have not gone out yet; .4 is newer. .3 (sent once) comes after them.
  auto next = table.take_piggyback(3);
  ASSERT_EQ(next.size(), 3u);
  EXPECT_EQ(next[0].ann.endpoint, "10.0.0.4:1");
  EXPECT_EQ(next[1].ann.endpoint, "10.0.0.2:1");
  EXPECT_EQ(next[2].ann.endpoint, "10.0.0.3:1");
  // Each row goes out exactly as often as it was queued for, then the queue is empty.
  std::size_t sent = first.size() + next.size();
  while (table.piggyback_pending()) sent += table.take_piggyback(2).size();
  EXPECT_EQ(sent, 9u);
  // Queuing again starts afresh; an unknown endpoint is not queued.
  table.enqueue("10.0.0.2:1", 1);
  table.enqueue("10.0.0.2:1", 2);
  table.enqueue("10.9.9.9:1", 5);
  EXPECT_EQ(table.take_piggyback(5).size(), 1u);
  EXPECT_EQ(table.take_piggyback(5).size(), 1u);
  EXPECT_FALSE(table.piggyback_pending());
}

TEST(MemberTable, RemembersWhoToldUsLast) {
  MemberTable table(kSelf);
  table.merge(rumour("10.0.0.2:1"), Time{0}, SuspicionClock::fixed(Time{0}), "10.0.0.7:1");
  table.merge(rumour("10.0.0.3:1"), Time{0}, SuspicionClock::fixed(Time{0}), "10.0.0.7:1");
  EXPECT_EQ(table.teller(*table.find("10.0.0.2:1")), "10.0.0.7:1");
  // News changes the teller; a rumour that teaches nothing does not.
  table.merge(rumour("10.0.0.2:1", 1, 1), Time{0}, SuspicionClock::fixed(Time{0}), "10.0.0.8:1");
  table.merge(rumour("10.0.0.3:1"), Time{0}, SuspicionClock::fixed(Time{0}), "10.0.0.8:1");
  EXPECT_EQ(table.teller(*table.find("10.0.0.2:1")), "10.0.0.8:1");
  EXPECT_EQ(table.teller(*table.find("10.0.0.3:1")), "10.0.0.7:1");
  EXPECT_EQ(table.teller(Member{}), "");
}

TEST(MemberTable, SamplePeersIsDistinctLiveAndHonoursExclude) {
  MemberTable table = table_with(6);
  table.declare_dead("10.0.0.5:1", Time{1});
  Prng prng(7);
  for (int round = 0; round < 50; ++round) {
    const auto picked = table.sample_peers(prng, 10, "10.0.0.2:1");
    EXPECT_EQ(picked.size(), 4u);  // 6 peers, one dead, one excluded
    const std::set<std::string> distinct(picked.begin(), picked.end());
    EXPECT_EQ(distinct.size(), picked.size());
    EXPECT_FALSE(distinct.count("10.0.0.2:1"));
    EXPECT_FALSE(distinct.count("10.0.0.5:1"));
    EXPECT_FALSE(distinct.count(kSelf));
  }
}

TEST(MemberTable, ATellerThatIsAMemberIsNamedThroughItsRow) {
  MemberTable table = table_with(2);  // .2 and .3, told by "seed" (not a member)
  EXPECT_EQ(table.teller(*table.find("10.0.0.3:1")), "seed");
  table.merge(rumour("10.0.0.4:1"), Time{0}, SuspicionClock::fixed(Time{0}), "10.0.0.2:1");
  table.merge(rumour("10.0.0.3:1", 1, 1), Time{0}, SuspicionClock::fixed(Time{0}), "10.0.0.4:1");
  EXPECT_EQ(table.teller(*table.find("10.0.0.4:1")), "10.0.0.2:1");
  EXPECT_EQ(table.teller(*table.find("10.0.0.3:1")), "10.0.0.4:1");
}

TEST(MemberTable, IndexFindsEveryRowAsItGrows) {
  MemberTable table(kSelf);
  table.set_self(rumour(kSelf));
  for (int i = 0; i < 5000; ++i) {
    table.merge(rumour("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":7"),
                Time{0}, SuspicionClock::fixed(Time{0}), "seed");
  }
  ASSERT_EQ(table.rows().size(), 5001u);
  for (std::uint32_t i = 0; i < table.rows().size(); ++i) {
    const std::string& endpoint = table.rows()[i].ann->endpoint;
    ASSERT_EQ(table.index_of(endpoint), i) << endpoint;
  }
  EXPECT_FALSE(table.index_of("10.1.0.0:8"));
  EXPECT_FALSE(table.index_of(""));
  EXPECT_EQ(table.live_peer_count(), 5000u);
}

TEST(MemberTable, RequeuingARowInTheMiddleOfTheQueueKeepsTheRestIntact) {
  MemberTable table = table_with(4);  // .2 .3 .4 .5
  for (int i = 2; i <= 5; ++i) table.enqueue("10.0.0." + std::to_string(i) + ":1", 2);
  // Queue (never sent, newest first): .5 .4 .3 .2. Requeue .4 from the middle, drop .3.
  table.enqueue("10.0.0.4:1", 2);
  table.enqueue("10.0.0.3:1", 0);
  auto taken = table.take_piggyback(10);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].ann.endpoint, "10.0.0.4:1");
  EXPECT_EQ(taken[1].ann.endpoint, "10.0.0.5:1");
  EXPECT_EQ(taken[2].ann.endpoint, "10.0.0.2:1");
  // Their second and last transmission, in the same order; then nothing is left.
  taken = table.take_piggyback(10);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].ann.endpoint, "10.0.0.4:1");
  EXPECT_FALSE(table.piggyback_pending());
  EXPECT_TRUE(table.take_piggyback(10).empty());
}

TEST(MemberTable, TablesSharingAPoolShareAnnouncements) {
  auto pool = std::make_shared<InternPool>();
  MemberTable a("10.0.0.1:1", pool), b("10.0.0.9:1", pool);
  a.merge(rumour("10.0.0.2:1"), Time{0}, SuspicionClock::fixed(Time{0}), "seed");
  b.merge(rumour("10.0.0.2:1"), Time{0}, SuspicionClock::fixed(Time{0}), "seed");
  EXPECT_EQ(a.find("10.0.0.2:1")->ann, b.find("10.0.0.2:1")->ann);
  // A restart seen by one table changes nothing in the other.
  a.merge(rumour("10.0.0.2:1", 2), Time{0}, SuspicionClock::fixed(Time{0}), "seed");
  EXPECT_EQ(a.find("10.0.0.2:1")->ann->generation, 2u);
  EXPECT_EQ(b.find("10.0.0.2:1")->ann->generation, 1u);
  EXPECT_EQ(pool->announcement_count(), 2u);
}

}  // namespace
}  // namespace gossip_rdzv::protocol

namespace gossip_rdzv::protocol {
namespace {

// Forged joins of ever new endpoints stop at kMaxRows rows; known members still change.
TEST(MemberTable, NewEndpointsBeyondTheRowCapAreIgnored) {
  MemberTable table = table_with(1);
  for (std::size_t i = 0; table.rows().size() < MemberTable::kMaxRows; ++i) {
    table.merge(rumour("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":1"),
                Time{0}, SuspicionClock::fixed(Time{0}), "stranger");
  }
  EXPECT_EQ(table.merge(rumour("10.9.9.9:1"), Time{1}, SuspicionClock::fixed(Time{0}), "stranger"),
            MemberChange::none);
  EXPECT_FALSE(table.find("10.9.9.9:1"));
  EXPECT_EQ(table.rows().size(), MemberTable::kMaxRows);
  EXPECT_EQ(table.merge(rumour("10.0.0.2:1", 2), Time{2}, SuspicionClock::fixed(Time{0}), "seed"),
            MemberChange::restarted);
}

}  // namespace
}  // namespace gossip_rdzv::protocol
