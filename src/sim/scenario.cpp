#include "sim/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace gossip_rdzv::sim {

namespace {

using std::chrono::milliseconds;

Time ms(std::int64_t value) {
  return std::chrono::duration_cast<Time>(milliseconds(value));
}

std::string seconds_text(Time t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(t.count()) / 1e6);
  return buf;
}

// Scenario streams of the run seed: 1 scenario shape, 2 network (network.cpp), 3 node ids and
// node rng seeds (processes.cpp), 7 the mix's choice of scenario.
constexpr std::uint64_t kScenarioStream = 1;
constexpr std::uint64_t kMixStream = 7;

/// How long a node may take to start after time zero: launchers do not start every
/// machine at the same instant.
Time start_spread(TimingProfile profile) {
  return profile == TimingProfile::lan ? ms(500) : ms(50);
}

Scenario base(const std::string& kind, std::uint32_t nodes, std::uint64_t seed,
              const ScenarioOptions& options, Prng& prng) {
  Scenario s;
  s.name = kind;
  s.kind = kind;
  s.nodes_arg = nodes;
  s.seed = seed;
  s.loss_arg = options.loss;
  s.seed_nodes_arg = options.seed_nodes;
  s.profile = options.profile;
  s.timing = options.profile == TimingProfile::lan ? Timing::lan() : Timing::local();
  s.last_call = options.profile == TimingProfile::lan ? milliseconds(2000) : milliseconds(300);
  if (options.profile == TimingProfile::local) {
    s.link.latency_base = Time(30);
    s.link.latency_jitter_mean = Time(20);
    s.link.reorder_max_delay = ms(2);
  }
  s.min_nodes = s.max_nodes = nodes;
  s.nodes.resize(nodes);
  const Time spread = start_spread(options.profile);
  for (auto& node : s.nodes) {
    node.start = prng.time_between(Time(0), spread);
    node.seeds = {0};
  }
  return s;
}

/// Applies --loss after the scenario chose its own.
void finish(Scenario& s, const ScenarioOptions& options) {
  if (options.loss) s.link.loss_probability = *options.loss;
}

std::size_t random_member(Prng& prng, const Scenario& s, bool allow_slot_zero) {
  std::size_t count = 0;
  for (const auto& n : s.nodes)
    if (!n.seed_only) ++count;
  const std::size_t low = allow_slot_zero || count < 2 ? 0 : 1;
  return static_cast<std::size_t>(prng.between(low, count - 1));
}

Partition isolate(std::size_t slot, std::size_t slots, Time from, Time until) {
  Partition p;
  p.side.assign(slots, 0);
  p.side[slot] = 1;
  p.from = from;
  p.until = until;
  return p;
}

void add_nodes(Scenario& s, std::size_t count, Time start_low, Time start_high, Prng& prng) {
  for (std::size_t i = 0; i < count; ++i) {
    NodeSpec node;
    node.start = prng.time_between(start_low, start_high);
    node.seeds = {0};
    s.nodes.push_back(node);
  }
}

/// A majority MIN for MIN:MAX runs, so two disjoint groups cannot both reach it.
std::uint32_t majority_min(std::uint32_t max_nodes) {
  return max_nodes / 2 + 1;
}

