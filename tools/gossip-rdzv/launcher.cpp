#include "launcher.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// The files execvp would try for `command`, in order: itself when it names a path, else
// each directory of our PATH (glibc's default when unset; an empty entry is the current
// directory). Computed before fork, since the child may not allocate.
std::vector<std::string> exec_candidates(const std::string& command) {
  if (command.find('/') != std::string::npos) return {command};
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  std::vector<std::string> candidates;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    candidates.push_back((dir.empty() ? "." : dir) + "/" + command);
    if (end == dirs.size()) return candidates;
    start = end + 1;
  }
}

// Tries each candidate as execvp does and returns the error to report when none ran: a
// file that exists but may not be run (EACCES) wins over "not found" further along PATH.
// Async-signal-safe: runs in a child forked from a multi-threaded process.
int exec_first(const std::vector<const char*>& candidates, char* const argv[], char* const envp[]) {
  bool denied = false;
  int error = ENOENT;
  for (const char* path : candidates) {
    ::execve(path, argv, envp);
    error = errno;
    switch (error) {
      case EACCES:
        denied = true;
        break;
      case ENOENT:
      case ENOTDIR:
      case ESTALE:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        return error;
    }
  }
  return denied ? EACCES : error;
}

// Exit status of a worker whose agent died before it could exec: nobody reads it.
constexpr int kOrphanedStatus = 128 + SIGKILL;
// The file descriptor the watchdog keeps its end of the socket on; it closes all others.
constexpr int kWatchdogFd = 3;

// How often, and how far apart (ns), the watchdog kills the groups of an agent that died.
constexpr int kKillRepeats = 100;
constexpr long kKillRepeatInterval = 10'000'000;

