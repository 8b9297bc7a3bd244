// SWIM's failure detector (protocol/failure_detector.hpp), driven through the core: when a
// member is suspected, what a ping to a suspect carries, how long a suspicion lasts.
#include "protocol/failure_detector.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

// The suspicion timeout grows with log10 of the cluster size, and the size is at least
// --nnodes MIN: a node that knows few members yet (a late joiner) must not use the short
// timeout of a small cluster, or at high loss it buries live members for everyone before
// their refutation reaches it. Local timing: 4 x 200 ms x ceil(log10 100) = 1.6 s, where
// three known members would give the 1 s floor.
TEST(FailureDetector, SuspicionTimeoutAssumesAtLeastMinNodes) {
  MiniNet net(100, 100);  // never full: nobody commits
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return net.node(1)->snapshot().members.size() == 3; }, 5s));
  net.crash(3);
  auto seen = [&](auto type) {
    for (const auto& event : net.events(1)) {
      const auto* e = std::get_if<decltype(type)>(&event);
      if (e != nullptr && e->endpoint == MiniNet::endpoint(3)) return true;
    }
    return false;
  };
  ASSERT_TRUE(net.run([&] { return seen(MemberSuspected{}); }, 10s));
  const Time suspected = net.now();
  ASSERT_TRUE(net.run([&] { return seen(MemberDead{}); }, 10s));
  EXPECT_GE(net.now() - suspected, Time{std::chrono::milliseconds(1600)});
  EXPECT_LT(net.now() - suspected, Time{std::chrono::milliseconds(1700)});
}

// A member that leaves (its workers finished) is reported dead with `left`, so the runtime
// keeps reading the store keys it serves until it exits; one that stops answering is not.
TEST(FailureDetector, ALeaveIsReportedAsLeftAndACrashIsNot) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return net.node(1)->snapshot().members.size() == 3; }, 5s));
  auto death_of = [&](int id) -> const MemberDead* {
    for (const auto& event : net.events(1)) {
      const auto* e = std::get_if<MemberDead>(&event);
      if (e != nullptr && e->endpoint == MiniNet::endpoint(id)) return e;
    }
    return nullptr;
  };
  net.node(3)->leave(net.now());
  ASSERT_TRUE(net.run([&] { return death_of(3) != nullptr; }, 10s));
  EXPECT_TRUE(death_of(3)->left);
  net.crash(2);
  ASSERT_TRUE(net.run([&] { return death_of(2) != nullptr; }, 20s));
  EXPECT_FALSE(death_of(2)->left);
}

// Node 1 of a run of 3 (LAN timing: probe 1 s, timeout 500 ms) that knows nodes 2 and 3;
// node 3 acks every ping, node 2 never answers. Records what node 1 sends node 2.
struct LonelyProber {
  struct PingSent {
    Time at;
    Ping ping;
  };
  Core core;
  std::vector<PingSent> pings_to_2;
  std::vector<Time> suspected_2, dead_2;
  std::vector<std::uint32_t> health_at_suspicion;
  Time now{0};

  static CoreConfig config(std::uint32_t suspicion_mult) {
    CoreConfig c;
    c.timing.suspicion_mult = suspicion_mult;
    c.self = announcement(1, 3);
    c.run_id = "run";
    c.seeds = {MiniNet::endpoint(2)};
    c.min_nodes = c.max_nodes = 3;
    return c;
  }
  explicit LonelyProber(std::uint32_t suspicion_mult = 4) : core(config(suspicion_mult)) {
    core.start(now);
    core.on_message(now, envelope_from(2, JoinReply{{MemberRecord{announcement(2, 3), 0, {}, {}},
                                                     MemberRecord{announcement(3, 3), 0, {}, {}}},
                                                    true}));
    drain();
  }
  void drain() {
    while (auto out = core.poll_send()) {
      const auto* ping = std::get_if<Ping>(&out->msg.body);
      if (ping == nullptr) continue;
      if (out->to == MiniNet::endpoint(2)) pings_to_2.push_back({now, *ping});
      if (out->to == MiniNet::endpoint(3)) core.on_message(now, envelope_from(3, Ack{ping->seq}));
    }
    while (auto event = core.poll_event()) {
      if (const auto* s = std::get_if<MemberSuspected>(&*event);
          s && s->endpoint == MiniNet::endpoint(2)) {
        suspected_2.push_back(now);
        health_at_suspicion.push_back(core.local_health());
      }
      if (const auto* d = std::get_if<MemberDead>(&*event);
          d && d->endpoint == MiniNet::endpoint(2))
        dead_2.push_back(now);
    }
  }
  void run_until(Time end) {
    run_core_until(core, now, end, [this] { drain(); });
  }
  /// As run_until, with every tick `late` after the time the core asked for: a node that
  /// waits for a CPU (an overloaded host).
  void run_late_until(Time end, Time late) {
    run_core_until(
        core, now, end,
        [this] {
          drain();
          max_health = std::max(max_health, core.local_health());
        },
        late);
  }
  std::uint32_t max_health = 0;
};

