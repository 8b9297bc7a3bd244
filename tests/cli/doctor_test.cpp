// gossip-rdzv doctor: verdicts against real sockets on loopback (SystemProbe), and against a
// scripted probe for what loopback cannot produce (silence, no route, another version).
#include "doctor.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <memory>

#include "cli_options.hpp"
#include "gossip_rdzv/node.hpp"
#include "support/loopback_socket.hpp"

namespace {

using gossip_rdzv::ErrorCode;
using gossip_rdzv::cli::DoctorItem;
using gossip_rdzv::cli::DoctorOptions;
using gossip_rdzv::cli::DoctorProbe;
using gossip_rdzv::cli::DoctorReport;
using gossip_rdzv::cli::SystemProbe;
using gossip_rdzv::cli::Verdict;
using gossip_rdzv::testing_support::free_loopback_port;
using gossip_rdzv::testing_support::LoopbackSocket;
using gossip_rdzv::transport::ProbeOutcome;
using std::chrono::milliseconds;

std::unique_ptr<gossip_rdzv::Node> start_seed(const std::string& run_id) {
  gossip_rdzv::Config config;
  config.run_id = run_id;
  config.listen_host = "127.0.0.1";
  config.listen_port = 0;
  config.dedicated_seed = true;
  config.timing = gossip_rdzv::Timing::local();
  auto node = std::make_unique<gossip_rdzv::Node>(config);
  node->start();
  return node;
}

DoctorOptions loopback_options(const std::string& seed) {
  DoctorOptions options;
  options.seeds = {seed};
  options.listen_host = "127.0.0.1";
  options.listen_port = 0;  // not this test's concern unless set
  options.run_id = "doctor-test";
  options.timeout = milliseconds(2000);
  return options;
}

const DoctorItem* find_item(const DoctorReport& report, const std::string& check) {
  for (const auto& item : report.items) {
    if (item.check == check) return &item;
  }
  return nullptr;
}

std::string dump(const DoctorReport& report) {
  return gossip_rdzv::cli::doctor_text(report);
}

// ---- real sockets on loopback --------------------------------------------------------------

TEST(DoctorTest, ClosedSeedPortIsRefused) {
  const std::string seed = "127.0.0.1:" + std::to_string(free_loopback_port());
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(loopback_options(seed), probe);
  const DoctorItem* reach = find_item(report, "reach");
  ASSERT_NE(reach, nullptr) << dump(report);
  EXPECT_EQ(reach->verdict, Verdict::fail) << dump(report);
  EXPECT_NE(reach->finding.find("nothing listens on"), std::string::npos) << dump(report);
  EXPECT_NE(reach->fix.find("start the seed first"), std::string::npos) << dump(report);
  EXPECT_EQ(find_item(report, "handshake")->verdict, Verdict::skip);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::seed_unreachable)) << dump(report);
}

TEST(DoctorTest, RunningSeedPasses) {
  auto node = start_seed("doctor-test");
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(loopback_options(node->endpoint()), probe);
  for (const auto& item : report.items) {
    EXPECT_NE(item.verdict, Verdict::fail) << dump(report);
  }
  const DoctorItem* handshake = find_item(report, "handshake");
  ASSERT_NE(handshake, nullptr);
  EXPECT_EQ(handshake->verdict, Verdict::pass) << dump(report);
  EXPECT_NE(handshake->finding.find("answers as gossip-rdzv run 'doctor-test'"), std::string::npos);
  EXPECT_EQ(report.exit_code(), 0) << dump(report);
  EXPECT_EQ(report.advertise, "127.0.0.1");
  EXPECT_EQ(report.gloo_socket_ifname, "lo");
  node->stop();
}

