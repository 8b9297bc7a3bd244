// parse_command_line is a pure function: these tests run no node and open no socket.
#include "cli_options.hpp"
#include "protocol/messages.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace gossip_rdzv::cli {
namespace {

using Args = std::vector<std::string>;

CliOptions parse_ok(const Args& args) {
  ParseResult result = parse_command_line(args);
  EXPECT_TRUE(result.options.has_value()) << result.text;
  return result.options.value_or(CliOptions{});
}

// Returns the error text after checking it is a usage error of two lines.
std::string parse_error(const Args& args) {
  ParseResult result = parse_command_line(args);
  EXPECT_FALSE(result.options.has_value());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.text.find("for usage.\n"), std::string::npos) << result.text;
  return result.text;
}

Args join_args(Args extra) {
  Args args{"join", "--seed", "node0:29400", "--nnodes", "4"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(CliOptionsTest, JoinDefaults) {
  CliOptions options = parse_ok(join_args({}));
  EXPECT_EQ(options.command, Command::join);
  EXPECT_EQ(options.config.seeds, std::vector<std::string>{"node0:29400"});
  EXPECT_EQ(options.config.min_nodes, 4u);
  EXPECT_EQ(options.config.max_nodes, 4u);
  EXPECT_EQ(options.config.listen_host, "0.0.0.0");
  EXPECT_EQ(options.config.listen_port, 29400);
  EXPECT_EQ(options.config.nproc_per_node, 1u);
  EXPECT_EQ(options.config.run_id, "default");
  EXPECT_EQ(options.config.node_rank, -1);
  EXPECT_EQ(options.config.master_port, 0);
  EXPECT_EQ(options.config.join_timeout, std::chrono::seconds(600));
  EXPECT_EQ(options.config.last_call, std::chrono::seconds(30));
  EXPECT_EQ(options.format, OutputFormat::env);
  EXPECT_EQ(options.profile, "lan");
  EXPECT_EQ(options.config.timing.probe_interval, Timing::lan().probe_interval);
  EXPECT_FALSE(options.config.dedicated_seed);
  EXPECT_TRUE(options.worker_command.empty());
  EXPECT_TRUE(options.warnings.empty());
  EXPECT_FALSE(options.verbosity.quiet);
}

TEST(CliOptionsTest, JoinEveryOption) {
  CliOptions options = parse_ok(join_args({"--listen",
                                           "10.0.0.5:29500",
                                           "--advertise",
                                           "10.0.0.5",
                                           "--nproc-per-node",
                                           "8",
                                           "--run-id",
                                           "job42",
                                           "--node-rank",
                                           "3",
                                           "--master-port",
                                           "29600",
                                           "--join-timeout",
                                           "2m",
                                           "--last-call",
                                           "500ms",
                                           "--env-file",
                                           "/run/rdzv/rank{local_rank}.env",
                                           "--membership-file",
                                           "/run/rdzv/members.json",
                                           "--format",
                                           "export",
                                           "--profile",
                                           "local",
                                           "-vv"}));
  EXPECT_EQ(options.config.listen_host, "10.0.0.5");
  EXPECT_EQ(options.config.listen_port, 29500);
  EXPECT_EQ(options.config.advertise_host, "10.0.0.5");
  EXPECT_EQ(options.config.nproc_per_node, 8u);
  EXPECT_EQ(options.config.run_id, "job42");
  EXPECT_EQ(options.config.node_rank, 3);
  EXPECT_EQ(options.config.master_port, 29600);
  EXPECT_EQ(options.config.join_timeout, std::chrono::minutes(2));
  EXPECT_EQ(options.config.last_call, std::chrono::milliseconds(500));
  EXPECT_EQ(options.env_file, "/run/rdzv/rank{local_rank}.env");
  EXPECT_EQ(options.membership_file, "/run/rdzv/members.json");
  EXPECT_EQ(options.format, OutputFormat::export_);
  EXPECT_EQ(options.config.timing.probe_interval, Timing::local().probe_interval);
  EXPECT_EQ(options.verbosity.verbose, 2);
}

TEST(CliOptionsTest, SeedsRepeatedAndCommaSeparated) {
  CliOptions options = parse_ok(
      {"join", "--seed", "a:1,b:2", "--seed", "[fd00::1]:3", "--seed", "c", "--nnodes", "2"});
  EXPECT_EQ(options.config.seeds,
            (std::vector<std::string>{"a:1", "b:2", "[fd00::1]:3", "c:29400"}));
}

TEST(CliOptionsTest, ListenWithoutHostMeansAllAddresses) {
  CliOptions options = parse_ok(join_args({"--listen", ":31000"}));
  EXPECT_EQ(options.config.listen_host, "0.0.0.0");
  EXPECT_EQ(options.config.listen_port, 31000);
}

TEST(CliOptionsTest, RangeOfNodes) {
  CliOptions options = parse_ok({"join", "--seed", "n:1", "--nnodes", "3:4", "--node-rank", "3"});
  EXPECT_EQ(options.config.min_nodes, 3u);
  EXPECT_EQ(options.config.max_nodes, 4u);
  EXPECT_TRUE(options.warnings.empty());
}

// One warning, said by the node (config_warnings), not a second one by the parser.
TEST(CliOptionsTest, WideRangeWarnsThatOnlyTheSeedsMajorityAgrees) {
  CliOptions options = parse_ok({"join", "--seed", "n:1", "--nnodes", "2:8"});
  EXPECT_TRUE(options.warnings.empty());
  const auto warnings = config_warnings(options.config);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("--nnodes 2:8: MIN is at most half of MAX, so a partition can leave "
                             "two groups of MIN or more; only the one holding a majority "
                             "of the --seed list can agree"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(config_warnings(parse_ok({"join", "--seed", "n:1", "--nnodes", "2:4"}).config).size(),
            1u);
  EXPECT_TRUE(
      config_warnings(parse_ok({"join", "--seed", "n:1", "--nnodes", "3:5"}).config).empty());
}

TEST(CliOptionsTest, WorkerCommandAfterDoubleDash) {
  CliOptions options =
      parse_ok(join_args({"-q", "--", "python", "train.py", "--lr", "0.1", "--", "x"}));
  EXPECT_EQ(options.worker_command,
            (std::vector<std::string>{"python", "train.py", "--lr", "0.1", "--", "x"}));
  EXPECT_TRUE(options.verbosity.quiet);
}

TEST(CliOptionsTest, ServeStore) {
  EXPECT_FALSE(parse_ok(join_args({})).serve_store);
  CliOptions options = parse_ok(join_args({"--serve-store", "--env-file", "/tmp/x.env"}));
  EXPECT_TRUE(options.serve_store);
  EXPECT_TRUE(options.worker_command.empty());
  // With -- CMD the workers already get the store; the flag would be silently useless.
  EXPECT_NE(parse_error(join_args({"--serve-store", "--", "true"})).find("--serve-store"),
            std::string::npos);
  // Only join has it.
  EXPECT_NE(parse_error({"seed", "--listen", ":1", "--serve-store"}).find("--serve-store"),
            std::string::npos);
}

TEST(CliOptionsTest, WatchFollowsRoundsWithoutACommand) {
  CliOptions plain = parse_ok(join_args({}));
  EXPECT_FALSE(plain.watch);
  EXPECT_FALSE(plain.config.elastic);
  CliOptions options = parse_ok(
      join_args({"--watch", "--on-round", "systemctl restart trainer", "--env-file", "/tmp/x"}));
  EXPECT_TRUE(options.watch);
  EXPECT_TRUE(options.config.elastic);  // --watch implies elastic rounds
  EXPECT_EQ(options.on_round, "systemctl restart trainer");
  EXPECT_TRUE(options.worker_command.empty());
  // --serve-store fits: the agent stays up anyway.
  EXPECT_TRUE(parse_ok(join_args({"--watch", "--serve-store"})).serve_store);
}

TEST(CliOptionsTest, WatchRefusesWhatItDoesNotFit) {
  EXPECT_NE(parse_error(join_args({"--watch", "--", "true"}))
                .find("--watch is for running without '-- CMD'"),
            std::string::npos);
  EXPECT_NE(parse_error(join_args({"--on-round", "true"})).find("--on-round needs --watch"),
            std::string::npos);
  EXPECT_NE(
      parse_error(join_args({"--on-round", "true", "--", "true"})).find("--on-round needs --watch"),
      std::string::npos);
  EXPECT_NE(
      parse_error(join_args({"--watch", "--on-round", " "})).find("--on-round ' ': empty command"),
      std::string::npos);
  // Restarts count failures of workers that join starts; a watcher starts none.
  EXPECT_NE(parse_error(join_args({"--watch", "--max-restarts", "2"}))
                .find("--max-restarts needs '-- CMD'"),
            std::string::npos);
  EXPECT_NE(parse_error({"seed", "--listen", ":1", "--watch"}).find("--watch"), std::string::npos);
}

TEST(CliOptionsTest, StayAfterJobIsForElasticJobs) {
  EXPECT_EQ(parse_ok(join_args({"--max-restarts", "1", "--", "true"})).stay_after_job,
            std::chrono::seconds(60));
  EXPECT_EQ(parse_ok(join_args({"--max-restarts", "1", "--stay-after-job", "2m", "--", "true"}))
                .stay_after_job,
            std::chrono::minutes(2));
  EXPECT_EQ(parse_ok(join_args({"--max-restarts", "1", "--stay-after-job", "0", "--", "true"}))
                .stay_after_job.count(),
            0);
  // Only an elastic job's end can be told; a static job or an outcome-only join has none.
  for (const auto& args : {join_args({"--stay-after-job", "10s", "--", "true"}),
                           join_args({"--stay-after-job", "10s"}),
                           join_args({"--watch", "--stay-after-job", "10s"})}) {
    EXPECT_NE(parse_error(args).find("--stay-after-job needs an elastic job"), std::string::npos)
        << parse_error(args);
  }
  EXPECT_NE(
      parse_error(join_args({"--max-restarts", "1", "--stay-after-job", "soon", "--", "true"}))
          .find("--stay-after-job"),
      std::string::npos);
}

TEST(CliOptionsTest, SeedCommand) {
  CliOptions options =
      parse_ok({"seed", "--listen", ":29400", "--run-id", "j", "--profile", "wan"});
  EXPECT_EQ(options.command, Command::seed);
  EXPECT_TRUE(options.config.dedicated_seed);
  EXPECT_EQ(options.config.listen_port, 29400);
  EXPECT_EQ(options.config.run_id, "j");
  EXPECT_EQ(options.config.timing.probe_interval, Timing::wan().probe_interval);
}

TEST(CliOptionsTest, MembersCommand) {
  CliOptions options = parse_ok({"members", "--seed", "node0:29400", "--format", "json",
                                 "--timeout", "2s", "--run-id", "job"});
  EXPECT_EQ(options.command, Command::members);
  EXPECT_EQ(options.query_endpoint, "node0:29400");
  EXPECT_EQ(options.format, OutputFormat::json);
  EXPECT_EQ(options.query_timeout, std::chrono::seconds(2));
  EXPECT_EQ(options.config.run_id, "job");
  EXPECT_EQ(parse_ok({"members", "--seed", "n:1"}).format, OutputFormat::table);
}

TEST(CliOptionsTest, HelpExitsZero) {
  for (const Args& args :
       {Args{"--help"}, Args{"join", "--help"}, Args{"seed", "-h"}, Args{"members", "--help"}}) {
    ParseResult result = parse_command_line(args);
    EXPECT_FALSE(result.options.has_value());
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_NE(result.text.find("Usage: gossip-rdzv"), std::string::npos) << result.text;
  }
  EXPECT_NE(parse_command_line({"join", "--help"}).text.find("--nproc-per-node"),
            std::string::npos);
  EXPECT_EQ(parse_command_line({"join", "--help"}).text, help_text("join"));
}

// docs/cli.md quotes every --help verbatim; this keeps the two from drifting apart.
TEST(CliOptionsTest, DocsQuoteEveryHelpText) {
  std::ifstream file(GOSSIP_RDZV_DOCS_DIR "/cli.md");
  ASSERT_TRUE(file) << "cannot read docs/cli.md";
  std::stringstream doc;
  doc << file.rdbuf();
  for (const std::string command : {"", "join", "seed", "members", "doctor", "keygen", "keys",
                                    "keys install", "keys use", "keys remove", "keys list"}) {
    std::string help = help_text(command);
    help.erase(help.find_last_not_of('\n') + 1);
    EXPECT_NE(doc.str().find("```\n" + help + "\n```"), std::string::npos)
        << "docs/cli.md does not quote 'gossip-rdzv " << command << " --help'";
  }
}

// GOSSIP_RDZV_KEY_FILE set for one test, restored (or unset) afterwards.
class KeyFileVariable {
 public:
  explicit KeyFileVariable(const char* value) {
    if (const char* saved = std::getenv(kName)) saved_ = saved;
    if (value == nullptr) {
      ::unsetenv(kName);
    } else {
      ::setenv(kName, value, 1);
    }
  }
  ~KeyFileVariable() {
    if (saved_) {
      ::setenv(kName, saved_->c_str(), 1);
    } else {
      ::unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "GOSSIP_RDZV_KEY_FILE";
  std::optional<std::string> saved_;
};

const char* const kKey = "VwfrNqigtiiKGL6/Qs5kH1Ycd8J5jrMzZu8DJnJbZks=";  // 32 bytes

TEST(CliOptionsTest, KeyFileOnEveryCommandThatTalksToNodes) {
  KeyFileVariable unset(nullptr);
  EXPECT_EQ(parse_ok(join_args({})).config.key_file, "");
  EXPECT_EQ(parse_ok(join_args({"--key-file", "/etc/job.key"})).config.key_file, "/etc/job.key");
  EXPECT_EQ(parse_ok({"seed", "--listen", ":1", "--key-file", "k"}).config.key_file, "k");
  EXPECT_EQ(parse_ok({"members", "--seed", "n:1", "--key-file", "k"}).config.key_file, "k");
  EXPECT_EQ(parse_ok({"doctor", "--seed", "n:1", "--key-file", "k"}).config.key_file, "k");
}

TEST(CliOptionsTest, KeyFileFromTheEnvironmentUnlessGiven) {
  KeyFileVariable variable("/run/secrets/job.key");
  EXPECT_EQ(parse_ok(join_args({})).config.key_file, "/run/secrets/job.key");
  EXPECT_EQ(parse_ok({"seed", "--listen", ":1"}).config.key_file, "/run/secrets/job.key");
  EXPECT_EQ(parse_ok({"keys", "list"}).config.key_file, "/run/secrets/job.key");
  // The flag wins, on the command it is given to, whatever the other commands' options got.
  EXPECT_EQ(parse_ok(join_args({"--key-file", "mine.key"})).config.key_file, "mine.key");
  EXPECT_EQ(parse_ok({"doctor", "--seed", "n:1", "--key-file", "mine.key"}).config.key_file,
            "mine.key");
  // keygen writes where it is told, never to the variable's file.
  EXPECT_EQ(parse_ok({"keygen"}).keygen_path, "");
}

TEST(CliOptionsTest, EmptyKeyFileVariableMeansNone) {
  KeyFileVariable empty("");
  EXPECT_EQ(parse_ok(join_args({})).config.key_file, "");
}

TEST(CliOptionsTest, KeygenCommand) {
  CliOptions printed = parse_ok({"keygen"});
  EXPECT_EQ(printed.command, Command::keygen);
  EXPECT_EQ(printed.keygen_path, "");
  EXPECT_FALSE(printed.force);
  CliOptions written = parse_ok({"keygen", "/etc/job.key", "--force"});
  EXPECT_EQ(written.keygen_path, "/etc/job.key");
  EXPECT_TRUE(written.force);
}

TEST(CliOptionsTest, KeysActions) {
  KeyFileVariable unset(nullptr);
  CliOptions list = parse_ok({"keys", "list", "--key-file", "f"});
  EXPECT_EQ(list.command, Command::keys);
  EXPECT_EQ(list.keys_action, KeysAction::list);
  EXPECT_EQ(list.config.key_file, "f");
  CliOptions install = parse_ok({"keys", "install", "--key-file", "f", kKey});
  EXPECT_EQ(install.keys_action, KeysAction::install);
  EXPECT_EQ(install.key_argument, kKey);
  EXPECT_EQ(parse_ok({"keys", "use", "--key-file", "f", kKey}).keys_action, KeysAction::use);
  CliOptions remove = parse_ok({"keys", "remove", "--key-file", "f", "0123456789ABCDEF"});
  EXPECT_EQ(remove.keys_action, KeysAction::remove);
  EXPECT_EQ(remove.key_argument, "0123456789ABCDEF");
}

TEST(CliOptionsTest, KeysHelpIsTheActionsHelp) {
  const ParseResult result = parse_command_line({"keys", "install", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.text, help_text("keys install"));
  EXPECT_NE(result.text.find("Usage: gossip-rdzv keys install --key-file PATH KEY"),
            std::string::npos)
      << result.text;
}

// A KEY on the command line is a secret: a usage error describes it, never repeats it.
TEST(CliOptionsTest, BadKeyIsNotRepeated) {
  KeyFileVariable unset(nullptr);
  const std::string nearly(kKey, 40);
  const std::string text = parse_error({"keys", "install", "--key-file", "f", nearly});
  EXPECT_NE(text.find("KEY (40 characters) is not a key"), std::string::npos) << text;
  EXPECT_EQ(text.find(nearly), std::string::npos) << text;
}

struct BadInput {
  Args args;
  std::vector<std::string> expected_fragments;
};

void PrintTo(const BadInput& input, std::ostream* out) {
  for (const auto& arg : input.args) *out << "'" << arg << "' ";
}

class CliOptionsBadInputTest : public testing::TestWithParam<BadInput> {};

TEST_P(CliOptionsBadInputTest, IsAUsageErrorNamingOptionAndValue) {
  std::string text = parse_error(GetParam().args);
  for (const auto& fragment : GetParam().expected_fragments) {
    EXPECT_NE(text.find(fragment), std::string::npos) << "missing '" << fragment << "' in\n"
                                                      << text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, CliOptionsBadInputTest,
    testing::Values(
        BadInput{{}, {"a command is required", "Run 'gossip-rdzv --help'"}},
        BadInput{{"frobnicate"}, {"unknown command 'frobnicate'"}},
        BadInput{join_args({"--bogus"}), {"unknown option '--bogus'", "gossip-rdzv join --help"}},
        BadInput{join_args({"stray"}), {"unexpected argument 'stray'"}},
        BadInput{{"join", "--nnodes", "4"}, {"--seed is required", "HOST:PORT"}},
        BadInput{{"join", "--seed", "n:1"}, {"--nnodes is required", "MIN:MAX"}},
        BadInput{join_args({"--join-timeout", "5x"}), {"--join-timeout '5x'", "30s"}},
        BadInput{join_args({"--last-call", ""}), {"--last-call ''"}},
        BadInput{{"join", "--seed", "node0:99999", "--nnodes", "2"}, {"--seed 'node0:99999'"}},
        BadInput{{"join", "--seed", "a:1,", "--nnodes", "2"}, {"--seed ''", "empty"}},
        BadInput{join_args({"--listen", "host:port"}), {"--listen 'host:port'", "[HOST]:PORT"}},
        BadInput{{"join", "--seed", "n:1", "--nnodes", "0"}, {"--nnodes '0'", "N or MIN:MAX"}},
        BadInput{{"join", "--seed", "n:1", "--nnodes", "5:3"}, {"--nnodes '5:3'", "MIN must not"}},
        BadInput{{"join", "--seed", "n:1", "--nnodes", "0:3"}, {"--nnodes '0:3'"}},
        BadInput{{"join", "--seed", "n:1", "--nnodes", "x"}, {"--nnodes 'x'"}},
        BadInput{join_args({"--nproc-per-node", "0"}), {"--nproc-per-node '0'", "at least 1"}},
        BadInput{join_args({"--nproc-per-node", "two"}), {"--nproc-per-node 'two'"}},
        BadInput{join_args({"--node-rank", "4"}), {"--node-rank '4'", "0 to 3"}},
        BadInput{join_args({"--node-rank", "-1"}), {"--node-rank '-1'"}},
        BadInput{join_args({"--master-port", "70000"}), {"--master-port '70000'", "1-65535"}},
        BadInput{join_args({"--format", "yaml"}), {"--format 'yaml'", "env, export or json"}},
        BadInput{join_args({"--profile", "fast"}), {"--profile 'fast'", "lan, local or wan"}},
        BadInput{join_args({"--run-id", "my job"}), {"--run-id 'my job'"}},
        // The rules Node applies (gossip_rdzv::validate), worded with the flag and its text.
        BadInput{join_args({"--run-id", "job#1"}), {"--run-id 'job#1'", "1 to 64 letters"}},
        BadInput{join_args({"--join-timeout", "0"}), {"--join-timeout '0'", "must be positive"}},
        BadInput{{"join", "--seed", "n:1", "--nnodes", "70000"}, {"--nnodes '70000'", "65536"}},
        BadInput{{"seed", "--listen", ":1", "--run-id", "a/b"}, {"--run-id 'a/b'"}},
        BadInput{{"members", "--seed", "n:1", "--run-id", ""}, {"--run-id ''", "is empty"}},
        BadInput{join_args({"--advertise", "10.0.0.5:29400"}), {"--advertise '10.0.0.5:29400'"}},
        BadInput{join_args({"--nnodes"}), {"--nnodes needs a value"}},
        BadInput{join_args({"--env-file", "a", "--env-file", "b"}),
                 {"--env-file was given more than once"}},
        BadInput{{"join", "--seed", "n:1", "--nnodes", "2", "--nnodes", "3"},
                 {"--nnodes was given more than once"}},
        BadInput{join_args({"-q", "-v"}), {"--quiet and --verbose"}},
        BadInput{join_args({"--"}), {"'--' must be followed by a command"}},
        BadInput{{"seed"}, {"--listen is required", "gossip-rdzv seed --help"}},
        BadInput{{"seed", "--listen", ":1", "--", "x"}, {"only accepted by join"}},
        BadInput{{"members"}, {"--seed must be given exactly once"}},
        BadInput{{"members", "--seed", "n:1", "--format", "env"}, {"--format 'env'", "table"}},
        BadInput{{"members", "--seed", "n:1", "--timeout", "0s"}, {"--timeout '0s'"}},
        BadInput{join_args({"--key-file", ""}), {"--key-file ''", "empty path"}},
        BadInput{join_args({"--key-file", "a", "--key-file", "b"}),
                 {"--key-file was given more than once"}},
        BadInput{{"members", "--seed", "n:1", "--key-file"}, {"--key-file needs a value"}},
        BadInput{{"keygen", "--force"}, {"--force needs PATH", "gossip-rdzv keygen --help"}},
        BadInput{{"keygen", "a", "b"}, {"unexpected argument 'b'"}},
        BadInput{{"keys"}, {"an action is required", "gossip-rdzv keys --help"}},
        BadInput{{"keys", "rotate"}, {"unknown action 'rotate'"}},
        BadInput{{"keys", "list", "--key-file", "f", "extra"},
                 {"unexpected argument 'extra'", "gossip-rdzv keys list --help"}},
        BadInput{{"keys", "install", "--key-file", "f"}, {"KEY is required", "base64 of 32"}},
        BadInput{{"keys", "install", "--key-file", "f", "0123456789abcdef"},
                 {"KEY (16 characters) is not a key"}},
        BadInput{{"keys", "use", "--key-file", "f", "xyz"}, {"neither a key nor a key id"}},
        BadInput{{"keys", "remove", "--key-file", "f", "0123456789abcdeg"},
                 {"neither a key nor a key id"}},
        BadInput{{"keys", "use", "--key-file", "f", "--", "x"}, {"only accepted by join"}}));

// Each bad number says what is wrong with it: too large, negative, or no number at all.
TEST(CliOptionsTest, BadNumbersSayWhyTheyAreBad) {
  const auto error_for = [](const Args& args) { return parse_error(args); };
  EXPECT_NE(error_for({"join", "--seed", "n:1", "--nnodes", "99999999999999999999"})
                .find("'99999999999999999999': is too large"),
            std::string::npos);
  EXPECT_NE(error_for({"join", "--seed", "n:1", "--nnodes", "2:99999999999999999999"})
                .find("'99999999999999999999' is too large"),
            std::string::npos);
  EXPECT_NE(error_for({"join", "--seed", "n:1", "--nnodes", "-3"}).find("must not be negative"),
            std::string::npos);
  EXPECT_NE(error_for(join_args({"--node-rank", "-1"})).find("'-1': must not be negative"),
            std::string::npos);
  EXPECT_NE(error_for(join_args({"--join-timeout", "-5"})).find("'-5' is negative"),
            std::string::npos);
  EXPECT_NE(error_for({"join", "--seed", "n:1", "--nnodes", "2x"}).find("not a node count"),
            std::string::npos);
}

TEST(CliOptionsTest, VersionNamesTheProtocolVersion) {
  const ParseResult result = parse_command_line({"--version"});
  EXPECT_FALSE(result.options.has_value());
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.text, version_text());
  EXPECT_EQ(result.text.rfind("gossip-rdzv ", 0), 0u) << result.text;
  EXPECT_NE(
      result.text.find("(protocol version " + std::to_string(protocol::kProtocolVersion) + ")\n"),
      std::string::npos)
      << result.text;
  EXPECT_NE(help_text("").find("--version"), std::string::npos);
}

}  // namespace
}  // namespace gossip_rdzv::cli