// SWIM suspects after one unanswered period; at 30% loss that is 22% of the probes of a live
// member, and a 10,000-node cluster buried live members under the refutations. A member is
// suspected only after Timing::probe_rounds (2) unanswered periods in a row, each with a
// second direct ping at the probe timeout.
TEST(FailureDetector, SuspectsOnlyAfterProbeRoundsUnansweredInARow) {
  LonelyProber node;
  node.run_until(Time{std::chrono::seconds(30)});
  ASSERT_FALSE(node.suspected_2.empty());
  const Time suspected = node.suspected_2.front();
  std::map<std::uint64_t, std::vector<Time>> by_seq;
  for (const auto& sent : node.pings_to_2)
    if (sent.at < suspected) by_seq[sent.ping.seq].push_back(sent.at);
  ASSERT_EQ(by_seq.size(), node.core.config().timing.probe_rounds);
  Time previous{0};
  for (const auto& [seq, times] : by_seq) {
    ASSERT_EQ(times.size(), 2u) << "ping " << seq << ": first try and the retry at the timeout";
    EXPECT_EQ(times[1] - times[0], Time{std::chrono::milliseconds(500)});
    if (previous != Time{0}) {
      EXPECT_EQ(times[0] - previous, Time{std::chrono::seconds(1)}) << "consecutive periods";
    }
    previous = times[0];
  }
  EXPECT_EQ(suspected - previous, Time{std::chrono::seconds(1)});
}

// Node 1 of a run of 5 (LAN timing) that knows nodes 2-5; 3, 4 and 5 ack every ping, node 2
// never answers. `confirmers`: members that, when node 1 first suspects node 2, tell it they
// suspect node 2 too (each in a Gossip of its own).
struct ProberAmongFive {
  Core core;
  Time now{0};
  std::vector<Time> suspected_2, dead_2;
  std::vector<std::string> accusers_sent;  ///< accuser of every record of node 2 node 1 sends
  std::vector<int> confirmers;

  static CoreConfig config() {
    CoreConfig c;
    c.self = announcement(1, 5);
    c.run_id = "run";
    c.seeds = {MiniNet::endpoint(2)};
    c.min_nodes = c.max_nodes = 5;
    return c;
  }
  explicit ProberAmongFive(std::vector<int> confirming) : core(config()) {
    confirmers = std::move(confirming);
    core.start(now);
    JoinReply reply;
    for (int i = 2; i <= 5; ++i)
      reply.sample.push_back(MemberRecord{announcement(i, 5), 0, {}, {}});
    reply.seed_is_member = true;
    core.on_message(now, envelope_from(2, std::move(reply)));
    drain();
  }
  void note_records(const std::vector<MemberRecord>& records) {
    for (const auto& r : records)
      if (r.ann.endpoint == MiniNet::endpoint(2) && r.status == MemberStatus::suspect)
        accusers_sent.push_back(r.accuser);
  }
  void drain() {
    while (auto out = core.poll_send()) {
      if (const auto* ping = std::get_if<Ping>(&out->msg.body)) {
        note_records(ping->updates);
        for (int i = 3; i <= 5; ++i)
          if (out->to == MiniNet::endpoint(i))
            core.on_message(now, envelope_from(i, Ack{ping->seq}));
      } else if (const auto* gossip = std::get_if<Gossip>(&out->msg.body)) {
        note_records(gossip->updates);
      }
    }
    while (auto event = core.poll_event()) {
      if (const auto* s = std::get_if<MemberSuspected>(&*event);
          s && s->endpoint == MiniNet::endpoint(2)) {
        suspected_2.push_back(now);
        for (int i : confirmers) {
          MemberRecord r{announcement(2, 5), 0, MemberStatus::suspect, MiniNet::endpoint(i)};
          core.on_message(now, envelope_from(i, Gossip{false, {r}, {}}));
        }
      }
      if (const auto* d = std::get_if<MemberDead>(&*event);
          d && d->endpoint == MiniNet::endpoint(2))
        dead_2.push_back(now);
    }
  }
  void run_until(Time end) {
    run_core_until(core, now, end, [this] { drain(); });
  }
};

