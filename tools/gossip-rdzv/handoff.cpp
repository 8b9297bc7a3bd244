#include "handoff.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv::cli {
namespace {

constexpr char kReady = 'R';

int status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return static_cast<int>(ErrorCode::internal);
}

/// The parent's whole life: pass interrupts on, and end with the child's word.
int wait_for_child(pid_t child, int ready_fd) {
  sigset_t passed_on;
  sigemptyset(&passed_on);
  for (int signal : {SIGINT, SIGTERM}) sigaddset(&passed_on, signal);
  const timespec no_wait{0, 0};
  while (true) {
    pollfd fd{ready_fd, POLLIN, 0};
    // Interrupt signals are blocked in every thread (main.cpp): poll them between waits.
    const int polled = poll(&fd, 1, 20);
    if (polled < 0 && errno != EINTR) break;
    if (polled > 0) {
      char word = 0;
      const ssize_t got = read(ready_fd, &word, 1);
      if (got == 1 && word == kReady) return 0;
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) break;  // it exited
    }
    for (int signal; (signal = sigtimedwait(&passed_on, nullptr, &no_wait)) > 0;)
      kill(child, signal);
  }
  int wait_status = 0;
  while (waitpid(child, &wait_status, 0) < 0) {
    if (errno != EINTR) return static_cast<int>(ErrorCode::internal);
  }
  return status_of(wait_status);
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
    return std::nullopt;
  }
  close(fds[1]);
  const int status = wait_for_child(child, fds[0]);
  close(fds[0]);
  return status;
}

void Handoff::ready() {
  if (ready_fd_ < 0) return;
  std::fflush(nullptr);
  prctl(PR_SET_PDEATHSIG, 0);  // from now on it outlives the parent, by design
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(null, fd);
    close(null);
  }
  const char word = kReady;
  while (write(ready_fd_, &word, 1) < 0 && errno == EINTR) {
  }
  close(ready_fd_);
  ready_fd_ = -1;
}

}  // namespace gossip_rdzv::cli
