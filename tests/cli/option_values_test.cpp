// One option's text to a value: the parsers of option_values.hpp on their own, each bad
// value refused with the option, the value, the problem and the expected form.
#include "option_values.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace gossip_rdzv::cli {
namespace {

// The message of the UsageError `call` throws; fails the test when it throws none.
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const UsageError& error) {
    return error.message;
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

TEST(OptionValues, RejectNamesOptionValueProblemAndForm) {
  EXPECT_EQ(refusal([] { reject("--x", "v", "is odd", "an even value"); }),
            "--x 'v': is odd (expected an even value)");
  EXPECT_EQ(refusal([] { reject("--x", "v", "is odd", ""); }), "--x 'v': is odd");
}

TEST(OptionValues, CountsSayWhyTheyAreNoCount) {
  EXPECT_EQ(to_unsigned("42"), 42u);
  EXPECT_FALSE(to_unsigned(""));
  EXPECT_FALSE(to_unsigned("+4"));
  EXPECT_FALSE(to_unsigned("4 "));
  EXPECT_EQ(why_not_a_count("99999999999999999999"), "is too large");
  EXPECT_EQ(why_not_a_count("-5"), "must not be negative");
  EXPECT_EQ(why_not_a_count("5x"), "not a whole number");
  EXPECT_EQ(parse_count("--nproc-per-node", "4294967295", "a count"), 4294967295u);
  EXPECT_EQ(refusal([] { parse_count("--nproc-per-node", "4294967296", "a count"); }),
            "--nproc-per-node '4294967296': is too large (expected a count)");
}

TEST(OptionValues, NnodesTakesACountOrARange) {
  Config config;
  parse_nnodes("2:8", config);
  EXPECT_EQ(config.min_nodes, 2u);
  EXPECT_EQ(config.max_nodes, 8u);
  parse_nnodes("4", config);
  EXPECT_EQ(config.min_nodes, 4u);
  EXPECT_EQ(config.max_nodes, 4u);
  EXPECT_EQ(refusal([&] { parse_nnodes("2:-1", config); }),
            "--nnodes '2:-1': '-1' must not be negative (expected N or MIN:MAX, e.g. 4 or 2:8)");
  EXPECT_EQ(refusal([&] { parse_nnodes("two", config); }),
            "--nnodes 'two': not a node count or range (expected N or MIN:MAX, e.g. 4 or 2:8)");
  EXPECT_NE(refusal([&] { parse_nnodes("", config); }).find("--nnodes is required"),
            std::string::npos);
}

TEST(OptionValues, PortsRankAndPaths) {
  EXPECT_EQ(parse_port("--master-port", ""), 0);
  EXPECT_EQ(parse_port("--master-port", "65535"), 65535);
  EXPECT_EQ(refusal([] { parse_port("--master-port", "0"); }),
            "--master-port '0': not a port (expected 1-65535)");
  EXPECT_EQ(refusal([] { parse_port("--master-port", "65536"); }),
            "--master-port '65536': not a port (expected 1-65535)");
  EXPECT_EQ(parse_node_rank("", 4), -1);
  EXPECT_EQ(parse_node_rank("3", 4), 3);
  EXPECT_EQ(refusal([] { parse_node_rank("-1", 4); }),
            "--node-rank '-1': must not be negative (expected 0 to 3, below the --nnodes MAX)");
  EXPECT_EQ(refusal([] { check_path("--env-file", ""); }),
            "--env-file '': empty path (expected a file path)");
}

TEST(OptionValues, SeedsSplitOnCommasAndEmptyItemsAreRefused) {
  EXPECT_EQ(split_commas({"a,b", "c"}), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_commas({"a,"}), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(parse_seeds({"node0:29400,node1:29400"}),
            (std::vector<std::string>{"node0:29400", "node1:29400"}));
  EXPECT_NE(refusal([] { parse_seeds({"node0:29400,"}); }).find("empty seed address"),
            std::string::npos);
  EXPECT_NE(refusal([] { parse_seeds({}); }).find("--seed is required"), std::string::npos);
}

TEST(OptionValues, DurationsAndEndpointsDropTheCodecsRepeatedValue) {
  EXPECT_EQ(parse_duration_option("--join-timeout", "2m"), std::chrono::minutes(2));
  const std::string message = refusal([] { parse_duration_option("--join-timeout", "3d"); });
  EXPECT_EQ(message.find("--join-timeout '3d': "), 0u) << message;
  EXPECT_EQ(message.find("in '3d'"), std::string::npos) << message;
  Config config;
  apply_listen(":29400", config);
  EXPECT_EQ(config.listen_port, 29400);
  EXPECT_TRUE(config.listen_host.empty() || config.listen_host == "0.0.0.0") << config.listen_host;
}

TEST(OptionValues, FormatsAreThoseOfTheCommand) {
  EXPECT_EQ(parse_format("export", Command::join), OutputFormat::export_);
  EXPECT_EQ(parse_format("table", Command::members), OutputFormat::table);
  EXPECT_EQ(parse_format("text", Command::doctor), OutputFormat::text);
  EXPECT_EQ(refusal([] { parse_format("table", Command::join); }),
            "--format 'table': unknown format (expected env, export or json)");
  EXPECT_EQ(parse_profile("wan").gossip_interval, Timing::wan().gossip_interval);
  EXPECT_NE(parse_profile("wan").gossip_interval, Timing::lan().gossip_interval);
  EXPECT_EQ(refusal([] { parse_profile("fast"); }),
            "--profile 'fast': unknown profile (expected lan, local or wan)");
}

}  // namespace
}  // namespace gossip_rdzv::cli