TEST(DoctorTest, WrongRunIdIsAMismatch) {
  auto node = start_seed("another-job");
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(loopback_options(node->endpoint()), probe);
  const DoctorItem* handshake = find_item(report, "handshake");
  ASSERT_NE(handshake, nullptr);
  EXPECT_EQ(handshake->verdict, Verdict::fail) << dump(report);
  EXPECT_NE(handshake->finding.find("another-job"), std::string::npos) << dump(report);
  EXPECT_NE(handshake->fix.find("same --run-id"), std::string::npos) << dump(report);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::run_id_mismatch)) << dump(report);
  node->stop();
}

TEST(DoctorTest, BusyListenPortNamesThisProcess) {
  LoopbackSocket holder(LoopbackSocket::Mode::listening);
  auto node = start_seed("doctor-test");
  DoctorOptions options = loopback_options(node->endpoint());
  options.listen_port = holder.port();
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(options, probe);
  const DoctorItem* listen = find_item(report, "listen port");
  ASSERT_NE(listen, nullptr);
  EXPECT_EQ(listen->verdict, Verdict::fail) << dump(report);
  EXPECT_NE(listen->finding.find("is already in use by pid " + std::to_string(::getpid())),
            std::string::npos)
      << dump(report);
  EXPECT_NE(listen->fix.find("--listen :PORT"), std::string::npos);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::listen_failed)) << dump(report);
  node->stop();
}

TEST(DoctorTest, BusyMasterPortFails) {
  LoopbackSocket holder(LoopbackSocket::Mode::listening);
  auto node = start_seed("doctor-test");
  DoctorOptions options = loopback_options(node->endpoint());
  options.master_port = holder.port();
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(options, probe);
  const DoctorItem* master = find_item(report, "master port");
  ASSERT_NE(master, nullptr) << dump(report);
  EXPECT_EQ(master->verdict, Verdict::fail) << dump(report);
  EXPECT_NE(master->finding.find("by pid " + std::to_string(::getpid())), std::string::npos);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::listen_failed));
  node->stop();
}

TEST(DoctorTest, ListenAddressOfAnotherMachineFails) {
  auto node = start_seed("doctor-test");
  DoctorOptions options = loopback_options(node->endpoint());
  options.listen_host = "192.0.2.77";  // TEST-NET-1: never an address of this machine
  options.listen_port = 29400;
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(options, probe);
  const DoctorItem* listen = find_item(report, "listen port");
  ASSERT_NE(listen, nullptr);
  EXPECT_EQ(listen->verdict, Verdict::fail) << dump(report);
  EXPECT_NE(listen->finding.find("is not an address of this machine"), std::string::npos);
  node->stop();
}

TEST(DoctorTest, UnresolvableSeedName) {
  SystemProbe probe;
  const auto report =
      gossip_rdzv::cli::run_doctor(loopback_options("no-such-host.invalid:29400"), probe);
  const DoctorItem* resolve = find_item(report, "resolve");
  ASSERT_NE(resolve, nullptr);
  EXPECT_EQ(resolve->verdict, Verdict::fail) << dump(report);
  EXPECT_NE(resolve->finding.find("does not resolve"), std::string::npos);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::seed_unresolved)) << dump(report);
}

TEST(DoctorTest, JsonHasTheSameItems) {
  const std::string seed = "127.0.0.1:" + std::to_string(free_loopback_port());
  SystemProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(loopback_options(seed), probe);
  const std::string json = gossip_rdzv::cli::doctor_json(report);
  EXPECT_NE(json.find("\"ok\": false"), std::string::npos) << json;
  EXPECT_NE(json.find("\"exit_code\": 4"), std::string::npos) << json;
  EXPECT_NE(json.find("\"exit_name\": \"seed_unreachable\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"check\": \"reach\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"verdict\": \"fail\""), std::string::npos) << json;
  std::size_t checks = 0;
  for (auto at = json.find("\"check\":"); at != std::string::npos;
       at = json.find("\"check\":", at + 1)) {
    ++checks;
  }
  EXPECT_EQ(checks, report.items.size());
}

// ---- a scripted probe ----------------------------------------------------------------------