// Messages to the watchdog, one pid_t per SOCK_SEQPACKET message: a worker's pid (its
// process group) to kill if we die; its negation once the worker is reaped; 0: dismissed.
[[noreturn]] void run_watchdog(int fd, pid_t* groups, std::size_t capacity, int max_fd) {
  // A fork of a multi-threaded process: only async-signal-safe calls from here on, and no
  // allocation (`groups` was allocated before the fork).
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only SIGKILL ends it before its job is done
  ::setpgid(0, 0);  // so a signal to the agent's process group does not take it along
  ::prctl(PR_SET_NAME, "gossip-rdzv-wd");  // in ps: not a second agent
  // Nothing of the agent's stays open here: not the terminal or pipes our caller reads to
  // end-of-file, nor the gossip socket, which a restarted agent must be able to bind again.
  if (fd != kWatchdogFd) ::dup2(fd, kWatchdogFd);
  const int null = ::open("/dev/null", O_RDWR);
  for (int stdio = 0; stdio < 3 && null >= 0; ++stdio) ::dup2(null, stdio);
  if (::syscall(SYS_close_range, kWatchdogFd + 1, ~0U, 0) != 0) {
    for (int other = kWatchdogFd + 1; other <= max_fd; ++other) ::close(other);
  }
  std::size_t count = 0;
  while (true) {
    pid_t message = 0;
    const ssize_t got = ::recv(kWatchdogFd, &message, sizeof message, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end-of-file: the agent died without dismissing us
    if (got != sizeof message) continue;
    if (message == 0) ::_exit(0);
    if (message > 0 && count < capacity) groups[count++] = message;
    for (std::size_t i = 0; message < 0 && i < count; ++i) {
      if (groups[i] == -message) groups[i] = groups[--count];
    }
  }
  // A worker may be starting a process at the moment we see end-of-file: the kernel closes
  // a dying agent's files before it sends the parent death signal. So kill until every
  // group is empty, or for kKillRepeats rounds (a zombie nobody reaps keeps its group).
  for (int round = 0; round < kKillRepeats; ++round) {
    bool any = false;
    for (std::size_t i = 0; i < count; ++i) any |= ::kill(-groups[i], SIGKILL) == 0;
    if (!any) break;
    const timespec pause{0, kKillRepeatInterval};
    ::nanosleep(&pause, nullptr);
  }
  ::_exit(0);
}

int highest_fd() {
  rlimit limit{};
  constexpr rlim_t kCap = 1 << 16;  // only when close_range is missing (Linux < 5.9)
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kCap;
  return static_cast<int>(std::min(limit.rlim_cur, kCap));
}

// Workers start with no blocked signals and default handlers for the signals we supervise,
// whatever main.cpp did to supervise them.
void reset_signals_for_exec() {
  sigset_t defaults = supervised_signals();
  sigaddset(&defaults, SIGPIPE);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int signal = 1; signal < NSIG; ++signal) {
    if (sigismember(&defaults, signal) == 1) ::sigaction(signal, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Reads the child's report of a failed exec: its errno, or 0 when the close-on-exec pipe
// closed because the exec succeeded.
int read_exec_error(int fd) {
  int error = 0;
  ssize_t got = 0;
  do {
    got = ::read(fd, &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  return got == sizeof error ? error : 0;
}

}  // namespace

int launch_and_wait(Launcher& launcher, const std::vector<WorkerSpec>& workers,
                    const std::function<bool()>& stop_early) {
  int status = launcher.launch(workers);
  if (status != 0) {
    std::fprintf(stderr, "gossip-rdzv: error: %s\n", launcher.exec_error().c_str());
    return status;
  }
  status = launcher.wait(stop_early);
  if (auto signal = launcher.received_signal()) {
    std::fprintf(stderr, "gossip-rdzv: forwarded %s to the workers; exit status %d\n",
                 strsignal(*signal), status);
  }
  return status;
}

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

Launcher::Launcher(std::chrono::milliseconds kill_grace) : kill_grace_(kill_grace) {}

Launcher::~Launcher() {
  for (auto& worker : workers_) {
    if (worker.group_empty) continue;
    ::kill(-worker.pid, SIGKILL);
    int status = 0;
    if (!worker.status) ::waitpid(worker.pid, &status, 0);
    while (::waitpid(-worker.pid, &status, 0) > 0) {
    }
  }
  dismiss_watchdog();
}

void Launcher::start_watchdog(std::size_t capacity) {
  int fds[2];
  // Without a watchdog the workers still get the parent death signal; only what they
  // start themselves could outlive us.
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return;
  std::vector<pid_t> groups(capacity);
  const int max_fd = highest_fd();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);  // ours: the watchdog must see end-of-file when we are gone
    run_watchdog(fds[1], groups.data(), groups.size(), max_fd);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return;
  }
  watchdog_pid_ = pid;
  watchdog_fd_ = fds[0];
}

void Launcher::tell_watchdog(pid_t message) {
  if (watchdog_fd_ >= 0) ::send(watchdog_fd_, &message, sizeof message, MSG_NOSIGNAL);
}

void Launcher::dismiss_watchdog() {
  if (watchdog_fd_ < 0) return;
  tell_watchdog(0);
  ::close(watchdog_fd_);
  watchdog_fd_ = -1;
  int status = 0;
  ::waitpid(watchdog_pid_, &status, 0);
  watchdog_pid_ = -1;
}

int Launcher::spawn(const WorkerSpec& spec, pid_t* pid) {
  if (spec.argv.empty() || spec.argv[0].empty()) return ENOENT;
  std::vector<std::string> argv = spec.argv;
  std::vector<std::string> env = worker_environment(spec.env);
  auto argv_pointers = pointers(argv);
  auto env_pointers = pointers(env);
  const std::vector<std::string> candidates = exec_candidates(argv[0]);
  std::vector<const char*> candidate_pointers;
  for (const auto& path : candidates) candidate_pointers.push_back(path.c_str());
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;
  const pid_t agent = ::getpid();
  const pid_t child = ::fork();
  if (child == 0) {
    // Async-signal-safe calls only until exec (we are a fork of a multi-threaded process).
    ::close(report[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // We may have been orphaned before the line above: then no signal will ever come.
    if (::getppid() != agent) ::_exit(kOrphanedStatus);
    ::setpgid(0, 0);
    // Before exec, so the watchdog knows this group before the worker can start anything.
    const pid_t self = ::getpid();
    if (watchdog_fd_ >= 0) ::send(watchdog_fd_, &self, sizeof self, MSG_NOSIGNAL);
    reset_signals_for_exec();
    const int error = exec_first(candidate_pointers, argv_pointers.data(), env_pointers.data());
    [[maybe_unused]] const ssize_t written = ::write(report[1], &error, sizeof error);
    ::_exit(127);
  }
  const int fork_error = errno;
  ::close(report[1]);
  if (child < 0) {
    ::close(report[0]);
    return fork_error;
  }
  ::setpgid(child, child);  // as the child does, so kill(-pid) reaches it from now on
  // Waits for the exec, so "command not found" is known here rather than as a mysterious
  // exit status later.
  const int error = read_exec_error(report[0]);
  ::close(report[0]);
  if (error != 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
    tell_watchdog(-child);
    return error;
  }
  *pid = child;
  return 0;
}

int Launcher::launch(const std::vector<WorkerSpec>& workers) {
  // What a worker leaves behind when it exits (a data loader it started) becomes our child
  // rather than init's, so reap() sees it and its process group id stays reserved until
  // we have reaped it: signalling that group can then never reach an unrelated process.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (watchdog_fd_ < 0 && !workers.empty()) start_watchdog(workers.size());
  for (const auto& spec : workers) {
    pid_t pid = -1;
    const int error = spawn(spec, &pid);
    if (error != 0) {
      const auto& argv = spec.argv;
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
  for (const auto& worker : workers_) count += worker.group_empty ? 0 : 1;
  return count;
}

void Launcher::record_exit(Worker& worker, int wait_status) {
  worker.status = shell_status(wait_status);
  // Workers we stopped early (wait(stop_early)) did not fail: we ended them.
  if (*worker.status != 0 && !first_failure_ && !stopped_early_) {
    first_failure_ = *worker.status;
    first_failed_ = static_cast<std::size_t>(&worker - workers_.data());
  }
}

void Launcher::reap() {
  for (auto& worker : workers_) {
    if (worker.group_empty) continue;
    int status = 0;
    // The worker itself, even if it left its group (setsid).
    if (!worker.status && ::waitpid(worker.pid, &status, WNOHANG) == worker.pid) {
      record_exit(worker, status);
    }
    // Then what is left of its group: processes it started that outlived it are ours now
    // (PR_SET_CHILD_SUBREAPER in launch()).
    while (true) {
      const pid_t done = ::waitpid(-worker.pid, &status, WNOHANG);
      if (done == worker.pid) record_exit(worker, status);
      if (done > 0) continue;
      if (done < 0 && errno == EINTR) continue;
      // 0: some are still running. ECHILD: none of the group is our child any more.
      if (done < 0 && worker.status) {
        worker.group_empty = true;
        tell_watchdog(-worker.pid);  // its id may be given to another process from now on
      }
      break;
    }
  }
}

void Launcher::terminate_running(int signal) {
  for (const auto& worker : workers_) {
    // The worker's process group carries its id (setpgid(0, 0) in spawn()). Until reap()
    // finds the group empty, an unreaped child of ours keeps that id reserved.
    if (!worker.group_empty) ::kill(-worker.pid, signal);
  }
}

bool Launcher::only_leftovers() const {
  return std::all_of(workers_.begin(), workers_.end(),
                     [](const Worker& worker) { return worker.status.has_value(); });
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

bool Launcher::repeats_last_signal(int signal, pid_t sender) {
  constexpr auto kWindow = std::chrono::seconds(1);
  const pid_t parent = ::getppid();
  const auto now = Clock::now();
  const bool repeat = last_signal_ && last_signal_->signal == signal &&
                      now - last_signal_->at < kWindow &&
                      (sender == parent) != (last_signal_->sender == parent);
  if (repeat) {
    last_signal_.reset();  // a third one is a new signal
  } else {
    last_signal_ = TakenSignal{signal, sender, now};
  }
  return repeat;
}

int Launcher::wait() {
  return wait([] { return false; });
}

int Launcher::wait(const std::function<bool()>& stop_early) {
  sigset_t signals = supervised_signals();
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  while (true) {
    reap();
    if (running() == 0) break;
    // A failure stops the job; once every worker exited, what they left running is stopped
    // too, so the job leaves nothing behind.
    if (!first_failure_ && !kill_deadline_ && stop_early()) {
      stopped_early_ = true;
      forward_signal(SIGTERM);
    }
    if ((first_failure_ || only_leftovers()) && !kill_deadline_) forward_signal(SIGTERM);
    kill_after_grace();
    timespec timeout{0, std::chrono::nanoseconds(kPollInterval).count()};
    siginfo_t info{};
    const int received = sigtimedwait(&signals, &info, &timeout);
    if ((received == SIGINT || received == SIGTERM) &&
        !repeats_last_signal(received, info.si_pid)) {
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
