// docs/troubleshooting.md promises every message the tool prints, by exit code. This test
// keeps both sides honest: each key phrase below must still be in the source file that
// prints it (so a reworded message fails here and points at the doc), and in the doc.
// Placeholders ({} and {:.1f} of fmt, %s/%d of printf) match any text on the same line of the doc,
// where they are written <like this>.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "gossip_rdzv/error.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string doc() {
  static const std::string text = read_file(GOSSIP_RDZV_DOCS_DIR "/troubleshooting.md");
  return text;
}

struct Phrase {
  const char* source;  ///< file, relative to the repository root, that prints it
  const char* text;    ///< one string literal of that file, or part of one
};

// Key phrases: one literal each (clang-format may split longer messages between literals).
const std::vector<Phrase>& phrases() {
  static const std::vector<Phrase> table = {
      {"src/transport/zmq_transport.cpp", "the port is already in use"},
      {"src/transport/zmq_transport.cpp",
       ". Stop that process or pick another port with --listen :PORT"},
      {"src/transport/port_holder.cpp", "by another process (not visible from here)"},
      {"src/transport/port_holder.cpp", "by pid"},
      {"src/transport/zmq_transport.cpp", "cannot listen on"},
      {"src/transport/zmq_transport.cpp",
       "is not an address of this machine; use --listen :PORT or one of:"},
      {"src/transport/zmq_transport.cpp",
       "' is neither an address nor an interface of this machine; use"},
      {"src/transport/zmq_transport.cpp",
       "permission denied (ports below 1024 need root); pick a port"},
      {"src/runtime/node.cpp", "cannot find a free port for MASTER_PORT:"},
      {"src/runtime/node.cpp",
       "master port {} is already in use {}: if this node gets node rank 0 the workers"},
      {"src/runtime/node.cpp", "no seed answered within"},
      {"src/runtime/node.cpp", "If a job of this run id already ran, it may have ended: its seed "},
      {"src/runtime/seed_resolver.cpp", "nothing listens on"},
      {"src/runtime/seed_resolver.cpp", ": start the seed first or fix the port in --seed"},
      {"src/runtime/seed_resolver.cpp",
       "{} does not answer: a firewall may drop traffic to port {}; open it or check with"},
      {"src/runtime/seed_resolver.cpp", "no route to"},
      {"src/runtime/seed_resolver.cpp",
       "accepts connections but never answered as a gossip-rdzv seed: is it another"},
      {"src/runtime/seed_resolver.cpp",
       "took this node's connection but never answered it, and nothing "},
      {"src/runtime/seed_resolver.cpp",
       "listens there now: the seed stopped, most likely at its own --join-timeout, which "},
      {"src/runtime/seed_resolver.cpp",
       "took this node's connection but never answered it: it is too busy "},
      {"src/runtime/seed_resolver.cpp",
       "(many nodes joining through it on a loaded machine) or stuck; check its load and its "},
      {"src/runtime/seed_resolver.cpp", "seed name '"},
      {"src/runtime/members_query.cpp", "' does not resolve (getaddrinfo:"},
      {"src/runtime/members_query.cpp", "): check the spelling, /etc/hosts or DNS"},
      {"src/runtime/seed_resolver.cpp", "seed '{}' does not resolve ({}): skipping it"},
      {"src/runtime/members_query.cpp", "did not answer within"},
      {"src/runtime/failure_report.cpp", "timed out after {}: {} of {} nodes joined ({})"},
      {"src/runtime/failure_report.cpp",
       "; {} still missing: start them with the same --seed and --run-id {}"},
      {"src/runtime/failure_report.cpp",
       "; enough nodes are present but they did not agree on a view in time (see the log"},
      {"src/runtime/failure_report.cpp", ". Seen and then silent:"},
      {"src/runtime/failure_report.cpp", "never heard directly"},
      {"src/runtime/failure_report.cpp", ", last news via"},
      {"src/runtime/failure_report.cpp", ". Use the same --run-id on every node of the job ("},
      {"src/protocol/core.cpp", "belongs to run '"},
      {"src/protocol/core.cpp", "', the message came from run '"},
      {"src/runtime/failure_report.cpp", "speaks another protocol version:"},
      {"src/runtime/failure_report.cpp",
       ". Run the same gossip-rdzv version on every node (this one"},
      {"src/protocol/core.cpp", "speaks gossip-rdzv protocol version"},
      {"src/runtime/members_query.cpp", ": use the same gossip-rdzv version"},
      {"src/protocol/rank_assignment.cpp", "both asked for --node-rank"},
      {"src/protocol/rank_assignment.cpp",
       "; give each node a distinct --node-rank or drop the hint"},
      {"src/protocol/rank_assignment.cpp", "but the view has only"},
      {"src/runtime/failure_report.cpp",
       "this node was not admitted: the round closed with {} nodes"},
      {"src/runtime/failure_report.cpp",
       "restarted after the others agreed); restart the other nodes too"},
      {"src/output/atomic_file.cpp", "; make sure the directory exists (or can be created)"},
      {"src/protocol/agreement_link.cpp", ") was started with --nnodes"},
      {"src/protocol/agreement_link.cpp", "; start every node of run '"},
      {"src/protocol/agreement_link.cpp", " advertises the same endpoint "},
      {"src/protocol/agreement_link.cpp",
       "); every node needs an address:port of its own that the others can dial: give "},
      {"src/protocol/config.cpp", "config "},
      {"src/protocol/config.cpp", " (expected "},
      {"src/protocol/config.cpp",
       "1 to 64 letters, digits, '.', '_' or '-', the same on every node"},
      {"src/protocol/config.cpp", "MIN must not exceed MAX (max_nodes is "},
      {"src/protocol/rank_assignment.cpp", "announced --nproc-per-node 0; start every node"},
      {"src/protocol/rank_assignment.cpp", "(sum of --nproc-per-node) does not fit a torch rank"},
      {"tools/gossip-rdzv/commands.cpp",
       "gossip-rdzv: a worker failed with status %d; stopped the others"},
      {"tools/gossip-rdzv/launcher.cpp", "cannot run '"},
      {"tools/gossip-rdzv/launcher.cpp", "(is it installed and on PATH?)"},
      {"tools/gossip-rdzv/launcher.cpp",
       "gossip-rdzv: forwarded %s to the workers; exit status %d"},
      {"tools/gossip-rdzv/commands.cpp", "interrupted by %s, leaving the rendezvous"},
      {"tools/gossip-rdzv/main.cpp",
       "gossip-rdzv: internal error: %s; please report it with the command line"},
      {"src/runtime/node.cpp", "the gossip-rdzv event loop failed:"},
      {"src/runtime/seed_resolver.cpp",
       "seed '{}' resolves to loopback {} here; advertising {} instead (set"},
      {"src/runtime/runtime.cpp",
       "ignored a message that is not valid gossip-rdzv (at most {} such lines per {} s)"},
      {"src/runtime/runtime.cpp",
       "more messages that are not valid gossip-rdzv were ignored without a log line"},
      {"src/runtime/runtime.cpp", "{} refused this node: {}"},
      {"src/runtime/runtime.cpp", "round {} closed with {} nodes without this node"},
      {"src/protocol/config.cpp",
       "MIN or more; only the one holding a majority of the --seed list can "},
      {"src/runtime/failure_report.cpp",
       "ended or was cut off from the others while they agreed. Start "},
      {"src/runtime/failure_report.cpp",
       "; every member is ready, but the view needs votes or witnesses from a majority of the "},
      {"src/protocol/agreement_link.cpp",
       ") was started with another --seed list than this node ("},
      {"tools/gossip-rdzv/cli_options.cpp", "unexpected argument '"},
      {"tools/gossip-rdzv/cli_options.cpp", "' (a command to run goes after '--')"},
      {"tools/gossip-rdzv/cli_options.cpp", "'-- CMD' is only accepted by join"},
      {"tools/gossip-rdzv/cli_options.cpp", "--quiet and --verbose exclude each other"},
      {"tools/gossip-rdzv/cli_options.cpp", "--watch is for running without '-- CMD'"},
      {"tools/gossip-rdzv/cli_options.cpp", "--on-round needs --watch"},
      {"tools/gossip-rdzv/cli_options.cpp", "empty command"},
      {"tools/gossip-rdzv/watch.cpp", "gossip-rdzv: --on-round failed with status %d for round "},
      {"tools/gossip-rdzv/watch.cpp",
       "(the round's files are written; the command runs again at the next round)"},
      {"tools/gossip-rdzv/doctor.cpp", "' does not resolve (getaddrinfo:"},
      {"tools/gossip-rdzv/doctor.cpp", "(connection refused)"},
      {"tools/gossip-rdzv/doctor.cpp",
       ": packets are dropped, most likely by a firewall (or the host is down)"},
      {"tools/gossip-rdzv/doctor.cpp",
       "): the address is wrong, or the host is down or not on a network this"},
      {"tools/gossip-rdzv/doctor.cpp",
       "accepts TCP connections but did not answer the gossip-rdzv query"},
      {"tools/gossip-rdzv/doctor.cpp", "is not an address of this machine"},
      {"tools/gossip-rdzv/doctor.cpp", "the seed is this node itself ("},
      {"tools/gossip-rdzv/doctor.cpp", ", a loopback address, while the seed"},
      {"tools/gossip-rdzv/doctor.cpp", "is already in use"},
      {"tools/gossip-rdzv/doctor.cpp", " accepts IPv4 only, but the seed "},
      {"src/runtime/node.cpp", "no seed let this node join within "},
      {"src/runtime/failure_report.cpp",
       "peers cannot reach this node at {}: {} got no answer there; {}"},
      {"src/runtime/failure_report.cpp", "This node gets no answer at the advertised address of "},
      {"src/runtime/failure_report.cpp", "messages unanswered over {} while it kept sending{})"},
      {"src/runtime/failure_report.cpp", ", {} messages there unanswered"},
      {"src/runtime/failure_report.cpp", "; it was told"},
      {"src/runtime/failure_report.cpp",
       ": their address does not work from here (wrong --advertise, or a firewall drops "},
      {"src/runtime/failure_report.cpp", ", unless this node's own slowness explains it: "},
      {"src/runtime/failure_report.cpp",
       "their answers may have come too late rather than not at all; check this machine's "},
      {"src/runtime/runtime.cpp",
       "{} cannot reach this node at {}: {} messages it sent there in {:.1f} s got no answer; {}"},
      {"src/runtime/runtime.cpp",
       "advertise an address they can reach (--advertise) or open inbound TCP port {}"},
      {"src/runtime/runtime.cpp",
       "{} is a loopback address, which on every other machine means that machine itself; "},
      {"src/runtime/runtime.cpp",
       "advertise an address of this machine they can reach (--advertise)"},
      {"src/runtime/runtime.cpp",
       "{} sends to this node but does not answer at that address: {} messages sent "},
      {"src/runtime/runtime.cpp",
       "there in {:.1f} s got no answer; told it so (the fix is on that node: its "},
      {"src/runtime/auth_report.cpp", "authentication failed: "},
      {"src/runtime/auth_report.cpp", " refused this node's messages: the two do not hold the "},
      {"src/runtime/auth_report.cpp", " does not hold this job's key"},
      {"src/runtime/auth_report.cpp",
       "); start every node with the same --key-file (gossip-rdzv keygen makes one)"},
      {"src/runtime/auth_report.cpp", ") and this node sent its messages without one"},
      {"src/runtime/auth_report.cpp", "it was started without a job key and this node seals its "},
      {"src/runtime/failure_report.cpp", " without this job's key: {}; if they belong to this "},
      {"tools/gossip-rdzv/progress.cpp", "; peers cannot reach this node at "},
      {"tools/gossip-rdzv/progress.cpp", "; no answer at the address of "},
  };
  return table;
}