class ScriptedProbe : public DoctorProbe {
 public:
  std::map<std::string, Resolution> names;
  std::map<std::string, gossip_rdzv::transport::ProbeResult> connects;  // by ip
  std::map<std::string, Handshake> handshakes;                          // by "ip:port"
  std::map<std::uint16_t, PortState> ports;
  std::map<std::string, Route> routes;
  std::vector<std::string> local_addresses;
  std::string host = "worker1";

  Resolution resolve(const std::string& name) override {
    if (auto found = names.find(name); found != names.end()) return found->second;
    if (name.find_first_not_of("0123456789.:abcdef") == std::string::npos) return {{name}, ""};
    return {{}, "Name or service not known"};
  }
  gossip_rdzv::transport::ProbeResult connect(const std::string& ip, std::uint16_t,
                                              milliseconds) override {
    if (auto found = connects.find(ip); found != connects.end()) return found->second;
    return {ProbeOutcome::connected, ""};
  }
  Handshake handshake(const std::string& endpoint, const std::string&, milliseconds) override {
    if (auto found = handshakes.find(endpoint); found != handshakes.end()) return found->second;
    return {ErrorCode::ok, "", 3, 3};
  }
  PortState bind_port(const std::string&, std::uint16_t port) override {
    if (auto found = ports.find(port); found != ports.end()) return found->second;
    return {};
  }
  std::optional<Route> route_to(const std::string& ip) override {
    if (auto found = routes.find(ip); found != routes.end()) return found->second;
    return Route{"10.77.0.2", "veth-w1"};
  }
  bool is_local_address(const std::string& ip) override {
    return std::find(local_addresses.begin(), local_addresses.end(), ip) != local_addresses.end();
  }
  std::string hostname() override { return host; }
};

DoctorOptions lan_options(std::vector<std::string> seeds) {
  DoctorOptions options;
  options.seeds = std::move(seeds);
  options.run_id = "job42";
  options.timeout = milliseconds(1000);
  return options;
}

TEST(DoctorScriptedTest, KeyLineNamesThePrimaryKeyAndTheFile) {
  ScriptedProbe probe;
  DoctorOptions options = lan_options({"10.77.0.1:29400"});
  options.key_file = "/etc/gossip-rdzv/job.key";
  options.key_id = "0123456789abcdef";
  options.key_count = 2;
  const auto report = gossip_rdzv::cli::run_doctor(options, probe);
  const std::string text = gossip_rdzv::cli::doctor_text(report);
  EXPECT_NE(text.find("\nkey: 0123456789abcdef (2 keys) from /etc/gossip-rdzv/job.key\n"),
            std::string::npos)
      << text;
  const std::string json = gossip_rdzv::cli::doctor_json(report);
  EXPECT_NE(json.find("\"key\": {\"file\": \"/etc/gossip-rdzv/job.key\", \"id\": "
                      "\"0123456789abcdef\", \"keys\": 2}"),
            std::string::npos)
      << json;
}

TEST(DoctorScriptedTest, WithoutAKeyItSaysMessagesGoInClear) {
  ScriptedProbe probe;
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe);
  const std::string text = gossip_rdzv::cli::doctor_text(report);
  EXPECT_NE(text.find("\nkey: none (messages in clear)\n"), std::string::npos) << text;
  EXPECT_NE(gossip_rdzv::cli::doctor_json(report).find("\"key\": null"), std::string::npos);
}

TEST(DoctorScriptedTest, SilentSeedSuggestsAFirewall) {
  ScriptedProbe probe;
  probe.connects["10.77.0.1"] = {ProbeOutcome::timed_out, "Connection timed out"};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe);
  const DoctorItem* reach = find_item(report, "reach");
  EXPECT_EQ(reach->verdict, Verdict::fail);
  EXPECT_NE(reach->finding.find("does not answer"), std::string::npos) << dump(report);
  EXPECT_NE(reach->finding.find("firewall"), std::string::npos) << dump(report);
  EXPECT_NE(reach->fix.find("nc -vz 10.77.0.1 29400"), std::string::npos) << dump(report);
  EXPECT_EQ(report.exit_code(), 4);
}