Scenario make_concrete(const std::string& kind, std::uint32_t n, std::uint64_t seed,
                       const ScenarioOptions& options) {
  Prng prng(seed, kScenarioStream);
  Scenario s = base(kind, n, seed, options, prng);
  const Time spread = start_spread(options.profile);
  const Time susp = std::chrono::duration_cast<Time>(s.timing.suspicion_timeout(n));
  std::ostringstream what;

  const bool seed_list = (kind == "plain" || kind == "bench") && options.seed_nodes > 1;
  if (seed_list) {
    std::vector<std::size_t> seeds;
    for (std::size_t i = 0; i < std::min<std::size_t>(options.seed_nodes, n); ++i)
      seeds.push_back(i);
    for (auto& node : s.nodes) node.seeds = seeds;
  }
  if (kind == "plain") {
    what << n << " nodes, --nnodes " << n << ", no faults";
  } else if (kind == "bench") {
    // For figures: the seed is up first, so the time measured is the protocol's, not join
    // backoff waiting for a seed that is not there yet.
    for (std::size_t i = 0; i < (seed_list ? options.seed_nodes : 1u) && i < n; ++i)
      s.nodes[i].start = Time(0);
    what << n << " nodes, --nnodes " << n << ", " << (seed_list ? options.seed_nodes : 1u)
         << " seed(s) up first, no faults but --loss";
  } else if (kind == "loss10" || kind == "loss30") {
    s.link.loss_probability = kind == "loss10" ? 0.10 : 0.30;
    what << n << " nodes, loss " << s.link.loss_probability;
  } else if (kind == "dup-reorder") {
    s.link.duplicate_probability = 0.2;
    s.link.reorder_probability = 0.3;
    what << n << " nodes, 20% duplicated, 30% delayed up to "
         << seconds_text(s.link.reorder_max_delay);
  } else if (kind == "over-max" || kind == "over-max-2x") {
    const std::size_t extra = kind == "over-max" ? 1 : n;
    add_nodes(s, extra, Time(0), spread, prng);
    // With 2 x MAX nodes there are 2 x MIN: two groups that lose sight of each other (loss
    // long enough to declare the seed dead) must still not both commit.
    what << s.nodes.size() << " nodes for --nnodes " << n << ": exactly one assignment";
  } else if (kind == "last-call") {
    // MIN nodes start at once; the rest arrive around the end of the last-call window,
    // some before it closes, some after, and a few more than MAX.
    s.min_nodes = std::min<std::uint32_t>(n, majority_min(n));
    const Time early_end = ms(20);
    for (std::size_t i = 0; i < s.nodes.size(); ++i)
      s.nodes[i].start = i < s.min_nodes ? prng.time_between(Time(0), early_end) : Time(0);
    const Time window_end = early_end + std::chrono::duration_cast<Time>(s.last_call);
    const Time jitter = options.profile == TimingProfile::lan ? ms(150) : ms(30);
    for (std::size_t i = s.min_nodes; i < s.nodes.size(); ++i)
      s.nodes[i].start = prng.time_between(window_end - jitter, window_end + jitter);
    add_nodes(s, prng.between(0, 2), window_end - jitter, window_end + jitter, prng);
    what << "--nnodes " << s.min_nodes << ":" << n << ", " << s.min_nodes << " start at once, "
         << (s.nodes.size() - s.min_nodes) << " arrive at the end of the last call ("
         << seconds_text(window_end) << " +- " << seconds_text(jitter) << ")";
  } else if (kind == "restart" || kind == "crash") {
    const bool restart = kind == "restart";
    if (!restart || prng.chance(0.5)) s.min_nodes = std::max<std::uint32_t>(majority_min(n), n - 1);
    CrashSpec crash;
    crash.slot = random_member(prng, s, prng.chance(0.15));
    const std::uint64_t when = prng.below(3);
    if (when == 0) {
      crash.trigger = Trigger::at_time;
      crash.delay = prng.time_between(Time(0), spread + ms(200));
    } else {
      crash.trigger = Trigger::after_commits;
      crash.commits =
          static_cast<std::uint32_t>(prng.between(1, std::max<std::uint32_t>(1, n / 2)));
      crash.delay = when == 1 ? Time(0) : prng.time_between(Time(0), ms(50));
    }
    if (restart) crash.restart_after = prng.time_between(ms(10), ms(3000));
    s.crashes.push_back(crash);
    what << "--nnodes " << s.min_nodes << ":" << s.max_nodes << ", slot " << crash.slot
         << " crashes "
         << (crash.trigger == Trigger::at_time
                 ? "at " + seconds_text(crash.delay)
                 : seconds_text(crash.delay) + " after commit #" + std::to_string(crash.commits));
    if (restart) what << ", restarts " << seconds_text(*crash.restart_after) << " later";
  } else if (kind == "wrong-suspicion") {
    if (prng.chance(0.5)) s.min_nodes = std::max<std::uint32_t>(majority_min(n), n - 1);
    const std::size_t victim = random_member(prng, s, false);
    // Around the last start, so the round is in progress, but after the victim started (a
    // node cut off before its first join is a different story: it never joined).
    Time last_start{0};
    for (const auto& node : s.nodes) last_start = std::max(last_start, node.start);
    const Time t1 = std::max(
        s.nodes[victim].start + ms(5),
        prng.time_between(last_start - std::min(last_start, ms(100)), last_start + ms(100)));
    const Time short_len = prng.time_between(
        std::chrono::duration_cast<Time>(s.timing.probe_interval) / 2,
        std::max(std::chrono::duration_cast<Time>(s.timing.probe_interval),
                 std::chrono::duration_cast<Time>(s.timing.suspicion_min) * 3 / 4));
    const Time gap = prng.time_between(ms(100), ms(2000));
    const Time t2 = t1 + short_len + gap;
    // Long enough to be buried: the probe rounds that suspect it, the suspicion timeout, and
    // two more probe intervals for the rumour to spread.
    const Time long_len =
        susp +
        (s.timing.probe_rounds + 2) * std::chrono::duration_cast<Time>(s.timing.probe_interval) +
        prng.time_between(Time(0), ms(5000));
    s.partitions.push_back(isolate(victim, s.nodes.size(), t1, t1 + short_len));
    s.partitions.push_back(isolate(victim, s.nodes.size(), t2, t2 + long_len));
    what << "--nnodes " << s.min_nodes << ":" << s.max_nodes << ", slot " << victim
         << " isolated at " << seconds_text(t1) << " for " << seconds_text(short_len)
         << " (shorter than suspicion " << seconds_text(susp) << "), again at " << seconds_text(t2)
         << " for " << seconds_text(long_len);
  } else if (kind == "slow-host") {
    // One agent's host is slow (SEED.md): everyone else waits for it, gossiping and probing
    // under loss, for several suspicion timeouts. Nobody alive may be declared dead meanwhile.
    const std::size_t late = random_member(prng, s, false);
    s.nodes[late].start = 2 * susp + prng.time_between(Time(0), susp);
    what << n << " nodes, --nnodes " << n << ", slot " << late << " starts at "
         << seconds_text(s.nodes[late].start) << " (suspicion " << seconds_text(susp) << ")";
  } else if (kind == "seed-killed") {
    // Three dedicated seeds, the round's quorum base; one dies after the joins. The other two
    // are a majority of the seed list and witness the view. (With one seed, its death before
    // the commit stops the round by design: docs/protocol.md, "Quorum base".)
    if (prng.chance(0.5)) s.min_nodes = std::max<std::uint32_t>(majority_min(n), n - 1);
    std::vector<std::size_t> seed_slots;
    for (int k = 0; k < 3; ++k) {
      NodeSpec seed_node;
      seed_node.seed_only = true;
      seed_node.start = Time(0);
      seed_slots.push_back(s.nodes.size());
      s.nodes.push_back(seed_node);
    }
    for (auto& node : s.nodes) node.seeds = seed_slots;
    CrashSpec crash;
    crash.slot = seed_slots[prng.below(3)];
    crash.trigger = Trigger::after_all_joined;
    crash.delay = prng.time_between(Time(0), ms(200));
    s.crashes.push_back(crash);
    what << "--nnodes " << s.min_nodes << ":" << s.max_nodes << ", 3 dedicated seeds, slot "
         << crash.slot << " killed " << seconds_text(crash.delay) << " after all joined";
  } else if (kind == "seed-member-killed") {
    // Nodes 0, 1 and 2 are member seeds listed by everyone; node 0 dies in the round. The two
    // left are a majority of the seed list.
    s.min_nodes = std::max<std::uint32_t>(majority_min(n), n - 1);
    std::vector<std::size_t> seed_slots;
    for (std::size_t k = 0; k < std::min<std::size_t>(3, s.nodes.size()); ++k)
      seed_slots.push_back(k);
    for (auto& node : s.nodes) node.seeds = seed_slots;
    CrashSpec crash;
    crash.slot = 0;
    crash.trigger = Trigger::after_all_joined;
    crash.delay = prng.time_between(Time(0), ms(50));
    s.crashes.push_back(crash);
    what << "--nnodes " << s.min_nodes << ":" << s.max_nodes
         << ", member seeds 0-2, seed node 0 killed " << seconds_text(crash.delay)
         << " after all joined";
  } else if (kind == "seed-list") {
    // Every node lists the same K seeds, which start within a few milliseconds of each
    // other: each may first meet a different one, and the joiners spread over them. The
    // seeds are members, or (one run in three) dedicated seeds next to the N members.
    const bool dedicated = prng.chance(1.0 / 3.0);
    const auto k = static_cast<std::size_t>(prng.between(2, std::min<std::uint32_t>(5, n)));
    std::vector<std::size_t> seeds;
    for (std::size_t i = 0; i < k; ++i) {
      if (dedicated) {
        NodeSpec seed_node;
        seed_node.seed_only = true;
        seeds.push_back(s.nodes.size());
        s.nodes.push_back(seed_node);
      } else {
        seeds.push_back(i);
      }
    }
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
      s.nodes[i].seeds = seeds;
      if (std::find(seeds.begin(), seeds.end(), i) != seeds.end())
        s.nodes[i].start = prng.time_between(Time(0), ms(20));
    }
    static constexpr double kLoss[] = {0.0, 0.05, 0.1, 0.2};
    if (!options.loss) s.link.loss_probability = kLoss[prng.below(4)];
    what << n << " nodes, --nnodes " << n << ", " << k << (dedicated ? " dedicated" : " member")
         << " seeds listed by every node";
  } else if (kind == "split") {
    // MIN <= MAX/2: two groups of MIN, each around one of the two seeds that every node lists,
    // optionally partitioned from each other until a heal. Neither side holds a majority of
    // the seed list alone, so at most one view commits, whatever the partition does.
    s.min_nodes = std::max<std::uint32_t>(1, n / 2);
    s.nodes.resize(2 * s.min_nodes);
    const std::size_t group_b = s.min_nodes;
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
      s.nodes[i].start = prng.time_between(Time(0), spread);
      s.nodes[i].seeds = {i < group_b ? std::size_t{0} : group_b,
                          i < group_b ? group_b : std::size_t{0}};
    }
    const bool partitioned = prng.chance(0.5);
    if (partitioned) {
      Partition p;
      p.side.assign(s.nodes.size(), 0);
      for (std::size_t i = group_b; i < s.nodes.size(); ++i) p.side[i] = 1;
      p.from = Time(0);
      p.until = prng.time_between(ms(500), ms(10000));
      s.partitions.push_back(p);
    }
    what << "--nnodes " << s.min_nodes << ":" << s.max_nodes << ", two groups of " << s.min_nodes
         << " around seeds 0 and " << group_b << " (both listed by every node)"
         << (partitioned ? ", partitioned until " + seconds_text(s.partitions[0].until) : "");
  } else if (kind == "partition-at-phase") {
    // The disjoint-groups hole (docs/protocol.md, "Agreement"): a job that could hold two
    // views of MIN each is cut in two once its nodes joined, at a phase of the round seen on
    // the cores, and healed later. Three shapes, MAX = N: 2 MIN <= MAX with fewer than MAX
    // processes (2:8 with 4), 2 MIN <= MAX with MAX processes (2:4 with 4), and more than
    // MAX processes, 2 MIN of them (3:4 with 6). Only a side with a majority of the seed
    // list may commit; the other waits for the heal.
    const std::uint64_t shape = prng.below(3);
    std::uint32_t processes = n;
    if (shape == 0) {
      s.min_nodes = static_cast<std::uint32_t>(prng.between(2, std::max<std::uint32_t>(2, n / 4)));
      processes = 2 * s.min_nodes;
    } else if (shape == 1) {
      s.min_nodes = std::max<std::uint32_t>(2, n / 2);
      processes = std::max<std::uint32_t>(n, 2 * s.min_nodes);
    } else {
      s.min_nodes = majority_min(n);
      processes = 2 * s.min_nodes;
    }
    s.nodes.resize(processes);
    for (auto& node : s.nodes) node.start = prng.time_between(Time(0), spread);
    // Seeds: one member seed (half the runs), three member seeds, or three dedicated seeds;
    // every node lists the same ones.
    const std::uint64_t seeding = prng.below(4);
    std::vector<std::size_t> seeds;
    if (seeding <= 1) {
      seeds = {0};
    } else if (seeding == 2) {
      seeds = {0, 1, 2};
    } else {
      // Three: an even number of dedicated seeds split evenly by the cut can leave each side
      // ready with one witness and neither able to win, for good (a documented liveness
      // limit, docs/protocol.md). The draw stays, so that recorded seeds replay.
      (void)prng.between(2, 3);
      const std::size_t k = 3;
      for (std::size_t i = 0; i < k; ++i) {
        NodeSpec seed_node;
        seed_node.seed_only = true;
        seeds.push_back(s.nodes.size());
        s.nodes.push_back(seed_node);
      }
    }
    for (auto& node : s.nodes) node.seeds = seeds;
    // Two sides of the members, as even as possible, in a random order; dedicated seeds fall
    // on either side.
    std::vector<std::size_t> order(processes);
    for (std::size_t i = 0; i < processes; ++i) order[i] = i;
    for (std::size_t i = processes; i > 1; --i) std::swap(order[i - 1], order[prng.below(i)]);
    PhasePartition cut;
    cut.side.assign(s.nodes.size(), 0);
    for (std::size_t i = processes / 2; i < processes; ++i) cut.side[order[i]] = 1;
    for (std::size_t i = processes; i < s.nodes.size(); ++i)
      cut.side[i] = static_cast<std::uint8_t>(prng.below(2));
    const std::uint64_t phase = prng.below(5);
    if (phase == 4) {
      // Apart from the start: each side joins through the seeds it can reach, if any.
      cut.trigger = Trigger::at_time;
    } else if (phase == 0) {
      // Before anyone is ready: during the last call, or (MAX processes or more, where the
      // view forms as soon as they are known) at once.
      cut.trigger = Trigger::after_all_joined;
      cut.delay = prng.time_between(
          Time(0), processes < n ? std::chrono::duration_cast<Time>(s.last_call) : ms(5));
    } else {
      cut.trigger = phase == 1   ? Trigger::first_ready
                    : phase == 2 ? Trigger::first_vote
                                 : Trigger::after_commits;
      cut.delay = prng.time_between(Time(0), ms(2));
    }
    // Mostly long enough for each side to bury the other (the suspicion timeout, the probe
    // rounds before it, the rumour), sometimes shorter than any suspicion.
    const Time probe = std::chrono::duration_cast<Time>(s.timing.probe_interval);
    const Time buried = susp + (s.timing.probe_rounds + 2) * probe;
    cut.length = prng.chance(0.25) ? prng.time_between(ms(200), buried)
                                   : prng.time_between(buried, buried + susp + ms(6000));
    s.phase_partitions.push_back(cut);
    static constexpr double kLoss[] = {0.0, 0.0, 0.05, 0.1};
    s.link.loss_probability = kLoss[prng.below(4)];
    std::size_t side_one = 0;
    for (std::size_t i = 0; i < processes; ++i) side_one += cut.side[i];
    what << "--nnodes " << s.min_nodes << ":" << s.max_nodes << ", " << processes << " processes, "
         << seeds.size() << (seeding == 3 ? " dedicated" : " member") << " seed(s), cut "
         << (processes - side_one) << "|" << side_one << " " << seconds_text(cut.delay) << " after "
         << to_string(cut.trigger) << " for " << seconds_text(cut.length) << ", loss "
         << s.link.loss_probability;
  } else if (kind == "kill-first-committer") {
    // The one-vote hole (docs/protocol.md, "Agreement"): the first node to commit is killed
    // at that instant or within 2 ms (its last packets may die with it) and restarts at once
    // (1-300 ms later) with a new master port; lost packets make the ready bits arrive on
    // one side only. N = 2 is the hole's own shape.
    s.min_nodes = s.max_nodes = n;
    CrashSpec crash;
    crash.trigger = Trigger::after_commits;
    crash.commits = 1;
    crash.committer = true;
    crash.delay = prng.chance(0.5) ? Time(0) : prng.time_between(Time(0), ms(2));
    crash.restart_after = prng.time_between(ms(1), ms(300));
    s.crashes.push_back(crash);
    static constexpr double kLoss[] = {0.0, 0.1, 0.2, 0.3};
    s.link.loss_probability = kLoss[prng.below(4)];
    what << "--nnodes " << n << ", the first committer killed " << seconds_text(crash.delay)
         << " after its commit, restarted " << seconds_text(*crash.restart_after) << " later, loss "
         << s.link.loss_probability;
  } else if (kind == "hints") {
    // Mixed --nproc-per-node and --node-rank hints on a random subset (distinct, < N).
    std::vector<std::int32_t> ranks(n);
    for (std::uint32_t i = 0; i < n; ++i) ranks[i] = static_cast<std::int32_t>(i);
    for (std::uint32_t i = n; i > 1; --i) std::swap(ranks[i - 1], ranks[prng.below(i)]);
    for (std::uint32_t i = 0; i < n; ++i) {
      s.nodes[i].nproc = static_cast<std::uint32_t>(prng.between(1, 8));
      if (prng.chance(0.4)) s.nodes[i].rank_hint = ranks[i];
    }
    what << n << " nodes, mixed nproc, rank hints on a subset";
  } else if (kind == "elastic") {
    make_elastic(s, prng, what);
  } else {
    throw std::invalid_argument("unknown scenario '" + kind + "'");
  }
  s.description = what.str();
  finish(s, options);
  return s;
}

}  // namespace

