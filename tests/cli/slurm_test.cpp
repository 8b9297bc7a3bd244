// --seed slurm: Slurm's host list syntax, the job's environment, and the command line.
#include "slurm.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_options.hpp"

namespace gossip_rdzv::cli {
namespace {

using Hosts = std::vector<std::string>;

TEST(SlurmHostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("node01"), Hosts{"node01"});
  EXPECT_EQ(expand_hostlist("node[01-03,07]"), (Hosts{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(expand_hostlist("a[8-10]"), (Hosts{"a8", "a9", "a10"}));
  EXPECT_EQ(expand_hostlist("gpu[098-101]"), (Hosts{"gpu098", "gpu099", "gpu100", "gpu101"}));
  EXPECT_EQ(expand_hostlist("n[1-2],login,m[5]"), (Hosts{"n1", "n2", "login", "m5"}));
  EXPECT_EQ(expand_hostlist("r[1-2]-n[1,3]"), (Hosts{"r1-n1", "r1-n3", "r2-n1", "r2-n3"}));
  EXPECT_EQ(expand_hostlist("node[1-2].cluster"), (Hosts{"node1.cluster", "node2.cluster"}));
}

TEST(SlurmHostlist, MalformedListsAreErrorsNamingTheProblem) {
  for (const char* bad : {"node[01-03", "node01-03]", "node[]", "node[3-1]", "node[a-b]", "n1,,n2",
                          "", "node[1-999999]"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "expected an error for '" << bad << "'";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("Slurm host list '" + std::string(bad) + "'"),
                std::string::npos)
          << error.what();
    }
  }
}

struct FakeEnv {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    const auto found = vars.find(name);
    return found == vars.end() ? nullptr : found->second.c_str();
  }
};

TEST(SlurmJobEnv, FirstThreeHostsSizeAndRank) {
  const FakeEnv env{
      {{"SLURM_JOB_NODELIST", "node[01-05]"}, {"SLURM_NNODES", "5"}, {"SLURM_NODEID", "3"}}};
  const SlurmJob job = slurm_job(env, 29400);
  EXPECT_EQ(job.seeds, (Hosts{"node01:29400", "node02:29400", "node03:29400"}));
  EXPECT_EQ(job.nnodes, "5");
  EXPECT_EQ(job.node_rank, "3");
}

TEST(SlurmJobEnv, SmallAllocationAndFallbacks) {
  const FakeEnv env{{{"SLURM_NODELIST", "solo"}}};
  const SlurmJob job = slurm_job(env, 1234);
  EXPECT_EQ(job.seeds, Hosts{"solo:1234"});
  EXPECT_EQ(job.nnodes, "1");  // counted from the list when SLURM_NNODES is unset
  EXPECT_FALSE(job.node_rank.has_value());
}

TEST(SlurmJobEnv, OutsideAnAllocationIsAClearError) {
  try {
    slurm_job(FakeEnv{}, 29400);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("not running inside a Slurm allocation"), std::string::npos) << text;
    EXPECT_NE(text.find("--seed HOST:PORT"), std::string::npos) << text;
  }
}

TEST(SlurmJobEnv, MalformedNumbersAreErrors) {
  EXPECT_THROW(slurm_job(FakeEnv{{{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_NNODES", "two"}}}, 1),
               std::invalid_argument);
  EXPECT_THROW(slurm_job(FakeEnv{{{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_NODEID", "-1"}}}, 1),
               std::invalid_argument);
}

// The command line reads the real environment: set it for one test, restore it after.
class SlurmCommandLine : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kNames) unsetenv(name);
  }
  static constexpr const char* kNames[] = {"SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_NNODES",
                                           "SLURM_JOB_NUM_NODES", "SLURM_NODEID"};
};

TEST_F(SlurmCommandLine, SeedSlurmFillsSeedsNnodesAndRankHint) {
  setenv("SLURM_JOB_NODELIST", "gpu[07-10]", 1);
  setenv("SLURM_NNODES", "4", 1);
  setenv("SLURM_NODEID", "2", 1);
  const ParseResult result = parse_command_line({"join", "--seed", "slurm", "--listen", ":29555"});
  ASSERT_TRUE(result.options) << result.text;
  const auto& config = result.options->config;
  EXPECT_EQ(config.seeds, (Hosts{"gpu07:29555", "gpu08:29555", "gpu09:29555"}));
  EXPECT_EQ(config.min_nodes, 4u);
  EXPECT_EQ(config.max_nodes, 4u);
  EXPECT_EQ(config.node_rank, 2);
}

TEST_F(SlurmCommandLine, GivenFlagsWinOverSlurm) {
  setenv("SLURM_JOB_NODELIST", "gpu[07-10]", 1);
  setenv("SLURM_NNODES", "4", 1);
  setenv("SLURM_NODEID", "2", 1);
  const ParseResult result =
      parse_command_line({"join", "--seed", "slurm", "--nnodes", "2:4", "--node-rank", "0"});
  ASSERT_TRUE(result.options) << result.text;
  EXPECT_EQ(result.options->config.min_nodes, 2u);
  EXPECT_EQ(result.options->config.node_rank, 0);
  EXPECT_EQ(result.options->config.seeds.front(), "gpu07:29400");
}

// With a range of sizes a node may be missing: SLURM_NODEID 3 as a hint in a round of 3
// would fail the round for everyone, so the ranks follow the host names instead.
TEST_F(SlurmCommandLine, ARangeOfSizesTakesNoRankHintFromSlurm) {
  setenv("SLURM_JOB_NODELIST", "gpu[07-10]", 1);
  setenv("SLURM_NNODES", "4", 1);
  setenv("SLURM_NODEID", "3", 1);
  ParseResult result = parse_command_line({"join", "--seed", "slurm", "--nnodes", "3:4"});
  ASSERT_TRUE(result.options) << result.text;
  EXPECT_EQ(result.options->config.node_rank, -1);
  result = parse_command_line({"join", "--seed", "slurm", "--nnodes", "4:4"});
  ASSERT_TRUE(result.options) << result.text;
  EXPECT_EQ(result.options->config.node_rank, 3);
}

TEST_F(SlurmCommandLine, OutsideAnAllocationIsAUsageError) {
  const ParseResult result = parse_command_line({"join", "--seed", "slurm"});
  EXPECT_FALSE(result.options);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.text.find("not running inside a Slurm allocation"), std::string::npos)
      << result.text;
}

TEST_F(SlurmCommandLine, PortZeroIsRefused) {
  setenv("SLURM_JOB_NODELIST", "n1", 1);
  const ParseResult result = parse_command_line({"join", "--seed", "slurm", "--listen", ":0"});
  EXPECT_FALSE(result.options);
  EXPECT_NE(result.text.find("fixed port"), std::string::npos) << result.text;
}

}  // namespace
}  // namespace gossip_rdzv::cli