// Lifeguard's dynamic suspicion: a suspicion nobody else confirms may be our own mistake and
// lasts suspicion_max_mult (6) times the timeout: 6 x 4 s for 5 members. Our records of the
// suspect name us as its accuser, so that the others count us once.
TEST(FailureDetector, AnUnconfirmedSuspicionLastsTheLongTimeout) {
  ProberAmongFive node({});
  node.run_until(Time{60s});
  ASSERT_EQ(node.suspected_2.size(), 1u);
  ASSERT_EQ(node.dead_2.size(), 1u);
  EXPECT_EQ(node.dead_2[0] - node.suspected_2[0], Time{24s});
  ASSERT_FALSE(node.accusers_sent.empty());
  for (const auto& accuser : node.accusers_sent) EXPECT_EQ(accuser, MiniNet::endpoint(1));
}

// Each member that suspects the same incarnation shortens it: one confirmation to
// 24 - log 2 / log 3 * 20 = 11.38 s, suspicion_mult - 2 = 2 of them to the 4 s timeout.
TEST(FailureDetector, ConfirmationsFromOtherMembersShortenASuspicion) {
  ProberAmongFive one({3});
  one.run_until(Time{60s});
  ASSERT_EQ(one.dead_2.size(), 1u);
  EXPECT_NEAR(static_cast<double>((one.dead_2[0] - one.suspected_2[0]).count()), 11.38e6, 0.01e6);
  ProberAmongFive two({3, 4});
  two.run_until(Time{60s});
  ASSERT_EQ(two.dead_2.size(), 1u);
  EXPECT_EQ(two.dead_2[0] - two.suspected_2[0], Time{4s});
  // The same accuser twice is one confirmation.
  ProberAmongFive same({3, 3});
  same.run_until(Time{60s});
  ASSERT_EQ(same.dead_2.size(), 1u);
  EXPECT_EQ(same.dead_2[0] - same.suspected_2[0], one.dead_2[0] - one.suspected_2[0]);
}

// Lifeguard's buddy system: every ping to a member we suspect tells it so, long after the
// rumour left our piggyback queue, so a live member refutes as soon as we probe it. Probe
// targets are drawn at random: a 20 s suspicion makes it all but certain (all but 21 in 2^20
// draws) that node 2 is probed at least twice while suspected.
TEST(FailureDetector, PingToASuspectCarriesTheSuspicion) {
  LonelyProber node(20);
  node.run_until(Time{std::chrono::seconds(60)});
  ASSERT_FALSE(node.suspected_2.empty());
  ASSERT_FALSE(node.dead_2.empty());
  std::set<std::uint64_t> seen;
  std::size_t told = 0;
  for (const auto& sent : node.pings_to_2) {
    if (!seen.insert(sent.ping.seq).second) continue;  // the bare retry of a ping
    if (sent.at <= node.suspected_2.front() || sent.at >= node.dead_2.front()) continue;
    bool carries = false;
    for (const auto& update : sent.ping.updates)
      carries |=
          update.ann.endpoint == MiniNet::endpoint(2) && update.status == MemberStatus::suspect;
    EXPECT_TRUE(carries) << "ping at " << sent.at.count() << " us";
    ++told;
  }
  EXPECT_GE(told, 2u);
}

// Lifeguard's local health. A node that comes to its own probe timeout long after it was
// due (it was not running) gives the probe another timeout instead of counting it against
// the target: the ack may be waiting unread. Compared with a node that looks in time.
TEST(FailureDetector, ALateLookAtAProbeTimeoutGivesItMoreTime) {
  for (const bool late : {false, true}) {
    LonelyProber node;
    // On time until the first ping to node 2 (which never answers by itself) is out.
    while (node.pings_to_2.empty()) node.run_until(node.now + Time{1000});
    const LonelyProber::PingSent first = node.pings_to_2.front();
    const Time timeout{500ms};
    node.now = first.at + timeout + (late ? Time{600ms} : Time{0});
    node.core.on_tick(node.now);
    node.drain();
    if (!late) {
      EXPECT_EQ(node.pings_to_2.size(), 2u) << "in time: the retry and the indirect probes";
      EXPECT_EQ(node.core.local_health(), 0u);
      continue;
    }
    EXPECT_EQ(node.pings_to_2.size(), 1u) << "late: no retry yet, the probe got more time";
    EXPECT_EQ(node.core.local_health(), 1u);
    node.core.on_message(node.now, envelope_from(2, Ack{first.ping.seq}));  // the unread ack
    EXPECT_EQ(node.core.local_health(), 0u) << "an ack to our probe makes us healthier";
    node.run_until(node.now + Time{3s});
    EXPECT_TRUE(node.suspected_2.empty());
  }
}