TEST(DoctorScriptedTest, NoRouteSaysTheAddressIsWrong) {
  ScriptedProbe probe;
  probe.connects["10.77.0.99"] = {ProbeOutcome::unreachable, "No route to host"};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.99:29400"}), probe);
  const DoctorItem* reach = find_item(report, "reach");
  EXPECT_NE(reach->finding.find("no route to 10.77.0.99"), std::string::npos) << dump(report);
  EXPECT_NE(reach->finding.find("the address is wrong"), std::string::npos) << dump(report);
  EXPECT_EQ(report.exit_code(), 4);
}

TEST(DoctorScriptedTest, VersionMismatch) {
  ScriptedProbe probe;
  probe.handshakes["10.77.0.1:29400"] = {ErrorCode::version_mismatch,
                                         "10.77.0.1:29400 speaks gossip-rdzv protocol version 2, "
                                         "this program version 1: use the same gossip-rdzv version",
                                         0, 0};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe);
  EXPECT_EQ(find_item(report, "handshake")->verdict, Verdict::fail);
  EXPECT_EQ(report.exit_code(), 7);
}

TEST(DoctorScriptedTest, ResolvesAAndAaaaAndDialsTheListenFamily) {
  ScriptedProbe probe;
  probe.names["node0"] = {{"fd77::1", "10.77.0.1"}, ""};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"node0:29400"}), probe);
  const DoctorItem* resolve = find_item(report, "resolve");
  EXPECT_NE(resolve->finding.find("10.77.0.1 (A)"), std::string::npos) << dump(report);
  EXPECT_NE(resolve->finding.find("fd77::1 (AAAA)"), std::string::npos) << dump(report);
  EXPECT_NE(resolve->finding.find("join dials 10.77.0.1"), std::string::npos) << dump(report);
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(DoctorScriptedTest, ANameWithSeveralAddressesIsOneSeedPerAddressAsJoinTakesIt) {
  ScriptedProbe probe;
  // A headless Service's name: its answer in any order, with an IPv6 address join leaves out.
  probe.names["rdzv-seeds"] = {{"10.77.0.3", "fd77::1", "10.77.0.1", "10.77.0.2"}, ""};
  probe.connects["10.77.0.2"] = {ProbeOutcome::refused, "Connection refused"};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"rdzv-seeds:29400"}), probe);
  const DoctorItem* resolve = find_item(report, "resolve");
  ASSERT_NE(resolve, nullptr) << dump(report);
  EXPECT_NE(resolve->finding.find("join takes each of 10.77.0.1, 10.77.0.2, 10.77.0.3 as a seed"),
            std::string::npos)
      << dump(report);
  std::vector<std::string> reached;
  for (const auto& item : report.items) {
    if (item.check == "reach") reached.push_back(item.subject);
  }
  EXPECT_EQ(reached, (std::vector<std::string>{"rdzv-seeds:29400 (10.77.0.1)",
                                               "rdzv-seeds:29400 (10.77.0.2)",
                                               "rdzv-seeds:29400 (10.77.0.3)"}))
      << dump(report);
  // One address of three refuses: join still gets in through the others.
  EXPECT_EQ(report.exit_code(), 0) << dump(report);
  EXPECT_NE(dump(report).find("nothing listens on 10.77.0.2:29400"), std::string::npos)
      << dump(report);
}

TEST(DoctorScriptedTest, MostFundamentalFailureWins) {
  ScriptedProbe probe;
  probe.ports[29400] = {EADDRINUSE, gossip_rdzv::transport::PortHolder{4242, "python3 x.py"}};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"nowhere:29400"}), probe);
  EXPECT_EQ(find_item(report, "listen port")->verdict, Verdict::fail);
  EXPECT_NE(find_item(report, "listen port")->finding.find("by pid 4242 (python3 x.py)"),
            std::string::npos);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::seed_unresolved)) << dump(report);
}

