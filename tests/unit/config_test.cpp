// Timing presets, the suspicion timeout that cores and the simulator share, and the one
// set of config rules (validate) that Node, the C API and the command line apply.
#include "gossip_rdzv/config.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "gossip_rdzv/error.hpp"
#include "protocol/config_text.hpp"

namespace gossip_rdzv {
namespace {

using std::chrono::milliseconds;

// memberlist's suspicionTimeout: mult * max(1, log10 N) intervals, here with log10 rounded
// up (a whole number of probe intervals) and floored by suspicion_min.
TEST(Timing, SuspicionTimeoutGrowsWithTheDecimalDigitsOfN) {
  const Timing lan = Timing::lan();  // probe 1 s, mult 4, min 2 s
  EXPECT_EQ(lan.suspicion_timeout(0), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout(1), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout(10), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout(11), milliseconds(8000));
  EXPECT_EQ(lan.suspicion_timeout(100), milliseconds(8000));
  EXPECT_EQ(lan.suspicion_timeout(101), milliseconds(12000));
  EXPECT_EQ(lan.suspicion_timeout(10000), milliseconds(16000));
  const Timing wan = Timing::wan();  // probe 5 s, mult 6
  EXPECT_EQ(wan.suspicion_timeout(64), milliseconds(60000));
}

TEST(Timing, SuspicionTimeoutIsNeverBelowTheMinimum) {
  Timing timing = Timing::local();  // probe 200 ms, mult 4: 800 ms for N <= 10
  EXPECT_EQ(timing.suspicion_timeout(5), timing.suspicion_min);
  timing.suspicion_min = milliseconds(0);
  EXPECT_EQ(timing.suspicion_timeout(5), milliseconds(800));
}

// Lifeguard: suspicion_mult - 2 confirmations bring an unconfirmed suspicion's
// suspicion_max_mult times longer timeout down to suspicion_timeout(); a cluster too small to
// give them uses suspicion_timeout() from the start, as memberlist does.
TEST(Timing, ConfirmationsAreExpectedOnlyWhereEnoughMembersCanGiveThem) {
  Timing lan = Timing::lan();  // mult 4, max mult 6
  EXPECT_EQ(lan.suspicion_confirmations(3), 0u);
  EXPECT_EQ(lan.suspicion_confirmations(4), 2u);
  EXPECT_EQ(lan.suspicion_confirmations(500), 2u);
  EXPECT_EQ(lan.suspicion_timeout_max(3), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout_max(4), milliseconds(24000));
  EXPECT_EQ(Timing::wan().suspicion_confirmations(64), 4u);  // mult 6
  lan.suspicion_max_mult = 1;                                // fixed timeouts
  EXPECT_EQ(lan.suspicion_confirmations(500), 0u);
  EXPECT_EQ(lan.suspicion_timeout_max(500), lan.suspicion_timeout(500));
  lan.suspicion_max_mult = 6;
  lan.suspicion_mult = 2;  // nothing between min and max to shrink through
  EXPECT_EQ(lan.suspicion_confirmations(500), 0u);
}

TEST(Timing, ProfileNamesThePresets) {
  EXPECT_EQ(Timing::profile("lan")->probe_interval, Timing::lan().probe_interval);
  EXPECT_EQ(Timing::profile("local")->probe_interval, Timing::local().probe_interval);
  EXPECT_EQ(Timing::profile("wan")->gossip_fanout, Timing::wan().gossip_fanout);
  EXPECT_FALSE(Timing::profile("fast").has_value());
}

Config valid_config() {
  Config config;
  config.seeds = {"node0:29400"};
  config.min_nodes = 2;
  config.max_nodes = 4;
  return config;
}

TEST(Validate, AcceptsTheDefaultsWithASeed) {
  EXPECT_FALSE(find_problem(valid_config()).has_value());
  EXPECT_NO_THROW(validate(valid_config()));
  Config seed_only;
  seed_only.dedicated_seed = true;  // a dedicated seed needs no --seed
  EXPECT_FALSE(find_problem(seed_only).has_value());
}

struct BadField {
  const char* name;
  std::function<void(Config&)> spoil;
  const char* field;
  const char* option;
};

TEST(Validate, NamesTheFieldAndTheOptionOfEachBrokenRule) {
  const std::vector<BadField> cases = {
      {"empty run id", [](Config& c) { c.run_id = ""; }, "run_id", "--run-id"},
      {"run id with space", [](Config& c) { c.run_id = "my job"; }, "run_id", "--run-id"},
      {"run id too long", [](Config& c) { c.run_id = std::string(65, 'a'); }, "run_id", "--run-id"},
      {"min zero", [](Config& c) { c.min_nodes = 0; }, "min_nodes", "--nnodes"},
      {"min above max", [](Config& c) { c.min_nodes = 5; }, "min_nodes", "--nnodes"},
      {"max above a round", [](Config& c) { c.max_nodes = 70000; }, "max_nodes", "--nnodes"},
      {"nproc zero", [](Config& c) { c.nproc_per_node = 0; }, "nproc_per_node", "--nproc-per-node"},
      {"nproc huge", [](Config& c) { c.nproc_per_node = 2'000'000; }, "nproc_per_node",
       "--nproc-per-node"},
      {"rank at max", [](Config& c) { c.node_rank = 4; }, "node_rank", "--node-rank"},
      {"rank below -1", [](Config& c) { c.node_rank = -2; }, "node_rank", "--node-rank"},
      {"no seed", [](Config& c) { c.seeds.clear(); }, "seeds", "--seed"},
      {"bad seed port", [](Config& c) { c.seeds = {"node0:99999"}; }, "seeds", "--seed"},
      {"advertise with port", [](Config& c) { c.advertise_host = "10.0.0.5:29400"; },
       "advertise_host", "--advertise"},
      {"advertise in brackets", [](Config& c) { c.advertise_host = "[fd00::1]"; }, "advertise_host",
       "--advertise"},
      {"zero probe period", [](Config& c) { c.timing.probe_interval = milliseconds(0); },
       "timing.probe_interval", ""},
      {"no probe rounds", [](Config& c) { c.timing.probe_rounds = 0; }, "timing.probe_rounds", ""},
      {"no suspicion max mult", [](Config& c) { c.timing.suspicion_max_mult = 0; },
       "timing.suspicion_max_mult", ""},
      {"huge suspicion max mult", [](Config& c) { c.timing.suspicion_max_mult = 101; },
       "timing.suspicion_max_mult", ""},
      {"no fan-out", [](Config& c) { c.timing.gossip_fanout = 0; }, "timing.gossip_fanout", ""},
      {"zero join timeout", [](Config& c) { c.join_timeout = milliseconds(0); }, "join_timeout",
       "--join-timeout"},
      {"master port is the gossip port",
       [](Config& c) {
         c.listen_port = 29400;
         c.master_port = 29400;
       },
       "master_port", "--master-port"},
  };
  for (const auto& bad : cases) {
    Config config = valid_config();
    bad.spoil(config);
    const auto problem = find_problem(config);
    ASSERT_TRUE(problem.has_value()) << bad.name;
    EXPECT_EQ(problem->field, bad.field) << bad.name;
    EXPECT_EQ(problem->option, bad.option) << bad.name;
    EXPECT_FALSE(problem->expected.empty()) << bad.name;
    try {
      validate(config);
      ADD_FAILURE() << bad.name << ": validate() accepted it";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::usage) << bad.name;
      EXPECT_EQ(std::string(error.what()), problem->message()) << bad.name;
    }
  }
}

TEST(Validate, MessageQuotesTheValueAndEndsWithTheForm) {
  Config config = valid_config();
  config.node_rank = 4;
  EXPECT_EQ(find_problem(config)->message(),
            "config node_rank '4' (--node-rank): must be below the node count (expected 0 to 3, "
            "below the --nnodes MAX, or none)");
}

TEST(Validate, RunIdRuleStandsAlone) {
  EXPECT_FALSE(find_run_id_problem("job-42.a_b").has_value());
  EXPECT_EQ(find_run_id_problem("")->problem, "is empty");
  EXPECT_EQ(find_run_id_problem("job#1")->problem, "is invalid");
}

TEST(ConfigText, ParsesNnodesAsCountOrRange) {
  EXPECT_EQ(protocol::parse_nnodes("4")->min_nodes, 4u);
  EXPECT_EQ(protocol::parse_nnodes("4")->max_nodes, 4u);
  EXPECT_EQ(protocol::parse_nnodes("2:8")->min_nodes, 2u);
  EXPECT_EQ(protocol::parse_nnodes("2:8")->max_nodes, 8u);
  EXPECT_TRUE(protocol::parse_nnodes("0")) << "ranges are validate()'s to judge";
  for (const char* bad : {"", "x", "2:", ":8", "-1", "2:8:9", "99999999999"}) {
    EXPECT_FALSE(protocol::parse_nnodes(bad)) << bad;
  }
}

}  // namespace
}  // namespace gossip_rdzv
