#include "handoff.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gossip_rdzv/error.hpp"
#include "launcher.hpp"

namespace gossip_rdzv::cli {
namespace {

constexpr char kReady = 'R';

/// The abstract Unix socket address of the stay that holds `port` (no file: the name
/// lives in the network namespace and goes with the process).
sockaddr_un stay_address(std::uint16_t port, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = "gossip-rdzv-stay-" + std::to_string(port);
  std::memcpy(address.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

/// Ends this process when a new node asks for our port: it supersedes our stay.
void yield_port_on_request(std::uint16_t port) {
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return;
  socklen_t length = 0;
  const sockaddr_un address = stay_address(port, length);
  if (bind(listener, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      listen(listener, 4) != 0) {
    close(listener);  // without it a restart waits for our stay to end, as before
    return;
  }
  std::thread([listener] {
    while (accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) < 0 && errno == EINTR) {
    }
    _exit(0);  // the kernel closes our sockets: the port is free for the new node
  }).detach();
}

/// The child died of `signal` (a crash, the OOM killer, SIGKILL): the caller sees the parent
/// die of it too, as it would have seen the one process die before the split. No core file:
/// the parent's memory says nothing about the crash.
void die_as(int signal) {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  prctl(PR_SET_DUMPABLE, 0);  // nor a crash record from a core_pattern helper
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigaction(signal, &action, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  raise(signal);
}

/// Descriptors the caller left open for its children (no close-on-exec), beyond stdio and
/// `except`: the workers inherit them, the stay must not hold them (a pipe our caller reads
/// to its end, a jobserver).
std::vector<int> inherited_descriptors(int except) {
  std::vector<int> found;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd < 3 || fd == own || fd == except) continue;
    const int flags = fcntl(static_cast<int>(fd), F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) found.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return found;
}

/// The parent's whole life: pass interrupts on, and end with the child's word. It sleeps
/// until one of the two arrives (no periodic wake-up: a job starts one parent per node).
int wait_for_child(pid_t child, int ready_fd) {
  sigset_t passed_on;
  sigemptyset(&passed_on);
  for (int signal : {SIGINT, SIGTERM}) sigaddset(&passed_on, signal);
  // Interrupt signals are blocked in every thread (main.cpp), so they queue for signalfd.
  const int signals = signalfd(-1, &passed_on, SFD_CLOEXEC);
  // A sender that signals our pid and then our whole group (coreutils' `timeout`) reaches us
  // twice and the child once directly: the same signal again within a second is not passed
  // on, so the launcher, which takes our copy and the direct one as one, sees one signal.
  int last_signal = 0;
  auto last_passed = std::chrono::steady_clock::time_point{};
  const auto pass_on = [&](int signal) {
    const auto now = std::chrono::steady_clock::now();
    if (signal == last_signal && now - last_passed < std::chrono::seconds(1)) return;
    last_signal = signal;
    last_passed = now;
    kill(child, signal);
  };
  bool ready = false;
  int status = 0;
  while (true) {
    pollfd fds[2] = {{ready_fd, POLLIN, 0}, {signals, POLLIN, 0}};
    const int polled = poll(fds, signals >= 0 ? 2 : 1, signals >= 0 ? -1 : 20);
    if (polled < 0 && errno != EINTR) break;
    if (polled > 0 && fds[0].revents != 0) {
      unsigned char word[2] = {0, 0};
      const ssize_t got = read(ready_fd, word, sizeof word);
      ready = got == 2 && word[0] == kReady;
      if (ready) {
        status = word[1];
        break;
      }
      if (got >= 0 || (errno != EINTR && errno != EAGAIN)) break;  // it exited
    }
    if (signals >= 0 && polled > 0 && fds[1].revents != 0) {
      signalfd_siginfo info{};
      // Ctrl-C and the like go to the terminal's whole foreground process group, the child
      // included: passing them on would deliver them twice (and to its workers twice).
      if (read(signals, &info, sizeof info) == static_cast<ssize_t>(sizeof info) &&
          info.ssi_code != SI_KERNEL)
        pass_on(static_cast<int>(info.ssi_signo));
    } else if (signals < 0) {
      // Without signalfd: look for pending interrupts between short waits.
      const timespec no_wait{0, 0};
      siginfo_t info{};
      for (int signal; (signal = sigtimedwait(&passed_on, &info, &no_wait)) > 0;)
        if (info.si_code != SI_KERNEL) pass_on(signal);
    }
  }
  if (signals >= 0) close(signals);
  if (ready) return status;
  int wait_status = 0;
  while (waitpid(child, &wait_status, 0) < 0) {
    if (errno != EINTR) return static_cast<int>(ErrorCode::internal);
  }
  if (WIFSIGNALED(wait_status)) die_as(WTERMSIG(wait_status));
  return shell_status(wait_status);
}

}  // namespace

std::optional<int> Handoff::split() {
  std::fflush(nullptr);  // nothing buffered is written twice
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(ErrorCode::internal, std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    const int error = errno;
    close(fds[0]), close(fds[1]);
    throw Error(ErrorCode::internal, std::string("fork: ") + std::strerror(error));
  }
  if (child == 0) {
    close(fds[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(static_cast<int>(ErrorCode::internal));  // it died already
    ready_fd_ = fds[1];
    inherited_ = inherited_descriptors(ready_fd_);
    return std::nullopt;
  }
  close(fds[1]);
  const int status = wait_for_child(child, fds[0]);
  close(fds[0]);
  return status;
}

bool Handoff::ready(std::uint16_t port, int status) {
  if (ready_fd_ < 0) return false;
  std::fflush(nullptr);
  prctl(PR_SET_PDEATHSIG, 0);  // from now on it outlives the parent, by design
  // The parent may be a terminal's controlling process (`ssh -t host gossip-rdzv ...`): its
  // exit hangs the terminal up and sends SIGHUP to our process group. The stay ignores it;
  // SIGINT, SIGTERM and SIGKILL to the group still end it.
  signal(SIGHUP, SIG_IGN);
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(null, fd);
    close(null);
  }
  for (int fd : inherited_) close(fd);
  inherited_.clear();
  // One write of both bytes: the parent reads them together (a pipe write this small is
  // atomic).
  const unsigned char word[2] = {static_cast<unsigned char>(kReady),
                                 static_cast<unsigned char>(status & 0xff)};
  while (write(ready_fd_, word, sizeof word) < 0 && errno == EINTR) {
  }
  close(ready_fd_);
  ready_fd_ = -1;
  if (port != 0) yield_port_on_request(port);
  return true;
}

bool end_previous_stay(std::uint16_t port, std::chrono::milliseconds timeout) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  socklen_t length = 0;
  const sockaddr_un address = stay_address(port, length);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    close(fd);
    return false;  // no stay of ours holds it: the port is someone else's
  }
  // The stay exits on our connection; its end closes our socket.
  pollfd ended{fd, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() < deadline) {
    const int polled = poll(&ended, 1, 50);
    char byte = 0;
    closed = polled > 0 && read(fd, &byte, 1) <= 0;
  }
  close(fd);
  return closed;
}

}  // namespace gossip_rdzv::cli