TEST(DoctorScriptedTest, AFailingSeedIsOnlyAWarningWhenAnotherWorks) {
  ScriptedProbe probe;
  probe.connects["10.77.0.9"] = {ProbeOutcome::refused, "Connection refused"};
  const auto report =
      gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.9:29400", "10.77.0.1:29400"}), probe);
  EXPECT_EQ(report.exit_code(), 0) << dump(report);
  EXPECT_EQ(find_item(report, "reach")->verdict, Verdict::warn) << dump(report);
}

TEST(DoctorScriptedTest, SeedThatIsThisNodePassesBeforeItRuns) {
  ScriptedProbe probe;
  probe.local_addresses = {"10.77.0.1"};
  probe.connects["10.77.0.1"] = {ProbeOutcome::refused, "Connection refused"};
  probe.routes["10.77.0.1"] = {"10.77.0.1", "veth-n0"};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe);
  EXPECT_EQ(report.exit_code(), 0) << dump(report);
  EXPECT_NE(find_item(report, "reach")->finding.find("the seed is this node itself"),
            std::string::npos);
}

TEST(DoctorScriptedTest, HostNameOnLoopbackWarnsWhenTheSeedIsRemote) {
  ScriptedProbe probe;
  probe.names["worker1"] = {{"127.0.1.1"}, ""};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe);
  const DoctorItem* host = find_item(report, "host name");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->verdict, Verdict::warn) << dump(report);
  EXPECT_NE(host->finding.find("a loopback address"), std::string::npos);
  EXPECT_NE(host->fix.find("10.77.0.2"), std::string::npos) << dump(report);
  EXPECT_EQ(report.exit_code(), 0);
  EXPECT_EQ(report.advertise, "10.77.0.2");
  EXPECT_EQ(report.gloo_socket_ifname, "veth-w1");
}