// A node that is always late (every tick 600 ms after its time; LAN probe timeout 500 ms)
// probes more slowly, up to (kMaxHealth + 1) times, gives its suspects as many times their
// 4 s, and still finds the member that never answers: each probe gets more time once, not
// forever.
TEST(FailureDetector, ANodeThatIsAlwaysLateProbesMoreSlowlyAndStillBuriesADeadMember) {
  LonelyProber node;
  node.run_late_until(Time{std::chrono::seconds(180)}, Time{600ms});
  ASSERT_FALSE(node.dead_2.empty()) << "node 2 never answers";
  EXPECT_GE(node.max_health, 2u);
  EXPECT_LE(node.max_health, FailureDetector::kMaxHealth);
  Time widest{0};
  for (std::size_t i = 1; i < node.pings_to_2.size(); ++i)
    widest = std::max(widest, node.pings_to_2[i].at - node.pings_to_2[i - 1].at);
  EXPECT_GE(widest, Time{2s}) << "probes to node 2 spread out as health grows";
  ASSERT_GE(node.health_at_suspicion.front(), 1u);
  EXPECT_GE(node.dead_2.front() - node.suspected_2.front(),
            Time{4s} * (node.health_at_suspicion.front() + 1));
}

// Being suspected by others is evidence that we are slow (Lifeguard): refuting makes our
// health worse, and acks to our probes make it good again.
TEST(FailureDetector, RefutingASuspicionOfOurselvesSlowsProbingUntilAcksCome) {
  LonelyProber node;
  Gossip rumour;
  rumour.updates.push_back(MemberRecord{announcement(1, 3), 0, MemberStatus::suspect, {}});
  node.core.on_message(node.now, envelope_from(3, std::move(rumour)));
  EXPECT_EQ(node.core.local_health(), 1u);
  // Node 3 acks every ping; pings to node 2 go unanswered, which says nothing about us.
  std::optional<Time> healthy_at;
  for (int step = 0; step < 40 && !healthy_at; ++step) {
    node.run_until(node.now + Time{500ms});
    if (node.core.local_health() == 0) healthy_at = node.now;
  }
  ASSERT_TRUE(healthy_at.has_value()) << "no ack from node 3 within 20 s";
  EXPECT_EQ(node.core.snapshot().peak_local_health, 1u) << "reports remember it was slow";
}

// Node 3 holds us dead (two sides of a long partition bury each other) and tells us so. We
// refute, and node 3 gets our new row itself: it is no member we gossip to (we may hold it
// dead too), so nothing else would carry the refutation there. Once a gossip period.
TEST(FailureDetector, ARefutationGoesBackToThePeerThatToldUsOfOurDeath) {
  LonelyProber node;
  auto rows_to_3 = [&] {
    std::vector<MemberRecord> rows;
    while (auto out = node.core.poll_send()) {
      const auto* gossip = std::get_if<Gossip>(&out->msg.body);
      if (out->to != MiniNet::endpoint(3) || gossip == nullptr) continue;
      for (const auto& row : gossip->updates)
        if (row.ann.endpoint == MiniNet::endpoint(1)) rows.push_back(row);
    }
    return rows;
  };
  auto tell_dead = [&] {
    Gossip rumour;
    rumour.updates.push_back(MemberRecord{announcement(1, 3), 0, MemberStatus::dead, {}});
    node.core.on_message(node.now, envelope_from(3, std::move(rumour)));
  };
  tell_dead();
  const auto told = rows_to_3();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].status, MemberStatus::alive);
  EXPECT_EQ(told[0].incarnation, 1u);
  tell_dead();  // the same stale news again, within the period: no second message
  EXPECT_TRUE(rows_to_3().empty());
}

