// gossip-rdzv: parse the command line, run one command, map every failure to an exit code
// (docs/cli.md lists them). No exception leaves main().
#include <fcntl.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "commands.hpp"
#include "gossip_rdzv/error.hpp"
#include "terminal_line.hpp"

namespace {

using gossip_rdzv::cli::CliOptions;
using gossip_rdzv::cli::Command;

spdlog::level::level_enum log_level(const gossip_rdzv::cli::Verbosity& verbosity) {
  if (verbosity.quiet) return spdlog::level::err;
  if (verbosity.verbose == 1) return spdlog::level::info;
  if (verbosity.verbose == 2) return spdlog::level::debug;
  if (verbosity.verbose >= 3) return spdlog::level::trace;
  // Without -q/-v the library's own variable still works (src/runtime/runtime.hpp).
  if (const char* name = std::getenv("GOSSIP_RDZV_LOG")) {
    auto level = spdlog::level::from_str(name);
    if (level != spdlog::level::off || std::string(name) == "off") return level;
  }
  // The progress line and the assignment table already say what info would; warnings
  // and errors are what a user must see.
  return spdlog::level::warn;
}

// The library logs through the logger named "gossip_rdzv" and uses ours when it is
// registered first. It writes to stderr: stdout carries only the result (--format).
// On a terminal, messages go above join's live progress line instead of into it.
void configure_logging(const gossip_rdzv::cli::Verbosity& verbosity) {
  auto logger = spdlog::stderr_color_mt("gossip_rdzv");
  if (isatty(STDERR_FILENO)) {
    auto& sinks = logger->sinks();
    for (auto& sink : sinks) sink = gossip_rdzv::cli::TerminalLine::sink(stderr, sink);
  }
  logger->set_level(log_level(verbosity));
  spdlog::set_default_logger(logger);
}

int run(const CliOptions& options) {
  switch (options.command) {
    case Command::seed:
      return gossip_rdzv::cli::run_seed(options);
    case Command::members:
      return gossip_rdzv::cli::run_members(options);
    case Command::doctor:
      return gossip_rdzv::cli::run_doctor(options);
    case Command::keygen:
      return gossip_rdzv::cli::run_keygen(options);
    case Command::keys:
      return gossip_rdzv::cli::run_keys(options);
    default:
      return gossip_rdzv::cli::run_join(options);
  }
}

int run_guarded(const std::vector<std::string>& args) {
  auto parsed = gossip_rdzv::cli::parse_command_line(args);
  if (!parsed.options) {
    std::fputs(parsed.text.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  configure_logging(parsed.options->verbosity);
  return run(*parsed.options);
}

// A caller may start us with stdin, stdout or stderr closed (`<&-`): the next descriptor we
// open (a socket, ZeroMQ's eventfd) would take that number, and writing "stdout", or the
// stay replacing stdio with /dev/null (handoff.hpp), would hit it. /dev/null fills them.
void fill_standard_descriptors() {
  int fd = 0;
  while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO) {
  }
  if (fd > STDERR_FILENO) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  fill_standard_descriptors();
  // Before any thread exists, so the node's threads inherit the mask (see commands.hpp).
  gossip_rdzv::cli::block_supervised_signals();
  try {
    return run_guarded(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const gossip_rdzv::Error& error) {
    // The command line was checked before the node started (find_problem), so a usage
    // error here is a disagreement between nodes (--nnodes, --seed lists): the message
    // names the fix, and pointing at --help would mislead.
    std::fprintf(stderr, "gossip-rdzv: error: %s\n", error.what());
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    std::fprintf(stderr,
                 "gossip-rdzv: internal error: %s; please report it with the command line "
                 "and the output of -vv\n",
                 error.what());
    return 70;
  }
}
