#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "members_format.hpp"
#include "terminal_line.hpp"

namespace gossip_rdzv::cli {

ProgressDisplay::Mode ProgressDisplay::mode_for_stderr(bool quiet) {
  if (quiet) return Mode::silent;
  return isatty(STDERR_FILENO) ? Mode::live : Mode::log;
}

ProgressDisplay::ProgressDisplay(std::FILE* out, Mode mode, std::chrono::milliseconds log_interval)
    : out_(out), mode_(mode), log_interval_(log_interval) {}

void ProgressDisplay::update(const Progress& progress, Clock::time_point now) {
  if (mode_ == Mode::silent) return;
  std::string line = describe(progress);
  if (mode_ == Mode::log) {
    if (last_log_ && now - *last_log_ < log_interval_) return;
    last_log_ = now;
    std::fprintf(out_, "gossip-rdzv: %s\n", line.c_str());
    std::fflush(out_);
  } else {
    TerminalLine::of(out_).show(line);  // log messages go above it (terminal_line.hpp)
  }
}

void ProgressDisplay::finish() {
  if (mode_ == Mode::live) TerminalLine::of(out_).end();
}

namespace {

// Names shown in "waiting for ..."; the rest are counted.
constexpr std::size_t kMaxNames = 5;

// A member's host name when no other member shares it, else its endpoint.
std::string short_name(const Progress& progress, const MemberProgress& member) {
  const auto same =
      std::count_if(progress.members.begin(), progress.members.end(),
                    [&](const MemberProgress& m) { return m.hostname == member.hostname; });
  return printable(member.hostname.empty() || same > 1 ? member.endpoint : member.hostname);
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::uint32_t suspects(const Progress& progress) {
  return static_cast<std::uint32_t>(
      std::count_if(progress.members.begin(), progress.members.end(),
                    [](const MemberProgress& m) { return m.status == "suspect"; }));
}

// ", 2 suspect (n4, n7)": the `count` members that stopped answering probes. The round still
// counts them (a suspect is a member until it is declared dead), so they are not waited for.
std::string suspects_text(const Progress& progress, std::uint32_t count) {
  if (count == 0) return "";
  std::vector<std::string> names;
  for (const auto& member : progress.members) {
    if (member.status == "suspect" && names.size() < kMaxNames)
      names.push_back(short_name(progress, member));
  }
  if (count > names.size()) names.push_back(std::to_string(count - names.size()) + " more");
  return ", " + std::to_string(count) + " suspect (" + comma_list(names) + ")";
}

// "waiting for n3 (dead), 2 more" / "waiting for 3 more": `missing` nodes, the lost ones
// by name.
std::string waiting_for(const Progress& progress, std::uint32_t missing) {
  std::vector<std::string> names;
  for (const auto& member : progress.members) {
    if (member.status != "dead" || names.size() >= std::min<std::size_t>(missing, kMaxNames))
      continue;
    names.push_back(short_name(progress, member) + " (" + member.status + ")");
  }
  const auto unknown = missing - static_cast<std::uint32_t>(names.size());
  if (unknown > 0) names.push_back(std::to_string(unknown) + " more");
  return "waiting for " + comma_list(names);
}

// "; no answer from n3" and "; peers cannot reach this node at X: A": what is wrong with
// the paths between the nodes.
std::string reachability(const Progress& progress) {
  std::string text;
  std::vector<std::string> silent;
  for (const auto& member : progress.members) {
    if (member.unreachable) silent.push_back(short_name(progress, member));
  }
  if (!silent.empty()) text += "; no answer at the address of " + comma_list(silent);
  if (!progress.unreachable_by.empty()) {
    std::vector<std::string> peers;
    for (const auto& peer : progress.unreachable_by) peers.push_back(printable(peer));
    text += "; peers cannot reach this node at " + progress.endpoint + ": " + comma_list(peers);
  }
  return text;
}

}  // namespace

std::string ProgressDisplay::describe(const Progress& progress) {
  if (!progress.joined) return "contacting seed(s)..." + reachability(progress);
  if (progress.committed) return "agreed on the membership";
  const std::uint32_t alive = progress.alive();
  const std::uint32_t suspect_count = suspects(progress);
  const std::uint32_t counted = alive + suspect_count;  // what the round counts
  const std::uint32_t missing = progress.min_nodes > counted ? progress.min_nodes - counted : 0;
  const std::string suspect = suspects_text(progress, suspect_count);
  std::string line;
  if (progress.min_nodes == progress.max_nodes) {
    line = std::to_string(alive) + "/" + std::to_string(progress.min_nodes) + " joined" + suspect +
           ", " + (missing > 0 ? waiting_for(progress, missing) : "agreeing");
  } else if (missing > 0) {
    line = std::to_string(alive) + " joined" + suspect + ", " + waiting_for(progress, missing) +
           " (need " + std::to_string(progress.min_nodes) + ", up to " +
           std::to_string(progress.max_nodes) + ")";
  } else {
    line = std::to_string(alive) + " joined" + suspect + " (need " +
           std::to_string(progress.min_nodes) + ", up to " + std::to_string(progress.max_nodes) +
           "), last call for more";
  }
  line += reachability(progress);
  if (progress.last_heard) {
    line += "; last heard " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(*progress.last_heard).count()) +
            " s ago";
  }
  return line;
}

}  // namespace gossip_rdzv::cli