// The accuser's endpoint is the sender's own claim: rumours of our death under a hundred
// made-up senders get a bounded number of direct answers a gossip period, and the next
// period answers again.
TEST(FailureDetector, RefutationsToAccusersAreBoundedPerGossipPeriod) {
  LonelyProber node;
  auto direct_refutations = [&] {
    std::set<std::string> told;
    while (auto out = node.core.poll_send()) {
      const auto* gossip = std::get_if<Gossip>(&out->msg.body);
      if (gossip == nullptr || gossip->updates.size() != 1) continue;
      if (gossip->updates[0].ann.endpoint == MiniNet::endpoint(1) &&
          gossip->updates[0].status == MemberStatus::alive && out->to.rfind("10.9.", 0) == 0)
        told.insert(out->to);
    }
    return told.size();
  };
  auto accuse = [&](int first, int count) {
    for (int i = first; i < first + count; ++i) {
      Envelope env = envelope_from(3, Gossip{});
      env.sender = "10.9." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":29400";
      Gossip rumour;
      rumour.updates.push_back(MemberRecord{announcement(1, 3), 0, MemberStatus::dead, {}});
      env.body = std::move(rumour);
      node.core.on_message(node.now, env);
    }
  };
  accuse(0, 100);
  const std::size_t first = direct_refutations();
  EXPECT_GE(first, 1u);
  EXPECT_LE(first, 8u) << "one period's answers to made-up accusers";
  node.now += as_time(CoreConfig{}.timing.gossip_interval);
  accuse(100, 100);
  const std::size_t second = direct_refutations();
  EXPECT_GE(second, 1u) << "a new period answers again";
  EXPECT_LE(second, 8u);
}

// A dedicated seed probes the members it introduced like a member would: members that stay
// up stay alive in its table, and members that left are buried, so `gossip-rdzv members`
// does not list them as alive and the next job of the same run id is not handed them (it
// counted them as joined: "3/2 joined"). Its pings carry no rumour but the target's own
// suspicion: the members' view of each other is theirs alone.
TEST(FailureDetector, DedicatedSeedBuriesMembersThatLeftAndDoesNotHandThemOn) {
  MiniNet net(2, 2);
  net.seed = MiniNet::endpoint(9);
  Core& seed = net.add(9, {.seed_only = true});
  std::size_t seed_pings = 0;
  net.on_send = [&](const std::string& from, const std::string& to, const Envelope& env) {
    const auto* ping = std::get_if<Ping>(&env.body);
    if (from != MiniNet::endpoint(9) || ping == nullptr) return;
    ++seed_pings;
    for (const auto& update : ping->updates)
      EXPECT_EQ(update.ann.endpoint, to) << "the seed spreads a rumour about another member";
  };
  auto status_at_seed = [&](int i) -> std::optional<MemberStatus> {
    for (const auto& row : seed.snapshot().members)
      if (row.ann.endpoint == MiniNet::endpoint(i)) return row.status;
    return std::nullopt;
  };
  for (int i : {1, 2}) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, {1, 2}); }));
  net.run([] { return false; }, 10s);  // members that stay up stay alive
  EXPECT_GT(seed_pings, 0u);
  for (int i : {1, 2}) EXPECT_EQ(status_at_seed(i), MemberStatus::alive) << "node " << i;

  net.crash(1);
  net.crash(2);
  ASSERT_TRUE(net.run(
      [&] {
        return status_at_seed(1) == MemberStatus::dead && status_at_seed(2) == MemberStatus::dead;
      },
      30s))
      << "the seed still lists members that left as alive";

  // The next job of the same run id joins through the same seed.
  std::size_t stale_in_samples = 0;
  net.on_deliver = [&](const std::string&, const Envelope& env) {
    if (const auto* reply = std::get_if<JoinReply>(&env.body))
      for (const auto& record : reply->sample)
        if (record.ann.endpoint == MiniNet::endpoint(1) ||
            record.ann.endpoint == MiniNet::endpoint(2))
          ++stale_in_samples;
  };
  for (int i : {3, 4}) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_joined(net, {3, 4}); }));
  net.run([] { return false; }, 2s);
  EXPECT_EQ(stale_in_samples, 0u);
  for (int i : {3, 4}) {
    std::size_t live = 0;
    for (const auto& row : net.node(i)->snapshot().members)
      live += row.status != MemberStatus::dead;
    EXPECT_EQ(live, 2u) << "node " << i << " counts members of the earlier job";
  }
}

}  // namespace
}  // namespace gossip_rdzv::protocol