const char* to_string(Trigger trigger) {
  switch (trigger) {
    case Trigger::at_time:
      return "time zero";  // the delay is the time
    case Trigger::after_all_joined:
      return "all joined";
    case Trigger::after_commits:
      return "the first commit";
    case Trigger::first_ready:
      return "the first ready bit";
    case Trigger::first_vote:
      return "the first vote";
  }
  return "?";
}

const std::vector<std::string>& scenario_names() {
  static const std::vector<std::string> names = {"plain",
                                                 "bench",
                                                 "loss10",
                                                 "loss30",
                                                 "dup-reorder",
                                                 "over-max",
                                                 "over-max-2x",
                                                 "last-call",
                                                 "restart",
                                                 "crash",
                                                 "wrong-suspicion",
                                                 "seed-killed",
                                                 "seed-member-killed",
                                                 "split",
                                                 "hints",
                                                 "seed-list",
                                                 "slow-host",
                                                 "partition-at-phase",
                                                 "kill-first-committer",
                                                 "elastic",
                                                 "mix"};
  return names;
}

bool is_scenario_name(const std::string& name) {
  const auto& names = scenario_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

Scenario make_scenario(const std::string& name, std::uint32_t nodes, std::uint64_t seed,
                       const ScenarioOptions& options) {
  if (!is_scenario_name(name)) throw std::invalid_argument("unknown scenario '" + name + "'");
  if (name != "mix") {
    Scenario s = make_concrete(name, std::max<std::uint32_t>(nodes, 2), seed, options);
    s.nodes_arg = nodes;
    return s;
  }
  Prng prng(seed, kMixStream);
  // The kinds mix draws from, frozen: a change here changes what every mix seed draws, and
  // the regression tests and the documented long run name mix seeds. A newer kind gets its
  // own sweep (seed-list: tests/sim/sim_sweep_test.cpp). `bench` is left out: it is plain.
  static const std::vector<std::string> kMixKinds = {
      "plain",     "loss10",  "loss30", "dup-reorder",     "over-max",    "over-max-2x",
      "last-call", "restart", "crash",  "wrong-suspicion", "seed-killed", "seed-member-killed",
      "split",     "hints"};
  const std::string kind = kMixKinds[prng.below(kMixKinds.size())];
  const std::uint32_t low = std::min<std::uint32_t>(3, nodes);
  const auto n = static_cast<std::uint32_t>(prng.between(low, std::max(low, nodes)));
  Scenario s = make_concrete(kind, std::max<std::uint32_t>(n, 2), seed, options);
  // Every concrete scenario may additionally meet background loss, duplication, reordering
  // and mixed nproc.
  if (!options.loss && kind != "loss10" && kind != "loss30") {
    static constexpr double kLoss[] = {0.0, 0.0, 0.01, 0.05, 0.1, 0.2};
    s.link.loss_probability = kLoss[prng.below(6)];
  }
  if (prng.chance(0.3)) {
    s.link.duplicate_probability = std::max(s.link.duplicate_probability, 0.05);
    s.link.reorder_probability = std::max(s.link.reorder_probability, 0.1);
  }
  if (kind != "hints" && prng.chance(0.3))
    for (auto& node : s.nodes) node.nproc = static_cast<std::uint32_t>(prng.between(1, 4));
  s.name = "mix";
  s.nodes_arg = nodes;
  s.description = kind + ": " + s.description + ", loss " +
                  std::to_string(s.link.loss_probability) + ", dup " +
                  std::to_string(s.link.duplicate_probability);
  return s;
}

std::string Scenario::replay_command() const {
  std::ostringstream cmd;
  cmd << "gossip-rdzv-sim --scenario " << name << " --nodes " << nodes_arg << " --seed " << seed;
  if (loss_arg) cmd << " --loss " << *loss_arg;
  if (profile == TimingProfile::local) cmd << " --timing local";
  if (seed_nodes_arg > 1) cmd << " --seed-nodes " << seed_nodes_arg;
  return cmd.str();
}

Time termination_bound(const Scenario& scenario) {
  return std::chrono::duration_cast<Time>(scenario.last_call) +
         2 * std::chrono::duration_cast<Time>(
                 scenario.timing.suspicion_timeout(scenario.nodes.size())) +
         ms(60000);
}

std::string slot_host(std::size_t slot) {
  const std::size_t id = slot + 1;
  return "10." + std::to_string((id >> 16) & 0xff) + "." + std::to_string((id >> 8) & 0xff) + "." +
         std::to_string(id & 0xff);
}

std::string slot_endpoint(std::size_t slot) {
  return slot_host(slot) + ":29400";
}

}  // namespace gossip_rdzv::sim
