// Real child processes (/bin/sh, sleep); each test finishes in well under a second unless
// the launcher fails to stop a sleeping worker.
#include "launcher.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

namespace gossip_rdzv::cli {
namespace {

WorkerSpec shell(const std::string& script,
                 std::vector<std::pair<std::string, std::string>> env = {}) {
  return WorkerSpec{{"/bin/sh", "-c", script}, std::move(env)};
}

using testing_support::read_file;
using testing_support::TempDir;

TEST(LauncherTest, AllSucceedGivesZero) {
  Launcher launcher;
  ASSERT_EQ(launcher.launch({shell("exit 0"), shell("true")}), 0);
  EXPECT_EQ(launcher.wait(), 0);
  EXPECT_EQ(launcher.statuses(), (std::vector<std::optional<int>>{0, 0}));
}

TEST(LauncherTest, FailingWorkersGiveTheirExitCode) {
  Launcher launcher;
  ASSERT_EQ(launcher.launch({shell("exit 3"), shell("exit 3")}), 0);
  EXPECT_EQ(launcher.wait(), 3);
}

TEST(LauncherTest, EnvironmentReachesTheChild) {
  TempDir dir;
  const std::string path = (dir.path() / "env").string();
  ::setenv("GOSSIP_RDZV_LAUNCHER_TEST_PARENT", "inherited", 1);
  Launcher launcher;
  ASSERT_EQ(launcher.launch({shell("env > '" + path + "'",
                                   {{"RANK", "5"},
                                    {"MASTER_ADDR", "10.0.0.1"},
                                    {"GOSSIP_RDZV_LAUNCHER_TEST_PARENT", "overridden"}})}),
            0);
  ASSERT_EQ(launcher.wait(), 0);
  std::string env = read_file(path);
  EXPECT_NE(env.find("\nRANK=5\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nMASTER_ADDR=10.0.0.1\n"), std::string::npos);
  EXPECT_NE(env.find("GOSSIP_RDZV_LAUNCHER_TEST_PARENT=overridden"), std::string::npos);
  EXPECT_EQ(env.find("GOSSIP_RDZV_LAUNCHER_TEST_PARENT=inherited"), std::string::npos);
  EXPECT_NE(env.find("PATH="), std::string::npos);  // the rest of our environment
}

TEST(LauncherTest, OneFailureTerminatesASleepingSibling) {
  Launcher launcher(std::chrono::seconds(30));
  // The failure comes after the sibling surely started, so it really has to be stopped.
  ASSERT_EQ(launcher.launch({shell("sleep 0.2; exit 4"), shell("sleep 60")}), 0);
  EXPECT_EQ(launcher.wait(), 4);
  auto statuses = launcher.statuses();
  EXPECT_EQ(statuses[0], 4);
  EXPECT_EQ(statuses[1], 128 + SIGTERM);  // killed by our SIGTERM, not a finished sleep
}

TEST(LauncherTest, SiblingIgnoringSigtermGetsSigkillAfterGrace) {
  Launcher launcher(std::chrono::milliseconds(200));
  ASSERT_EQ(launcher.launch({shell("sleep 0.2; exit 1"),
                             WorkerSpec{{"/bin/sh", "-c", "trap '' TERM; sleep 60 & wait"}, {}}}),
            0);
  EXPECT_EQ(launcher.wait(), 1);
  EXPECT_EQ(launcher.statuses()[1], 128 + SIGKILL);
}

TEST(LauncherTest, ForwardedSignalReachesEveryWorker) {
  Launcher launcher;
  ASSERT_EQ(launcher.launch({shell("sleep 60"), shell("sleep 60")}), 0);
  launcher.forward_signal(SIGTERM);
  EXPECT_EQ(launcher.wait(), 128 + SIGTERM);
  EXPECT_EQ(launcher.statuses(), (std::vector<std::optional<int>>{128 + SIGTERM, 128 + SIGTERM}));
}

TEST(LauncherTest, SignalToLauncherIsForwarded) {
  Launcher launcher;
  // `sleep` itself, not `sh -c 'sleep 60'`: dash started with -c catches SIGINT until it
  // execs the command, so a SIGINT forwarded within its first milliseconds was swallowed and
  // the worker lived until the kill grace (exit 137, seen under load in CI).
  ASSERT_EQ(launcher.launch({WorkerSpec{{"sleep", "60"}, {}}}), 0);
  // wait() blocks SIGINT, so raising it first leaves it pending for wait() to forward.
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &interrupt, &previous);
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(launcher.wait(), 128 + SIGINT);
  EXPECT_EQ(launcher.received_signal(), SIGINT);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

TEST(LauncherTest, MissingCommandGives127) {
  Launcher launcher;
  EXPECT_EQ(launcher.launch({WorkerSpec{{"gossip-rdzv-no-such-command"}, {}}}), 127);
  EXPECT_NE(launcher.exec_error().find("gossip-rdzv-no-such-command"), std::string::npos);
  EXPECT_NE(launcher.exec_error().find("No such file"), std::string::npos);
}

TEST(LauncherTest, NotExecutableGives126) {
  TempDir dir;
  const std::string path = (dir.path() / "not-executable").string();
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";  // mode 0644: even root may not run it
  Launcher launcher;
  EXPECT_EQ(launcher.launch({WorkerSpec{{path}, {}}}), 126);
  EXPECT_NE(launcher.exec_error().find("Permission denied"), std::string::npos)
      << launcher.exec_error();
}

// Gone, or a zombie: a process whose parent died is reaped by whoever adopts it, if at all.
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto end_of_name = text.rfind(')');
  return end_of_name == std::string::npos || text.substr(end_of_name + 2, 1) == "Z";
}

bool await(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<pid_t> read_pids(const std::string& path) {
  std::ifstream in(path);
  std::vector<pid_t> pids;
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

// The agent (a child of this test, running a Launcher as gossip-rdzv does) is killed with
// SIGKILL, so it can neither forward a signal nor run a destructor. Its worker must die
// (parent death signal), and so must what the worker started in its process group (the
// watchdog), well within the bound.
TEST(LauncherTest, WorkerAndItsChildrenDieWhenTheAgentIsKilled) {
  TempDir dir;
  const std::string path = (dir.path() / "pids").string();
  const pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    Launcher launcher;
    launcher.launch({shell("sleep 600 & echo $! > '" + path + ".tmp'; echo $$ >> '" + path +
                           ".tmp'; mv '" + path + ".tmp' '" + path + "'; wait")});
    launcher.wait();
    ::_exit(0);
  }
  ASSERT_TRUE(await([&] { return read_pids(path).size() == 2; }, std::chrono::seconds(10)));
  const auto pids = read_pids(path);  // the worker's child, then the worker
  for (pid_t pid : pids) EXPECT_FALSE(process_gone(pid)) << pid;
  ::kill(agent, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(agent, &status, 0), agent);
  for (pid_t pid : pids) {
    EXPECT_TRUE(await([&] { return process_gone(pid); }, std::chrono::seconds(5)))
        << "process " << pid << " outlived its agent";
    ::kill(pid, SIGKILL);  // when it did, leave nothing behind
  }
  // An earlier launch() made this test process a subreaper: it adopted what the agent left
  // (the watchdog, the killed sleep) and must reap them as the agent would have. Both end
  // by themselves: the sleep was killed, the watchdog exits after its bounded kill loop.
  while (::waitpid(-1, &status, 0) > 0) {
  }
}

// What a worker starts in its process group (a data loader) does not outlive the job,
// whether the worker fails, crashes or succeeds; `pid_file` gets the child's pid.
pid_t leftover_child(const std::string& script_end, int expected_status,
                     std::chrono::milliseconds grace = std::chrono::seconds(30)) {
  TempDir dir;
  const std::string path = (dir.path() / "leftover").string();
  Launcher launcher(grace);
  EXPECT_EQ(launcher.launch({shell("sleep 60 & echo $! > '" + path + "'; " + script_end)}), 0);
  EXPECT_EQ(launcher.wait(), expected_status);
  const std::vector<pid_t> pids = read_pids(path);
  EXPECT_EQ(pids.size(), 1u);
  return pids.empty() ? -1 : pids[0];
}

// The launcher reaped it (it became our child when the worker exited), so it is gone for
// good, not a zombie: kill() finds no such process.
void expect_reaped(pid_t pid) {
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::kill(pid, 0), -1) << "process " << pid << " outlived its worker";
  EXPECT_EQ(errno, ESRCH);
}

TEST(LauncherTest, FailedWorkersOwnChildIsStopped) {
  expect_reaped(leftover_child("exit 3", 3));
}

TEST(LauncherTest, CrashedWorkersOwnChildIsStopped) {
  expect_reaped(leftover_child("kill -SEGV $$", 128 + SIGSEGV));
}

TEST(LauncherTest, SucceededWorkersLeftoverChildIsStopped) {
  expect_reaped(leftover_child("exit 0", 0));
}

TEST(LauncherTest, LeftoverChildIgnoringSigtermGetsSigkillAfterGrace) {
  TempDir dir;
  const std::string path = (dir.path() / "stubborn").string();
  Launcher launcher(std::chrono::milliseconds(200));
  ASSERT_EQ(
      // The worker exits only once its child ignores SIGTERM (it writes the file after its
      // trap), so the SIGTERM cannot win a race with the trap.
      launcher.launch({shell("sh -c 'trap \"\" TERM; echo $$ > " + path +
                             "; exec sleep 60' & for i in $(seq 500); do [ -s '" + path +
                             "' ] && exit 5; sleep 0.01; done; exit 6")}),
      0);
  EXPECT_EQ(launcher.wait(), 5);
  const std::vector<pid_t> pids = read_pids(path);
  ASSERT_EQ(pids.size(), 1u);
  expect_reaped(pids[0]);
}

// A normal end dismisses the watchdog and reaps it: no process of ours is left behind.
TEST(LauncherTest, LeavesNoChildBehind) {
  {
    Launcher launcher;
    ASSERT_EQ(launcher.launch({shell("exit 0")}), 0);
    ASSERT_EQ(launcher.wait(), 0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(LauncherTest, ShellStatus) {
  EXPECT_EQ(shell_status(0), 0);
  EXPECT_EQ(shell_status(3 << 8), 3);
  EXPECT_EQ(shell_status(SIGKILL), 128 + SIGKILL);
}

}  // namespace
}  // namespace gossip_rdzv::cli
