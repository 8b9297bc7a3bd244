#include "gossip_rdzv/env.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gossip_rdzv/error.hpp"
#include "support/sample_assignment.hpp"
#include "support/temp_dir.hpp"

namespace gossip_rdzv {
namespace {

namespace fs = std::filesystem;

using testing_support::sample_assignment;
using testing_support::sample_node;

// Two nodes: rank 0 runs 4 processes, rank 1 runs 2; this node is rank 1.
Assignment two_nodes() {
  return sample_assignment(3, {sample_node(0, 0, 4, "10.0.0.1"), sample_node(1, 4, 2, "10.0.0.2")});
}

Assignment single_proc() {
  Assignment a = two_nodes();
  a.nodes[1].nproc = 1;
  a.world_size = 5;
  return a;
}

using testing_support::read_file;
using testing_support::TempDir;

TEST(Env, TorchEnvIsExactlyTheTorchrunSet) {
  const EnvVars expected{
      {"MASTER_ADDR", "10.0.0.1"},
      {"MASTER_PORT", "29500"},
      {"WORLD_SIZE", "6"},
      {"RANK", "5"},
      {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "2"},
      {"NODE_RANK", "1"},
      {"NNODES", "2"},
      {"ROLE_NAME", "default"},
      {"ROLE_RANK", "5"},
      {"ROLE_WORLD_SIZE", "6"},
      {"TORCHELASTIC_RUN_ID", "job42"},
      {"TORCHELASTIC_RESTART_COUNT", "3"},
  };
  EXPECT_EQ(torch_env(two_nodes(), 1), expected);
  EnvVars with_if = expected;
  with_if.emplace_back("GLOO_SOCKET_IFNAME", "eth0");
  with_if.emplace_back("NCCL_SOCKET_IFNAME", "=eth0");
  EXPECT_EQ(torch_env(two_nodes(), 1, "eth0"), with_if);
}

TEST(Env, RankIsOffsetPlusLocalRank) {
  Assignment a = two_nodes();
  a.my_node_rank = 0;
  for (std::uint32_t lr = 0; lr < 4; ++lr) {
    const EnvVars v = torch_env(a, lr);
    EXPECT_EQ(v[3], (std::pair<std::string, std::string>{"RANK", std::to_string(lr)}));
    EXPECT_EQ(v[5].second, "4");  // LOCAL_WORLD_SIZE
  }
}

TEST(Env, LocalRankOutOfRangeIsUsageError) {
  try {
    torch_env(two_nodes(), 2);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::usage);
    EXPECT_NE(std::string(e.what()).find("local rank 2"), std::string::npos) << e.what();
  }
}

TEST(Env, BadMyNodeRankIsAnErrorNotACrash) {
  Assignment a = two_nodes();
  a.my_node_rank = 9;
  EXPECT_THROW(torch_env(a, 0), Error);
  EXPECT_THROW(node_env(a), Error);
  EXPECT_THROW(node_env(Assignment{}), Error);
}

TEST(Env, NodeEnvLeavesOutPerProcessVariables) {
  const EnvVars v = node_env(two_nodes(), "ib0");
  for (const auto& [name, value] : v) {
    EXPECT_NE(name, "RANK");
    EXPECT_NE(name, "LOCAL_RANK");
    EXPECT_NE(name, "ROLE_RANK");
  }
  EXPECT_EQ(v.size(), 14u);
  EXPECT_EQ(v[v.size() - 2], (std::pair<std::string, std::string>{"GLOO_SOCKET_IFNAME", "ib0"}));
  EXPECT_EQ(v.back(), (std::pair<std::string, std::string>{"NCCL_SOCKET_IFNAME", "=ib0"}));
}

TEST(Env, NodeEnvWithOneProcessHasItsRanks) {
  const EnvVars v = node_env(single_proc());
  EXPECT_EQ(v, torch_env(single_proc(), 0));
  EXPECT_EQ(v[3], (std::pair<std::string, std::string>{"RANK", "4"}));
  EXPECT_EQ(v[4], (std::pair<std::string, std::string>{"LOCAL_RANK", "0"}));
}

TEST(Env, FormatEnvAndExport) {
  const EnvVars v{{"A", "1"}, {"B", "10.0.0.1:29400"}};
  EXPECT_EQ(format_env(v, EnvFormat::env), "A=1\nB=10.0.0.1:29400\n");
  EXPECT_EQ(format_env(v, EnvFormat::export_), "export A=1\nexport B=10.0.0.1:29400\n");
  EXPECT_EQ(format_env({}, EnvFormat::env), "");
}

TEST(Env, QuotesOnlyWhenNeeded) {
  const EnvVars v{{"SAFE", "a-Z_0.9/x:y@z%+,"}, {"SPACE", "my job"}, {"QUOTE", "it's"},
                  {"DOLLAR", "$HOME"},          {"EMPTY", ""},       {"NEWLINE", "a\nb"}};
  EXPECT_EQ(format_env(v, EnvFormat::env),
            "SAFE=a-Z_0.9/x:y@z%+,\n"
            "SPACE='my job'\n"
            "QUOTE='it'\\''s'\n"
            "DOLLAR='$HOME'\n"
            "EMPTY=\n"
            "NEWLINE='a\nb'\n");
}

TEST(Env, QuotedValuesReadBackThroughTheShell) {
  TempDir dir;
  const std::string tricky = "it's a \"job\" $HOME `x` \\ ;|&";
  const fs::path file = dir.path() / "q.env";
  std::ofstream(file) << format_env({{"TRICKY", tricky}}, EnvFormat::export_);
  const fs::path out = dir.path() / "out";
  const std::string cmd =
      "sh -c '. " + file.string() + " && printf %s \"$TRICKY\"' > " + out.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_file(out), tricky);
}