std::string escape_regex(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

// "{} does not answer" -> "[^\n]*?does not answer": a placeholder is any text on the line.
std::regex doc_pattern(const std::string& phrase) {
  static const std::regex placeholder(R"(\{(:[^}]*)?\}|%s|%d)");
  std::string pattern;
  std::sregex_token_iterator part(phrase.begin(), phrase.end(), placeholder, -1), end;
  bool first = true;
  for (; part != end; ++part) {
    if (!first) pattern += "[^\\n]*?";
    pattern += escape_regex(*part);
    first = false;
  }
  return std::regex(pattern);
}

TEST(TroubleshootingDocTest, DocExists) {
  ASSERT_FALSE(doc().empty()) << "cannot read docs/troubleshooting.md";
}

TEST(TroubleshootingDocTest, EveryPhraseIsStillPrintedByItsSource) {
  for (const auto& phrase : phrases()) {
    const std::string source = read_file(std::string(GOSSIP_RDZV_SOURCE_DIR "/") + phrase.source);
    ASSERT_FALSE(source.empty()) << "cannot read " << phrase.source;
    EXPECT_NE(source.find(phrase.text), std::string::npos)
        << phrase.source << " no longer prints \"" << phrase.text
        << "\": update the message in docs/troubleshooting.md and this table";
  }
}

TEST(TroubleshootingDocTest, EveryPhraseIsInTheDoc) {
  const std::string text = doc();
  for (const auto& phrase : phrases()) {
    EXPECT_TRUE(std::regex_search(text, doc_pattern(phrase.text)))
        << "docs/troubleshooting.md does not quote \"" << phrase.text << "\" (printed by "
        << phrase.source << ")";
  }
}

// Every code the --help footer lists has a section "## Exit N: <name>".
TEST(TroubleshootingDocTest, EveryExitCodeOfTheHelpHasASection) {
  const std::string help = gossip_rdzv::cli::help_text();
  const auto footer = help.find("Exit codes:");
  ASSERT_NE(footer, std::string::npos);
  static const std::regex code_in_help(R"((\d+) [a-zA-Z])");
  const std::string listed = help.substr(footer, help.find("with -- CMD") - footer);
  std::vector<int> codes;
  for (std::sregex_iterator it(listed.begin(), listed.end(), code_in_help), end; it != end; ++it) {
    codes.push_back(std::stoi((*it)[1]));
  }
  ASSERT_GE(codes.size(), 12u) << listed;
  for (int code : codes) {
    if (code == 0) continue;
    const auto name = gossip_rdzv::to_string(static_cast<gossip_rdzv::ErrorCode>(code));
    EXPECT_NE(doc().find("## Exit " + std::to_string(code) + ": " + std::string(name)),
              std::string::npos)
        << "docs/troubleshooting.md has no section '## Exit " << code << ": " << name << "'";
  }
}

TEST(TroubleshootingDocTest, EveryErrorCodeHasASection) {
  using gossip_rdzv::ErrorCode;
  for (ErrorCode code : {ErrorCode::usage, ErrorCode::listen_failed, ErrorCode::seed_unreachable,
                         ErrorCode::join_timeout, ErrorCode::run_id_mismatch,
                         ErrorCode::version_mismatch, ErrorCode::rank_conflict,
                         ErrorCode::not_admitted, ErrorCode::io_error, ErrorCode::seed_unresolved,
                         ErrorCode::job_over, ErrorCode::auth_failed, ErrorCode::internal}) {
    const std::string heading = "## Exit " + std::to_string(static_cast<int>(code)) + ": " +
                                std::string(gossip_rdzv::to_string(code));
    EXPECT_NE(doc().find(heading), std::string::npos) << "missing section '" << heading << "'";
  }
}

TEST(TroubleshootingDocTest, WorkerStatusesAndDoctorAreDocumented) {
  for (const char* heading : {"## Worker exit statuses", "## `gossip-rdzv doctor`"}) {
    EXPECT_NE(doc().find(heading), std::string::npos) << "missing section '" << heading << "'";
  }
  for (const char* status : {"| 127 |", "| 126 |", "| 128+N |"}) {
    EXPECT_NE(doc().find(status), std::string::npos) << "worker status " << status;
  }
}

// The article's four causes (SEED.md) each point somewhere.
TEST(TroubleshootingDocTest, MapsTheArticlesFourCauses) {
  for (const char* cause :
       {"the port is already taken", "the master (seed) address is wrong",
        "the network blocks the traffic (firewall)", "software bug or version skew"}) {
    EXPECT_NE(doc().find(cause), std::string::npos) << cause;
  }
}

}  // namespace
