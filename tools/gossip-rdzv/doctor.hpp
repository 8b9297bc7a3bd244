// `gossip-rdzv doctor`: checks, before or during a job, what usually stops a rendezvous —
// a seed name that does not resolve, a seed that refuses or drops connections, a seed of
// another run or version, a busy local port, the interface that routes to the seed — and
// reports each as PASS / WARN / FAIL / SKIP with the fix.
//
// The checks ask the system through DoctorProbe, so tests can run them against loopback
// (SystemProbe, a thin adapter over src/transport/, which does the socket and name work) or
// against a scripted probe for the cases loopback cannot produce. This file keeps the checks'
// logic and the report.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gossip_rdzv/error.hpp"
#include "transport/name_resolution.hpp"
#include "transport/port_holder.hpp"
#include "transport/tcp_probe.hpp"

namespace gossip_rdzv::cli {

struct DoctorOptions {
  std::vector<std::string> seeds;       ///< "host:port" or "[v6]:port", as for join
  std::string listen_host = "0.0.0.0";  ///< the --listen join would use
  std::uint16_t listen_port = 29400;    ///< 0: the OS picks one, nothing to check
  std::uint16_t master_port = 0;        ///< --master-port; 0: not checked
  std::string run_id = "default";
  std::chrono::milliseconds timeout{5000};  ///< per TCP probe and per handshake
  /// The --key-file join would use ("" : none), already read by the caller: the report
  /// names it (the handshake is the probe's, SystemProbe(key_file)).
  std::string key_file;
  std::string key_id;         ///< its primary key id
  std::size_t key_count = 0;  ///< the keys it holds
};

enum class Verdict { pass, warn, fail, skip };

/// "PASS", "WARN", "FAIL", "SKIP".
const char* to_string(Verdict verdict);

struct DoctorItem {
  std::string check;    ///< "resolve", "reach", "handshake", "listen port", "master port",
                        ///< "route", "host name"
  std::string subject;  ///< the seed or port it is about
  Verdict verdict = Verdict::pass;
  std::string finding;             ///< what was found, one sentence
  std::string fix;                 ///< for WARN and FAIL: what to do; else empty
  ErrorCode code = ErrorCode::ok;  ///< for FAIL: the code join would exit with
};

struct DoctorReport {
  std::vector<DoctorItem> items;
  std::string advertise;           ///< the address join would advertise; "" if unknown
  std::string gloo_socket_ifname;  ///< the interface holding it; "" if unknown
  /// "<primary key id> (N keys) from PATH", or "none (messages in clear)"; and its parts
  /// for JSON (key_file "" : none).
  std::string key;
  std::string key_file;
  std::string key_id;
  std::size_t key_count = 0;
  /// 0 when nothing FAILs, else the code of the most fundamental failure:
  /// usage, seed_unresolved, seed_unreachable, listen_failed, run_id_mismatch,
  /// version_mismatch, then any other.
  int exit_code() const;
};

/// Everything the checks ask of the system.
class DoctorProbe {
 public:
  virtual ~DoctorProbe() = default;

  /// Every address of a name, numeric, in getaddrinfo order, or the resolver's error.
  using Resolution = transport::Resolution;
  virtual Resolution resolve(const std::string& host) = 0;

  virtual transport::ProbeResult connect(const std::string& ip, std::uint16_t port,
                                         std::chrono::milliseconds timeout) = 0;

  struct Handshake {
    ErrorCode code = ErrorCode::ok;  ///< ok, or the Error query_members threw
    std::string message;             ///< the Error's text when not ok
    std::size_t members = 0;
    std::size_t alive = 0;
  };
  /// Asks the node at `endpoint` ("ip:port") for its members, as `gossip-rdzv members` does.
  virtual Handshake handshake(const std::string& endpoint, const std::string& run_id,
                              std::chrono::milliseconds timeout) = 0;

  struct PortState {
    int error = 0;  ///< errno of a TCP bind of host:port, 0 when it is free
    std::optional<transport::PortHolder> holder;
  };
  virtual PortState bind_port(const std::string& ip, std::uint16_t port) = 0;

  struct Route {
    std::string source;  ///< the local address packets to the target leave from
    std::string ifname;  ///< the interface holding it, "" if unknown
  };
  virtual std::optional<Route> route_to(const std::string& ip) = 0;

  /// Whether `ip` can be bound here (an address of this machine, 127.0.1.1 included).
  virtual bool is_local_address(const std::string& ip) = 0;

  virtual std::string hostname() = 0;
};

/// The real thing: getaddrinfo, TCP connect, query_members, bind, UDP connect, /proc.
class SystemProbe : public DoctorProbe {
 public:
  /// The handshake is sealed with the keys of `key_file` ("" : none), as join's messages.
  explicit SystemProbe(std::string key_file = {}) : key_file_(std::move(key_file)) {}
  Resolution resolve(const std::string& host) override;
  transport::ProbeResult connect(const std::string& ip, std::uint16_t port,
                                 std::chrono::milliseconds timeout) override;
  Handshake handshake(const std::string& endpoint, const std::string& run_id,
                      std::chrono::milliseconds timeout) override;
  PortState bind_port(const std::string& ip, std::uint16_t port) override;
  std::optional<Route> route_to(const std::string& ip) override;
  bool is_local_address(const std::string& ip) override;
  std::string hostname() override;

 private:
  std::string key_file_;
};

/// Runs every check. Seeds must already be valid endpoints (the CLI parses them).
DoctorReport run_doctor(const DoctorOptions& options, DoctorProbe& probe);

/// One line per item ("PASS  reach  node0:29400: connected to ..."), fixes indented under
/// their item, then the advertise address, the key and the verdict.
std::string doctor_text(const DoctorReport& report);

/// {"ok", "exit_code", "exit_name", "advertise", "gloo_socket_ifname",
///  "key": null or {"file", "id", "keys"},
///  "checks": [{"check", "subject", "verdict", "exit_code", "finding", "fix"}, ...]}
std::string doctor_json(const DoctorReport& report);

}  // namespace gossip_rdzv::cli
