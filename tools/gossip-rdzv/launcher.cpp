#include "launcher.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>

extern char** environ;

namespace gossip_rdzv::cli {
namespace {

// How often wait() looks at the clock while nothing happens: it bounds how late the
// SIGKILL after the grace can come, and covers a SIGCHLD that was merged or missed.
constexpr auto kPollInterval = std::chrono::milliseconds(100);

std::vector<std::string> worker_environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::set<std::string> overridden;
  for (const auto& [name, value] : extra) overridden.insert(name);
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    if (overridden.count(text.substr(0, text.find('='))) == 0) env.push_back(std::move(text));
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

sigset_t supervised_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

// Workers start with no blocked signals and default handlers, whatever main.cpp did to
// supervise them, and in a process group of their own.
struct SpawnAttributes {
  posix_spawnattr_t attr;
  SpawnAttributes() {
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults = supervised_signals();
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr); }
};

}  // namespace

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

Launcher::Launcher(std::chrono::milliseconds kill_grace) : kill_grace_(kill_grace) {}

Launcher::~Launcher() {
  for (auto& worker : workers_) {
    if (worker.status) continue;
    ::kill(-worker.pid, SIGKILL);
    int status = 0;
    ::waitpid(worker.pid, &status, 0);
  }
}

int Launcher::launch(const std::vector<WorkerSpec>& workers) {
  SpawnAttributes attributes;
  for (const auto& spec : workers) {
    std::vector<std::string> argv = spec.argv;
    std::vector<std::string> env = worker_environment(spec.env);
    auto argv_pointers = pointers(argv);
    auto env_pointers = pointers(env);
    pid_t pid = -1;
    // glibc's posix_spawnp reports an exec failure as its result, so "command not found"
    // is known here rather than as a mysterious exit status later.
    int error = argv.empty() ? ENOENT
                             : posix_spawnp(&pid, argv_pointers[0], nullptr, &attributes.attr,
                                            argv_pointers.data(), env_pointers.data());
    if (error != 0) {
      exec_error_ = "cannot run '" + (argv.empty() ? std::string() : argv[0]) +
                    "': " + std::strerror(error) +
                    (error == ENOENT ? " (is it installed and on PATH?)" : "");
      terminate_running(SIGKILL);
      wait();
      return error == ENOENT ? 127 : 126;
    }
    workers_.push_back(Worker{pid, std::nullopt});
  }
  return 0;
}

std::size_t Launcher::running() const {
  std::size_t count = 0;
  for (const auto& worker : workers_) count += worker.status ? 0 : 1;
  return count;
}

bool Launcher::reap() {
  bool any = false;
  for (auto& worker : workers_) {
    if (worker.status) continue;
    int status = 0;
    pid_t done = ::waitpid(worker.pid, &status, WNOHANG);
    if (done != worker.pid) continue;
    worker.status = shell_status(status);
    any = true;
    if (*worker.status != 0 && !first_failure_) first_failure_ = *worker.status;
  }
  return any;
}

void Launcher::terminate_running(int signal) {
  for (const auto& worker : workers_) {
    // The worker's process group carries its id (POSIX_SPAWN_SETPGROUP with 0).
    if (!worker.status) ::kill(-worker.pid, signal);
  }
}

void Launcher::forward_signal(int signal) {
  terminate_running(signal);
  if (!kill_deadline_) kill_deadline_ = Clock::now() + kill_grace_;
}

void Launcher::kill_after_grace() {
  if (killed_ || !kill_deadline_ || Clock::now() < *kill_deadline_) return;
  terminate_running(SIGKILL);
  killed_ = true;
}

int Launcher::wait() {
  sigset_t signals = supervised_signals();
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  while (true) {
    reap();
    if (running() == 0) break;
    if (first_failure_ && !kill_deadline_) forward_signal(SIGTERM);
    kill_after_grace();
    timespec timeout{0, std::chrono::nanoseconds(kPollInterval).count()};
    int received = sigtimedwait(&signals, nullptr, &timeout);
    if (received == SIGINT || received == SIGTERM) {
      received_signal_ = received;
      forward_signal(received);
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return first_failure_.value_or(0);
}

std::vector<std::optional<int>> Launcher::statuses() const {
  std::vector<std::optional<int>> result;
  for (const auto& worker : workers_) result.push_back(worker.status);
  return result;
}

std::vector<pid_t> Launcher::pids() const {
  std::vector<pid_t> result;
  for (const auto& worker : workers_) result.push_back(worker.pid);
  return result;
}

}  // namespace gossip_rdzv::cli