TEST(Env, BadNameIsRejected) {
  EXPECT_THROW(format_env({{"BAD NAME", "x"}}, EnvFormat::env), Error);
  EXPECT_THROW(format_env({{"1X", "x"}}, EnvFormat::env), Error);
}

TEST(Env, LocalRankTemplateWritesOneFilePerProcess) {
  TempDir dir;
  const std::string tmpl = (dir.path() / "sub" / "dir" / "rank{local_rank}.env").string();
  const auto paths = write_env_files(tmpl, two_nodes(), EnvFormat::env);
  ASSERT_EQ(paths.size(), 2u);
  for (std::uint32_t lr = 0; lr < 2; ++lr) {
    const fs::path expected = dir.path() / "sub" / "dir" / ("rank" + std::to_string(lr) + ".env");
    EXPECT_EQ(paths[lr], expected.string());
    EXPECT_EQ(read_file(expected), format_env(torch_env(two_nodes(), lr), EnvFormat::env));
    EXPECT_NE(read_file(expected).find("\nRANK=" + std::to_string(4 + lr) + "\n"),
              std::string::npos);
  }
  // Nothing but the two files: no temporary files left behind.
  EXPECT_EQ(
      std::distance(fs::directory_iterator(dir.path() / "sub" / "dir"), fs::directory_iterator{}),
      2);
}

TEST(Env, EveryPlaceholderIsReplaced) {
  TempDir dir;
  const std::string tmpl = (dir.path() / "r{local_rank}" / "w{local_rank}.env").string();
  const auto paths = write_env_files(tmpl, two_nodes(), EnvFormat::export_);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[1], (dir.path() / "r1" / "w1.env").string());
  EXPECT_EQ(read_file(paths[1]).rfind("export MASTER_ADDR=10.0.0.1\n", 0), 0u);
}

TEST(Env, NodeLevelFileWithOneProcessHasRankAndLocalRankZero) {
  TempDir dir;
  const std::string path = (dir.path() / "node.env").string();
  const auto paths = write_env_files(path, single_proc(), EnvFormat::env, "lo");
  ASSERT_EQ(paths, std::vector<std::string>{path});
  const std::string text = read_file(path);
  EXPECT_NE(text.find("\nRANK=4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nLOCAL_RANK=0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nGLOO_SOCKET_IFNAME=lo\n"), std::string::npos) << text;
  // Unquoted: a shell, systemd and docker --env-file all read the value "=lo" back.
  EXPECT_NE(text.find("\nNCCL_SOCKET_IFNAME==lo\n"), std::string::npos) << text;
}

TEST(Env, NodeLevelFileWithManyProcessesHasNoRank) {
  TempDir dir;
  const std::string path = (dir.path() / "node.env").string();
  write_env_files(path, two_nodes(), EnvFormat::env);
  const std::string text = read_file(path);
  EXPECT_EQ(text.find("\nRANK="), std::string::npos) << text;
  EXPECT_EQ(text.find("LOCAL_RANK="), std::string::npos) << text;
  EXPECT_NE(text.find("\nLOCAL_WORLD_SIZE=2\n"), std::string::npos) << text;
}

TEST(Env, RewritingReplacesTheFile) {
  TempDir dir;
  const std::string path = (dir.path() / "node.env").string();
  std::ofstream(path) << "OLD=1\nMUCH LONGER OLD CONTENT THAN THE NEW ONE\n";
  write_env_files(path, single_proc(), EnvFormat::env);
  EXPECT_EQ(read_file(path), format_env(node_env(single_proc()), EnvFormat::env));
}

TEST(Env, UnwritablePathIsIoErrorNamingThePath) {
  TempDir dir;
  // A regular file where a directory should be: fails even for root.
  std::ofstream(dir.path() / "blocker") << "x";
  const std::string path = (dir.path() / "blocker" / "rank{local_rank}.env").string();
  try {
    write_env_files(path, two_nodes(), EnvFormat::env);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    const std::string msg = e.what();
    EXPECT_NE(msg.find((dir.path() / "blocker" / "rank0.env").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--env-file"), std::string::npos) << msg;
  }
}

TEST(Env, DirectoryAsTargetIsIoError) {
  TempDir dir;
  fs::create_directories(dir.path() / "taken.env");
  try {
    write_env_files((dir.path() / "taken.env").string(), two_nodes(), EnvFormat::env);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    EXPECT_NE(std::string(e.what()).find("taken.env"), std::string::npos) << e.what();
  }
  // The failed rename must not leave its temporary file.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(Env, EmptyTemplateIsUsageError) {
  try {
    write_env_files("", two_nodes(), EnvFormat::env);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::usage);
  }
}

}  // namespace
}  // namespace gossip_rdzv
