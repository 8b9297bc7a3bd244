// Scenarios: what a simulated run starts, when, and which faults it injects. A scenario is a
// pure function of (name, nodes, seed, options), so `gossip-rdzv-sim --scenario NAME --nodes N
// --seed S` rebuilds exactly the run that failed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gossip_rdzv/config.hpp"
#include "sim/network.hpp"

namespace gossip_rdzv::sim {

enum class TimingProfile { lan, local };

/// One simulated process slot. A slot keeps its endpoint across crashes and restarts.
struct NodeSpec {
  Time start{0};
  std::uint32_t nproc = 1;
  std::int32_t rank_hint = -1;
  std::vector<std::size_t> seeds;  ///< slots whose endpoints this node is given as seeds
  bool seed_only = false;          ///< a dedicated seed (`gossip-rdzv seed`), never a member
};

/// When a scripted crash or partition happens. The phases of the round are observed on the
/// cores (Core::snapshot of the view each holds), never assumed from times.
enum class Trigger {
  at_time,           ///< at `delay` after time zero
  after_all_joined,  ///< `delay` after every member node has reported JoinedCluster
  after_commits,     ///< `delay` after the `commits`-th Committed event of the run
  first_ready,       ///< `delay` after the first member sets its ready bit on a view it holds
  first_vote,        ///< `delay` after the first member sets its voted bit on a view it holds
};
const char* to_string(Trigger trigger);

/// Crash a slot (drop its core and every packet to or from it still in flight), optionally
/// restarting it `restart_after` later with the same endpoint, generation + 1 and a new id.
struct CrashSpec {
  std::size_t slot = 0;
  Trigger trigger = Trigger::at_time;
  Time delay{0};
  std::uint32_t commits = 1;
  std::optional<Time> restart_after;
  /// after_commits only: crash the slot whose process emitted that Committed event instead
  /// of `slot` (the node that commits first is killed right after it commits).
  bool committer = false;
};

/// A partition that starts `delay` after `trigger` fires and heals `length` later: the
/// network's Partition with its times decided by the run. `side` as in Partition.
struct PhasePartition {
  std::vector<std::uint8_t> side;
  Trigger trigger = Trigger::after_all_joined;
  Time delay{0};
  std::uint32_t commits = 1;  ///< after_commits: the commit that starts it
  Time length{0};
};

/// Elastic runs: at `at`, the workers of one member that reported its round's commit fail
/// (Core::request_next_round); the member is the `pick % count`-th of those, in slot order.
struct WorkerFailure {
  Time at{0};
  std::uint64_t pick = 0;
};

struct Scenario {
  std::string name;             ///< the name given on the command line ("mix" stays "mix")
  std::string kind;             ///< the concrete scenario run (differs from `name` for mix)
  std::uint32_t nodes_arg = 0;  ///< --nodes
  std::uint64_t seed = 0;
  std::optional<double> loss_arg;    ///< --loss, echoed in the replay command
  std::uint32_t seed_nodes_arg = 1;  ///< --seed-nodes, echoed in the replay command
  TimingProfile profile = TimingProfile::lan;

  std::string run_id = "sim";
  std::uint32_t min_nodes = 1;
  std::uint32_t max_nodes = 1;
  std::chrono::milliseconds last_call{2000};
  Timing timing;
  LinkConfig link;
  std::vector<NodeSpec> nodes;  ///< indexed by slot
  std::vector<Partition> partitions;
  std::vector<PhasePartition> phase_partitions;
  std::vector<CrashSpec> crashes;
  std::string description;  ///< the faults in words, printed with a failure
  /// Elastic rounds (CoreConfig::elastic): members keep running after a commit, and the
  /// run ends once every live member committed one round made of exactly the live members
  /// (and, with leave_at_end, once every member then left and saw the job finished).
  bool elastic = false;
  std::vector<WorkerFailure> worker_failures;
  bool leave_at_end = false;

  /// `gossip-rdzv-sim --scenario NAME --nodes N --seed S [--loss P] [--timing local]`
  std::string replay_command() const;
};

struct ScenarioOptions {
  std::optional<double> loss;  ///< overrides the scenario's loss probability
  TimingProfile profile = TimingProfile::lan;
  /// plain and bench: nodes 0..K-1 are members that every node lists as seeds (each joiner
  /// starts at a random one, so K seeds share the joins). Other scenarios keep their own.
  std::uint32_t seed_nodes = 1;
};

/// Every scenario name accepted by make_scenario, "mix" last.
const std::vector<std::string>& scenario_names();
bool is_scenario_name(const std::string& name);

/// Builds scenario `name` for `--nodes nodes` (the --nnodes MAX of the run) and `seed`.
/// "mix" draws a concrete scenario and a node count in [3, nodes] from the seed.
/// Throws std::invalid_argument for an unknown name.
Scenario make_scenario(const std::string& name, std::uint32_t nodes, std::uint64_t seed,
                       const ScenarioOptions& options = {});

/// Fills `s` (made by make_scenario's common part) as the `elastic` scenario from `prng`,
/// and says what it drew in `what` (scenario_elastic.cpp).
void make_elastic(Scenario& s, Prng& prng, std::ostringstream& what);

/// How long after the network settles (last start, heal, crash or restart) every live node
/// must have an outcome: last_call + 2 * Timing::suspicion_timeout(every node of the run)
/// + 60 s (virtual time).
Time termination_bound(const Scenario& scenario);

/// The endpoint of a slot: "10.a.b.c:29400" from slot + 1, unique up to 2^24 slots.
std::string slot_host(std::size_t slot);
std::string slot_endpoint(std::size_t slot);

}  // namespace gossip_rdzv::sim