TEST(DoctorScriptedTest, GossipRdzvHoldingTheListenPortIsAWarning) {
  ScriptedProbe probe;
  probe.ports[29400] = {EADDRINUSE,
                        gossip_rdzv::transport::PortHolder{77, "gossip-rdzv join --seed x"}};
  const auto report = gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe);
  EXPECT_EQ(find_item(report, "listen port")->verdict, Verdict::warn) << dump(report);
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(DoctorScriptedTest, TextEndsWithTheVerdict) {
  ScriptedProbe probe;
  probe.connects["10.77.0.1"] = {ProbeOutcome::timed_out, "Connection timed out"};
  const std::string text =
      dump(gossip_rdzv::cli::run_doctor(lan_options({"10.77.0.1:29400"}), probe));
  EXPECT_NE(text.find("FAIL  reach 10.77.0.1:29400: "), std::string::npos) << text;
  EXPECT_NE(text.find("      fix: open TCP port 29400"), std::string::npos) << text;
  EXPECT_NE(text.find("SKIP  handshake"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: 1 failure(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("exit 4 (seed_unreachable)"), std::string::npos) << text;
  EXPECT_NE(text.find("GLOO_SOCKET_IFNAME=veth-w1"), std::string::npos) << text;
}

TEST(DoctorScriptedTest, DefaultListenWithOnlyIPv6SeedsBindsBothFamilies) {
  // join binds [::] itself when every seed is IPv6-only and --listen is the default.
  ScriptedProbe probe;
  probe.routes["fd77::1"] = {"fd77::2", "eth0"};
  auto report = gossip_rdzv::cli::run_doctor(lan_options({"[fd77::1]:29400"}), probe);
  EXPECT_EQ(report.exit_code(), 0) << dump(report);
  EXPECT_EQ(dump(report).find("accepts IPv4 only"), std::string::npos) << dump(report);
  EXPECT_NE(dump(report).find("[::]:29400"), std::string::npos) << dump(report);
  EXPECT_EQ(report.advertise, "fd77::2");
}

TEST(DoctorScriptedTest, IPv4OnlyListenWithAnIPv6SeedFails) {
  // With an IPv4 seed too, join keeps 0.0.0.0, yet dials (and advertises toward) the first.
  ScriptedProbe probe;
  probe.routes["fd77::1"] = {"fd77::2", "eth0"};
  auto report =
      gossip_rdzv::cli::run_doctor(lan_options({"[fd77::1]:29400", "10.77.0.1:29400"}), probe);
  EXPECT_EQ(report.exit_code(), static_cast<int>(ErrorCode::listen_failed)) << dump(report);
  EXPECT_NE(dump(report).find("accepts IPv4 only"), std::string::npos) << dump(report);
  EXPECT_NE(dump(report).find("--listen [::]:29400"), std::string::npos) << dump(report);
  DoctorOptions options = lan_options({"[fd77::1]:29400", "10.77.0.1:29400"});
  options.listen_host = "::";
  report = gossip_rdzv::cli::run_doctor(options, probe);
  EXPECT_EQ(report.exit_code(), 0) << dump(report);
  EXPECT_EQ(report.advertise, "fd77::2");
}

// ---- the command line ----------------------------------------------------------------------

TEST(DoctorCommandLineTest, DefaultsMatchJoin) {
  const auto parsed = gossip_rdzv::cli::parse_command_line({"doctor", "--seed", "node0"});
  ASSERT_TRUE(parsed.options) << parsed.text;
  const auto& options = *parsed.options;
  EXPECT_EQ(options.command, gossip_rdzv::cli::Command::doctor);
  EXPECT_EQ(options.config.seeds, std::vector<std::string>{"node0:29400"});
  EXPECT_EQ(options.config.listen_host, "0.0.0.0");
  EXPECT_EQ(options.config.listen_port, 29400);
  EXPECT_EQ(options.config.master_port, 0);
  EXPECT_EQ(options.format, gossip_rdzv::cli::OutputFormat::text);
  EXPECT_EQ(options.query_timeout, milliseconds(5000));
}

TEST(DoctorCommandLineTest, EveryOption) {
  const auto parsed = gossip_rdzv::cli::parse_command_line(
      {"doctor", "--seed", "[fd77::1]:29400,n1:29500", "--listen", "[::]:29401", "--master-port",
       "29600", "--run-id", "job42", "--format", "json", "--timeout", "2s"});
  ASSERT_TRUE(parsed.options) << parsed.text;
  const auto& options = *parsed.options;
  EXPECT_EQ(options.config.seeds, (std::vector<std::string>{"[fd77::1]:29400", "n1:29500"}));
  EXPECT_EQ(options.config.listen_host, "::");
  EXPECT_EQ(options.config.listen_port, 29401);
  EXPECT_EQ(options.config.master_port, 29600);
  EXPECT_EQ(options.config.run_id, "job42");
  EXPECT_EQ(options.format, gossip_rdzv::cli::OutputFormat::json);
  EXPECT_EQ(options.query_timeout, milliseconds(2000));
}

TEST(DoctorCommandLineTest, BadInputIsAUsageError) {
  const std::vector<std::vector<std::string>> inputs = {
      {"doctor"},
      {"doctor", "--seed", "n0", "--format", "table"},
      {"doctor", "--seed", "n0", "--timeout", "0"},
      {"doctor", "--seed", "fd77::1:29400"},
      {"doctor", "--seed", "n0", "--master-port", "70000"},
      {"doctor", "--seed", "n0", "--", "cmd"},
  };
  for (const auto& args : inputs) {
    const auto parsed = gossip_rdzv::cli::parse_command_line(args);
    EXPECT_FALSE(parsed.options) << args.back();
    EXPECT_EQ(parsed.exit_code, 2) << args.back();
    EXPECT_NE(parsed.text.find("gossip-rdzv doctor --help"), std::string::npos) << parsed.text;
  }
}

}  // namespace
