#include "progress.hpp"

#include <unistd.h>

namespace gossip_rdzv::cli {

ProgressDisplay::Mode ProgressDisplay::mode_for_stderr(bool quiet) {
  if (quiet) return Mode::silent;
  return isatty(STDERR_FILENO) ? Mode::live : Mode::log;
}

ProgressDisplay::ProgressDisplay(std::FILE* out, Mode mode, std::chrono::milliseconds log_interval)
    : out_(out), mode_(mode), log_interval_(log_interval) {}

std::optional<std::chrono::seconds> ProgressDisplay::note_members(std::uint32_t alive,
                                                                  Clock::time_point now) {
  // Only growth counts as news: a member lost and found again is not a new arrival.
  if (alive > last_alive_) {
    last_new_member_ = now;
  }
  last_alive_ = std::max(last_alive_, alive);
  if (!last_new_member_) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::seconds>(now - *last_new_member_);
}

void ProgressDisplay::update(const Progress& progress, Clock::time_point now) {
  auto since_last_new = note_members(progress.alive(), now);
  if (mode_ == Mode::silent) return;
  std::string line = describe(progress, since_last_new);
  if (mode_ == Mode::log) {
    if (last_log_ && now - *last_log_ < log_interval_) return;
    last_log_ = now;
    std::fprintf(out_, "gossip-rdzv: %s\n", line.c_str());
  } else {
    if (line == live_line_) return;
    live_line_ = line;
    // \r returns to the start of the line; spaces blank what a longer previous line left.
    std::size_t pad = live_width_ > line.size() ? live_width_ - line.size() : 0;
    std::fprintf(out_, "\r%s%*s", line.c_str(), static_cast<int>(pad), "");
    live_width_ = line.size();
  }
  std::fflush(out_);
}

void ProgressDisplay::finish() {
  if (mode_ == Mode::live && live_width_ > 0) {
    std::fputc('\n', out_);
    std::fflush(out_);
    live_width_ = 0;
  }
}

std::string ProgressDisplay::describe(const Progress& progress,
                                      std::optional<std::chrono::seconds> since_last_new) {
  if (!progress.joined) return "contacting seed(s)...";
  if (progress.committed) return "agreed on the membership";
  std::uint32_t alive = progress.alive();
  std::string line;
  if (progress.min_nodes == progress.max_nodes) {
    std::uint32_t missing = progress.min_nodes > alive ? progress.min_nodes - alive : 0;
    line = std::to_string(alive) + "/" + std::to_string(progress.min_nodes) + " joined";
    line += missing > 0 ? ", waiting " + std::to_string(missing) + " more" : ", agreeing";
  } else if (alive < progress.min_nodes) {
    line = std::to_string(alive) + " joined, waiting " +
           std::to_string(progress.min_nodes - alive) + " more (need " +
           std::to_string(progress.min_nodes) + ", up to " + std::to_string(progress.max_nodes) +
           ")";
  } else {
    line = std::to_string(alive) + " joined (need " + std::to_string(progress.min_nodes) +
           ", up to " + std::to_string(progress.max_nodes) + "), last call for more";
  }
  // Alone, the only "new member" is this node itself: nothing worth timing yet.
  if (since_last_new && alive > 1) {
    line += "; last new member " + std::to_string(since_last_new->count()) + " s ago";
  }
  return line;
}

}  // namespace gossip_rdzv::cli
