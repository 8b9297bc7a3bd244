// Starts the workers of `gossip-rdzv join -- CMD ARGS` and supervises them the way a job
// needs: the first failure decides the exit status and stops the others, so a job never
// hangs on a half-dead group; SIGINT/SIGTERM given to us reach every worker; and when we
// die, even by SIGKILL, our workers and their process groups die with us.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gossip_rdzv::cli {

struct WorkerSpec {
  std::vector<std::string> argv;                         ///< argv[0] is looked up on PATH
  std::vector<std::pair<std::string, std::string>> env;  ///< set on top of our environment
};

class Launcher {
 public:
  /// `kill_grace`: after SIGTERM, how long a worker may take before it gets SIGKILL.
  explicit Launcher(std::chrono::milliseconds kill_grace = std::chrono::seconds(10));
  /// Kills (SIGKILL) and reaps workers still running, e.g. when wait() was never called,
  /// then dismisses the watchdog (see launch()).
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  /// Starts one process per spec, each in its own process group (so a signal reaches the
  /// whole tree a worker starts), with stdin/stdout/stderr inherited. Returns 0, or when a
  /// worker cannot be started, kills those already started and returns 127 (not found) or
  /// 126 (not executable) with exec_error() telling why.
  ///
  /// Workers do not outlive this process, however it ends (docs/cli.md, `-- CMD`):
  /// - each worker gets SIGKILL from the kernel when its parent dies (PR_SET_PDEATHSIG).
  ///   The kernel sends it when the *thread* that forked the worker ends, so call launch()
  ///   from a thread that lives as long as the process (gossip-rdzv: the main thread);
  /// - a watchdog process, forked here before the first worker, holds one end of a socket
  ///   whose other end only this process holds. When it reads end-of-file (we died without
  ///   dismissing it) it sends SIGKILL to the process group of every worker not yet reaped,
  ///   which reaches what a worker started in its group (a data loader), where the parent
  ///   death signal does not. A process that leaves its group (setsid) escapes both.
  /// Call launch() once per Launcher: the watchdog knows at most the first batch's size.
  int launch(const std::vector<WorkerSpec>& workers);

  /// Waits for every worker and for what each started in its process group. Returns 0
  /// when all workers exit 0, else the status of the first to fail: its exit code, or
  /// 128+N when killed by signal N. When one fails, every worker's process group (the failed
  /// one's included: its data loaders) gets SIGTERM, then SIGKILL after the grace. Once
  /// every worker has exited, processes they left running in their groups get the same.
  /// Launching makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so orphans of
  /// the workers are reaped here. SIGINT and SIGTERM received meanwhile are
  /// forwarded (they are blocked in the calling thread while it waits; a multi-threaded
  /// program must block them in every thread, see main.cpp). A signal that our parent process
  /// sends within a second of the same signal from elsewhere (or the other way round) is
  /// taken as one: `join`'s waiting parent passes on what it gets (handoff.hpp), and a
  /// signal to the whole process group reaches both, so the workers would get it twice.
  int wait();
  /// The same, and once `stop_early()` returns true (asked every poll, 100 ms) every worker
  /// is stopped as after a failure: SIGTERM, then SIGKILL after the grace. Returns 0 when
  /// stopped that way with no worker failing first (stopped_early() tells).
  int wait(const std::function<bool()>& stop_early);
  bool stopped_early() const { return stopped_early_; }
  /// Launch index (local rank) of the first worker that failed, if one did.
  std::optional<std::size_t> first_failed() const { return first_failed_; }

  /// Sends `signal` to every running worker's process group; later ones get SIGKILL once
  /// the grace has passed (checked by wait()).
  void forward_signal(int signal);

  /// The SIGINT or SIGTERM wait() received and forwarded, if any.
  std::optional<int> received_signal() const { return received_signal_; }

  /// Why launch() failed; empty after a successful launch.
  const std::string& exec_error() const { return exec_error_; }

  /// Per worker, in launch order: its status as wait() reports it; nullopt while running.
  std::vector<std::optional<int>> statuses() const;

  /// Process ids, in launch order.
  std::vector<pid_t> pids() const;

 private:
  struct Worker {
    pid_t pid = -1;
    std::optional<int> status;
    bool group_empty = false;  ///< it exited and nothing of its process group is left
  };
  using Clock = std::chrono::steady_clock;

  int spawn(const WorkerSpec& spec, pid_t* pid);
  void start_watchdog(std::size_t capacity);
  void tell_watchdog(pid_t message);
  void dismiss_watchdog();
  void reap();
  void record_exit(Worker& worker, int wait_status);
  bool only_leftovers() const;
  void terminate_running(int signal);
  void kill_after_grace();
  std::size_t running() const;
  /// Whether `signal` from `sender` repeats the last one taken (see wait()); records it.
  bool repeats_last_signal(int signal, pid_t sender);

  std::chrono::milliseconds kill_grace_;
  std::vector<Worker> workers_;
  std::optional<int> first_failure_;
  std::optional<std::size_t> first_failed_;
  bool stopped_early_ = false;
  std::optional<Clock::time_point> kill_deadline_;
  bool killed_ = false;
  std::optional<int> received_signal_;
  struct TakenSignal {
    int signal = 0;
    pid_t sender = 0;
    Clock::time_point at;
  };
  std::optional<TakenSignal> last_signal_;
  std::string exec_error_;
  pid_t watchdog_pid_ = -1;
  int watchdog_fd_ = -1;  ///< our end of the watchdog's socket; close-on-exec
};

/// Launches `workers` with `launcher` (a fresh one) and waits for them with
/// Launcher::wait(stop_early), saying on stderr what no restart can help: a command that
/// cannot be started (its status 126/127 is returned) and a SIGINT/SIGTERM forwarded to the
/// workers (launcher.received_signal() is set). Returns the workers' status.
int launch_and_wait(Launcher& launcher, const std::vector<WorkerSpec>& workers,
                    const std::function<bool()>& stop_early);

/// The status a shell would report for a waitpid() status: exit code, or 128+signal.
int shell_status(int wait_status);

}  // namespace gossip_rdzv::cli
