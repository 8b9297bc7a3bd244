// The C API (include/gossip_rdzv/gossip_rdzv.h) over the C++ one: handles own C++ objects,
// exceptions become status codes plus a per-thread message, and nothing throws across the
// C boundary.
#include "gossip_rdzv/gossip_rdzv.h"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gossip_rdzv/config.hpp"
#include "gossip_rdzv/env.hpp"
#include "gossip_rdzv/error.hpp"
#include "gossip_rdzv/node.hpp"
#include "gossip_rdzv/store.hpp"
#include "protocol/config_text.hpp"
#include "protocol/duration.hpp"
#include "protocol/endpoint.hpp"
#include "transport/keyring.hpp"

struct gossip_rdzv_config {
  gossip_rdzv::Config config;
};

struct gossip_rdzv_node {
  std::unique_ptr<gossip_rdzv::Node> node;
  std::string endpoint;
  bool elastic = false;                        ///< Config::elastic: the round calls apply
  std::atomic<bool> finished_reported{false};  ///< report_workers_finished or report_job_failed
};

struct gossip_rdzv_assignment {
  gossip_rdzv::Assignment assignment;
};

struct gossip_rdzv_store {
  std::unique_ptr<gossip_rdzv::Store> store;
};

namespace {

using gossip_rdzv::StoreError;
using std::chrono::milliseconds;

thread_local std::string last_error;

int fail(int status, std::string message) {
  last_error = std::move(message);
  return status;
}

int usage(const std::string& message) {
  return fail(GOSSIP_RDZV_E_USAGE, message);
}

// The C statuses are the C++ ones (include/gossip_rdzv/error.hpp), number for number.
using gossip_rdzv::ErrorCode;
using gossip_rdzv::store_status;
using gossip_rdzv::StoreErrorCode;
static_assert(GOSSIP_RDZV_E_USAGE == static_cast<int>(ErrorCode::usage));
static_assert(GOSSIP_RDZV_E_LISTEN_FAILED == static_cast<int>(ErrorCode::listen_failed));
static_assert(GOSSIP_RDZV_E_SEED_UNREACHABLE == static_cast<int>(ErrorCode::seed_unreachable));
static_assert(GOSSIP_RDZV_E_JOIN_TIMEOUT == static_cast<int>(ErrorCode::join_timeout));
static_assert(GOSSIP_RDZV_E_RUN_ID_MISMATCH == static_cast<int>(ErrorCode::run_id_mismatch));
static_assert(GOSSIP_RDZV_E_VERSION_MISMATCH == static_cast<int>(ErrorCode::version_mismatch));
static_assert(GOSSIP_RDZV_E_RANK_CONFLICT == static_cast<int>(ErrorCode::rank_conflict));
static_assert(GOSSIP_RDZV_E_NOT_ADMITTED == static_cast<int>(ErrorCode::not_admitted));
static_assert(GOSSIP_RDZV_E_IO == static_cast<int>(ErrorCode::io_error));
static_assert(GOSSIP_RDZV_E_SEED_UNRESOLVED == static_cast<int>(ErrorCode::seed_unresolved));
static_assert(GOSSIP_RDZV_E_JOB_OVER == static_cast<int>(ErrorCode::job_over));
static_assert(GOSSIP_RDZV_E_AUTH_FAILED == static_cast<int>(ErrorCode::auth_failed));
static_assert(GOSSIP_RDZV_E_INTERNAL == static_cast<int>(ErrorCode::internal));
static_assert(GOSSIP_RDZV_E_STORE_TIMEOUT == store_status(StoreErrorCode::timeout));
static_assert(GOSSIP_RDZV_E_STORE_UNAVAILABLE == store_status(StoreErrorCode::unavailable));
static_assert(GOSSIP_RDZV_E_STORE_BAD_REQUEST == store_status(StoreErrorCode::bad_request));
static_assert(GOSSIP_RDZV_E_STORE_NOT_READY == store_status(StoreErrorCode::not_ready));
static_assert(GOSSIP_RDZV_E_STORE_REFUSED == store_status(StoreErrorCode::refused));
static_assert(GOSSIP_RDZV_E_STORE_TOO_LARGE == store_status(StoreErrorCode::too_large));

// Runs `body`, turning every exception into a status and a message.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    body();
    return GOSSIP_RDZV_OK;
  } catch (const gossip_rdzv::Failure& failure) {
    return fail(failure.status(), failure.what());
  } catch (const std::bad_alloc&) {
    return fail(GOSSIP_RDZV_E_INTERNAL, "out of memory");
  } catch (const std::exception& error) {
    return fail(GOSSIP_RDZV_E_INTERNAL, std::string("internal error: ") + error.what());
  } catch (...) {
    return fail(GOSSIP_RDZV_E_INTERNAL, "internal error");
  }
}

template <class Number>
std::optional<Number> parse_number(std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Copies bytes into a malloc'd buffer the caller frees with gossip_rdzv_free (never NULL).
void* copy_out(const std::vector<std::uint8_t>& bytes, size_t* length) {
  void* buffer = std::malloc(bytes.empty() ? 1 : bytes.size());
  if (buffer == nullptr) throw std::bad_alloc();
  if (!bytes.empty()) std::memcpy(buffer, bytes.data(), bytes.size());
  *length = bytes.size();
  return buffer;
}

// Copies text into a malloc'd C string the caller frees with gossip_rdzv_free.
char* copy_text(const std::string& text) {
  char* buffer = static_cast<char*>(std::malloc(text.size() + 1));
  if (buffer == nullptr) throw std::bad_alloc();
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return buffer;
}

std::vector<std::string> key_list(const char* const* keys, size_t count) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    if (keys[i] == nullptr) throw StoreError(gossip_rdzv::StoreErrorCode::usage, "a key is NULL");
    out.emplace_back(keys[i]);
  }
  return out;
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string bad_value(const std::string& name, const std::string& value, const std::string& how) {
  return "config " + name + "='" + value + "' is invalid: " + how;
}

// Parsed as the command line parses them (protocol/config_text.hpp); their ranges are
// gossip_rdzv::validate()'s, which gossip_rdzv_node_new applies through Node.
int set_nnodes(gossip_rdzv::Config& config, const std::string& value) {
  const auto counts = gossip_rdzv::protocol::parse_nnodes(value);
  if (!counts) return usage(bad_value("nnodes", value, "use N or MIN:MAX, e.g. 4 or 2:8"));
  config.min_nodes = counts->min_nodes;
  config.max_nodes = counts->max_nodes;
  return GOSSIP_RDZV_OK;
}

int set_duration(milliseconds& field, const std::string& name, const std::string& value) {
  std::string why;
  const auto parsed = gossip_rdzv::protocol::parse_duration(value, &why);
  if (!parsed) return usage(bad_value(name, value, why));
  field = *parsed;
  return GOSSIP_RDZV_OK;
}

int set_listen(gossip_rdzv::Config& config, const std::string& value) {
  std::string why;
  const auto parsed =
      gossip_rdzv::protocol::parse_endpoint(value, &why, gossip_rdzv::protocol::listen_rules());
  if (!parsed) return usage(bad_value("listen", value, why));
  config.listen_host = parsed->host;
  config.listen_port = parsed->port;
  return GOSSIP_RDZV_OK;
}

std::optional<bool> parse_flag(std::string_view text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return std::nullopt;
}

// The round calls' common checks: a node handle, and a job that has rounds.
int check_elastic(const gossip_rdzv_node* node, const char* call) {
  if (node == nullptr) return usage(std::string(call) + ": NULL argument");
  if (!node->elastic) {
    return usage(std::string(call) +
                 ": this node's job is not elastic, so it agrees once and has no rounds: set "
                 "config 'elastic' to 1 before gossip_rdzv_node_new");
  }
  return GOSSIP_RDZV_OK;
}

int set_field(gossip_rdzv::Config& config, const std::string& name, const std::string& value) {
  if (name == "run_id") {
    config.run_id = value;
  } else if (name == "seeds") {
    config.seeds = split_commas(value);
  } else if (name == "listen") {
    return set_listen(config, value);
  } else if (name == "advertise") {
    config.advertise_host = value;
  } else if (name == "nnodes") {
    return set_nnodes(config, value);
  } else if (name == "nproc_per_node") {
    const auto n = parse_number<std::uint32_t>(value);
    if (!n) return usage(bad_value(name, value, "use a positive number"));
    config.nproc_per_node = *n;
  } else if (name == "node_rank") {
    const auto n = parse_number<std::int32_t>(value);
    if (!n) return usage(bad_value(name, value, "use a number, or -1 for none"));
    config.node_rank = *n;
  } else if (name == "master_port") {
    const auto n = parse_number<std::uint16_t>(value);
    if (!n) return usage(bad_value(name, value, "use a port 0-65535"));
    config.master_port = *n;
  } else if (name == "join_timeout") {
    return set_duration(config.join_timeout, name, value);
  } else if (name == "last_call") {
    return set_duration(config.last_call, name, value);
  } else if (name == "timing") {
    const auto timing = gossip_rdzv::Timing::profile(value);
    if (!timing) return usage(bad_value(name, value, "use lan, local or wan"));
    config.timing = *timing;
  } else if (name == "hostname") {
    config.hostname = value;
  } else if (name == "elastic") {
    const auto flag = parse_flag(value);
    if (!flag) return usage(bad_value(name, value, "use 1 or 0 (true or false)"));
    config.elastic = *flag;
  } else if (name == "key_file") {
    // Read now, so that a wrong path fails here, naming the field, not at start.
    if (!value.empty()) (void)gossip_rdzv::transport::Keyring::load_file(value);
    config.key_file = value;
  } else {
    return usage("unknown config field '" + name +
                 "': use run_id, seeds, listen, advertise, nnodes, nproc_per_node, node_rank, "
                 "master_port, join_timeout, last_call, timing, hostname, elastic or key_file");
  }
  return GOSSIP_RDZV_OK;
}

const gossip_rdzv::NodeEntry* node_at(const gossip_rdzv_assignment* a, uint32_t node_rank) {
  if (a == nullptr || node_rank >= a->assignment.nodes.size()) return nullptr;
  return &a->assignment.nodes[node_rank];
}

milliseconds timeout_or_default(gossip_rdzv::Store& store, int64_t timeout_ms) {
  return timeout_ms < 0 ? store.timeout() : milliseconds(timeout_ms);
}

}  // namespace

extern "C" {

const char* gossip_rdzv_last_error(void) {
  return last_error.c_str();
}

const char* gossip_rdzv_status_name(int status) {
  // The table's names are string literals: NUL-terminated and never freed.
  return gossip_rdzv::status_name(status).data();
}

void gossip_rdzv_free(void* buffer) {
  std::free(buffer);
}

gossip_rdzv_config* gossip_rdzv_config_new(void) {
  return new (std::nothrow) gossip_rdzv_config();
}

void gossip_rdzv_config_free(gossip_rdzv_config* config) {
  delete config;
}

int gossip_rdzv_config_set(gossip_rdzv_config* config, const char* name, const char* value) {
  if (config == nullptr || name == nullptr || value == nullptr) {
    return usage("gossip_rdzv_config_set: config, name and value must not be NULL");
  }
  int status = GOSSIP_RDZV_OK;
  const int guard = guarded([&] { status = set_field(config->config, name, value); });
  return guard != GOSSIP_RDZV_OK ? guard : status;
}

int gossip_rdzv_node_new(const gossip_rdzv_config* config, gossip_rdzv_node** out) {
  if (config == nullptr || out == nullptr) return usage("gossip_rdzv_node_new: NULL argument");
  *out = nullptr;
  return guarded([&] {
    auto handle = std::make_unique<gossip_rdzv_node>();
    handle->node = std::make_unique<gossip_rdzv::Node>(config->config);
    handle->elastic = config->config.elastic;
    *out = handle.release();
  });
}

int gossip_rdzv_node_start(gossip_rdzv_node* node) {
  if (node == nullptr) return usage("gossip_rdzv_node_start: node is NULL");
  return guarded([&] {
    node->node->start();
    node->endpoint = node->node->endpoint();
  });
}

int gossip_rdzv_node_wait(gossip_rdzv_node* node, gossip_rdzv_assignment** out) {
  if (node == nullptr || out == nullptr) return usage("gossip_rdzv_node_wait: NULL argument");
  *out = nullptr;
  return guarded([&] {
    auto handle = std::make_unique<gossip_rdzv_assignment>();
    handle->assignment = node->node->wait();
    *out = handle.release();
  });
}

const char* gossip_rdzv_node_endpoint(gossip_rdzv_node* node) {
  return node == nullptr ? "" : node->endpoint.c_str();
}

int gossip_rdzv_node_listed_as_seed(gossip_rdzv_node* node) {
  return node != nullptr && node->node->listed_as_seed() ? 1 : 0;
}

void gossip_rdzv_node_finish(gossip_rdzv_node* node) {
  if (node != nullptr) guarded([&] { node->node->finish(); });
}

int gossip_rdzv_node_round_over(gossip_rdzv_node* node, const gossip_rdzv_assignment* current,
                                int* over) {
  if (over != nullptr) *over = 0;
  if (current == nullptr || over == nullptr) {
    return usage("gossip_rdzv_node_round_over: NULL argument");
  }
  if (const int status = check_elastic(node, "gossip_rdzv_node_round_over")) return status;
  return guarded([&] { *over = node->node->round_over(current->assignment) ? 1 : 0; });
}

int gossip_rdzv_node_failure_explained(gossip_rdzv_node* node,
                                       const gossip_rdzv_assignment* current, int* explained) {
  constexpr const char* call = "gossip_rdzv_node_failure_explained";
  if (explained != nullptr) *explained = 0;
  if (current == nullptr || explained == nullptr)
    return usage(std::string(call) + ": NULL argument");
  if (const int status = check_elastic(node, call)) return status;
  return guarded([&] {
    *explained = node->node->failure_explained_by_departure(current->assignment) ? 1 : 0;
  });
}

int gossip_rdzv_node_round_change(gossip_rdzv_node* node, char** out) {
  if (out == nullptr) return usage("gossip_rdzv_node_round_change: NULL argument");
  *out = nullptr;
  if (const int status = check_elastic(node, "gossip_rdzv_node_round_change")) return status;
  return guarded([&] {
    if (const auto change = node->node->round_change()) *out = copy_text(*change);
  });
}

int gossip_rdzv_node_wait_next(gossip_rdzv_node* node, const gossip_rdzv_assignment* previous,
                               gossip_rdzv_assignment** out) {
  if (out != nullptr) *out = nullptr;
  if (previous == nullptr || out == nullptr) {
    return usage("gossip_rdzv_node_wait_next: NULL argument");
  }
  if (const int status = check_elastic(node, "gossip_rdzv_node_wait_next")) return status;
  return guarded([&] {
    auto handle = std::make_unique<gossip_rdzv_assignment>();
    handle->assignment = node->node->wait_next(previous->assignment);
    *out = handle.release();
  });
}

int gossip_rdzv_node_report_workers_failed(gossip_rdzv_node* node) {
  constexpr const char* call = "gossip_rdzv_node_report_workers_failed";
  if (const int status = check_elastic(node, call)) return status;
  if (node->finished_reported) {
    return usage(std::string(call) +
                 ": this node already reported its workers finished and left the job");
  }
  bool accepted = false;
  const int status = guarded([&] { accepted = node->node->report_workers_failed(); });
  if (status != GOSSIP_RDZV_OK || accepted) return status;
  return usage(std::string(call) +
               ": this node's current round has not committed yet: call gossip_rdzv_node_wait "
               "(or gossip_rdzv_node_wait_next after a round change) first");
}

int gossip_rdzv_node_report_workers_finished(gossip_rdzv_node* node) {
  constexpr const char* call = "gossip_rdzv_node_report_workers_finished";
  if (const int status = check_elastic(node, call)) return status;
  if (node->endpoint.empty())
    return usage(std::string(call) + ": call gossip_rdzv_node_start first");
  return guarded([&] {
    node->node->report_workers_finished();
    node->finished_reported = true;
  });
}

int gossip_rdzv_node_report_job_failed(gossip_rdzv_node* node, uint32_t rank, int status) {
  constexpr const char* call = "gossip_rdzv_node_report_job_failed";
  if (const int checked = check_elastic(node, call)) return checked;
  if (node->endpoint.empty())
    return usage(std::string(call) + ": call gossip_rdzv_node_start first");
  if (node->finished_reported) {
    return usage(std::string(call) +
                 ": this node already reported its workers finished and left the job");
  }
  return guarded([&] {
    node->node->report_job_failed(rank, status);
    node->finished_reported = true;
  });
}

int gossip_rdzv_node_job_failure(gossip_rdzv_node* node, int* failed, uint32_t* rank, int* status,
                                 char** message) {
  constexpr const char* call = "gossip_rdzv_node_job_failure";
  if (failed == nullptr || rank == nullptr || status == nullptr || message == nullptr)
    return usage(std::string(call) + ": NULL argument");
  *failed = 0, *rank = 0, *status = 0, *message = nullptr;
  if (const int checked = check_elastic(node, call)) return checked;
  return guarded([&] {
    if (const auto failure = node->node->job_failure()) {
      *failed = 1, *rank = failure->rank, *status = failure->status;
      *message = copy_text(failure->message);
    }
  });
}

int gossip_rdzv_node_wait_job_finished(gossip_rdzv_node* node, int64_t timeout_ms, int* finished) {
  constexpr const char* call = "gossip_rdzv_node_wait_job_finished";
  if (finished == nullptr) return usage(std::string(call) + ": NULL argument");
  *finished = 0;
  if (const int status = check_elastic(node, call)) return status;
  if (!node->finished_reported) {
    return usage(std::string(call) +
                 ": call gossip_rdzv_node_report_workers_finished or "
                 "gossip_rdzv_node_report_job_failed first (the job cannot finish while this "
                 "node's workers run)");
  }
  if (timeout_ms < 0) return usage(std::string(call) + ": the timeout is negative");
  return guarded(
      [&] { *finished = node->node->wait_job_finished(milliseconds(timeout_ms)) ? 1 : 0; });
}

void gossip_rdzv_node_stop(gossip_rdzv_node* node) {
  if (node != nullptr) guarded([&] { node->node->stop(); });
}

void gossip_rdzv_node_free(gossip_rdzv_node* node) {
  if (node == nullptr) return;
  gossip_rdzv_node_stop(node);
  delete node;
}

const char* gossip_rdzv_assignment_run_id(const gossip_rdzv_assignment* a) {
  return a == nullptr ? "" : a->assignment.run_id.c_str();
}
uint32_t gossip_rdzv_assignment_round(const gossip_rdzv_assignment* a) {
  return a == nullptr ? 0 : a->assignment.round;
}
uint32_t gossip_rdzv_assignment_world_size(const gossip_rdzv_assignment* a) {
  return a == nullptr ? 0 : a->assignment.world_size;
}
const char* gossip_rdzv_assignment_master_addr(const gossip_rdzv_assignment* a) {
  return a == nullptr ? "" : a->assignment.master_addr.c_str();
}
uint16_t gossip_rdzv_assignment_master_port(const gossip_rdzv_assignment* a) {
  return a == nullptr ? 0 : a->assignment.master_port;
}
uint32_t gossip_rdzv_assignment_nnodes(const gossip_rdzv_assignment* a) {
  return a == nullptr ? 0 : a->assignment.nnodes();
}
uint32_t gossip_rdzv_assignment_my_node_rank(const gossip_rdzv_assignment* a) {
  return a == nullptr ? 0 : a->assignment.my_node_rank;
}
uint32_t gossip_rdzv_assignment_node_rank_offset(const gossip_rdzv_assignment* a,
                                                 uint32_t node_rank) {
  const auto* node = node_at(a, node_rank);
  return node == nullptr ? 0 : node->rank_offset;
}
uint32_t gossip_rdzv_assignment_node_nproc(const gossip_rdzv_assignment* a, uint32_t node_rank) {
  const auto* node = node_at(a, node_rank);
  return node == nullptr ? 0 : node->nproc;
}
const char* gossip_rdzv_assignment_node_host(const gossip_rdzv_assignment* a, uint32_t node_rank) {
  const auto* node = node_at(a, node_rank);
  return node == nullptr ? "" : node->host.c_str();
}
const char* gossip_rdzv_assignment_node_endpoint(const gossip_rdzv_assignment* a,
                                                 uint32_t node_rank) {
  const auto* node = node_at(a, node_rank);
  return node == nullptr ? "" : node->endpoint.c_str();
}
const char* gossip_rdzv_assignment_node_hostname(const gossip_rdzv_assignment* a,
                                                 uint32_t node_rank) {
  const auto* node = node_at(a, node_rank);
  return node == nullptr ? "" : node->hostname.c_str();
}

int gossip_rdzv_assignment_env(const gossip_rdzv_assignment* a, uint32_t local_rank, char** out) {
  if (a == nullptr || out == nullptr) return usage("gossip_rdzv_assignment_env: NULL argument");
  *out = nullptr;
  return guarded([&] {
    *out = copy_text(gossip_rdzv::format_env(gossip_rdzv::torch_env(a->assignment, local_rank),
                                             gossip_rdzv::EnvFormat::env));
  });
}

void gossip_rdzv_assignment_free(gossip_rdzv_assignment* a) {
  delete a;
}

int gossip_rdzv_store_new(const char* agent, const char* run_id, int64_t timeout_ms,
                          gossip_rdzv_store** out) {
  if (agent == nullptr || out == nullptr) return usage("gossip_rdzv_store_new: NULL argument");
  *out = nullptr;
  return guarded([&] {
    gossip_rdzv::StoreOptions options;
    options.agent = agent;
    options.run_id = run_id == nullptr ? "" : run_id;
    if (timeout_ms >= 0) options.timeout = milliseconds(timeout_ms);
    auto handle = std::make_unique<gossip_rdzv_store>();
    handle->store = std::make_unique<gossip_rdzv::Store>(std::move(options));
    *out = handle.release();
  });
}

int gossip_rdzv_store_from_env(gossip_rdzv_store** out) {
  if (out == nullptr) return usage("gossip_rdzv_store_from_env: out is NULL");
  *out = nullptr;
  return guarded([&] {
    auto handle = std::make_unique<gossip_rdzv_store>();
    handle->store = std::make_unique<gossip_rdzv::Store>(gossip_rdzv::Store::from_env());
    *out = handle.release();
  });
}

int gossip_rdzv_store_from_node(gossip_rdzv_node* node, int64_t timeout_ms,
                                gossip_rdzv_store** out) {
  if (node == nullptr || out == nullptr) {
    return usage("gossip_rdzv_store_from_node: NULL argument");
  }
  *out = nullptr;
  return guarded([&] {
    auto handle = std::make_unique<gossip_rdzv_store>();
    const milliseconds timeout = timeout_ms < 0 ? milliseconds(300000) : milliseconds(timeout_ms);
    handle->store = std::make_unique<gossip_rdzv::Store>(*node->node, timeout);
    *out = handle.release();
  });
}

void gossip_rdzv_store_free(gossip_rdzv_store* store) {
  delete store;
}

#define GR_CHECK_STORE(store, key)                                            \
  if ((store) == nullptr || (key) == nullptr) {                               \
    return usage(std::string(__func__) + ": store and key must not be NULL"); \
  }

int gossip_rdzv_store_set(gossip_rdzv_store* store, const char* key, const void* value,
                          size_t length) {
  GR_CHECK_STORE(store, key);
  if (value == nullptr && length != 0) return usage("gossip_rdzv_store_set: value is NULL");
  return guarded([&] {
    const auto* bytes = static_cast<const std::uint8_t*>(value);
    store->store->set(key, gossip_rdzv::Store::Bytes(bytes, bytes + length));
  });
}

int gossip_rdzv_store_get(gossip_rdzv_store* store, const char* key, int64_t timeout_ms,
                          void** value, size_t* length) {
  GR_CHECK_STORE(store, key);
  if (value == nullptr || length == nullptr) return usage("gossip_rdzv_store_get: NULL output");
  *value = nullptr;
  *length = 0;
  return guarded([&] {
    const auto bytes = store->store->get(key, timeout_or_default(*store->store, timeout_ms));
    *value = copy_out(bytes, length);
  });
}

int gossip_rdzv_store_add(gossip_rdzv_store* store, const char* key, int64_t amount,
                          int64_t* result) {
  GR_CHECK_STORE(store, key);
  return guarded([&] {
    const std::int64_t value = store->store->add(key, amount);
    if (result != nullptr) *result = value;
  });
}

int gossip_rdzv_store_check(gossip_rdzv_store* store, const char* const* keys, size_t count,
                            int* all_set) {
  if (store == nullptr || (keys == nullptr && count != 0) || all_set == nullptr) {
    return usage("gossip_rdzv_store_check: NULL argument");
  }
  return guarded([&] { *all_set = store->store->check(key_list(keys, count)) ? 1 : 0; });
}

int gossip_rdzv_store_wait(gossip_rdzv_store* store, const char* const* keys, size_t count,
                           int64_t timeout_ms) {
  if (store == nullptr || (keys == nullptr && count != 0)) {
    return usage("gossip_rdzv_store_wait: NULL argument");
  }
  return guarded([&] {
    store->store->wait(key_list(keys, count), timeout_or_default(*store->store, timeout_ms));
  });
}

int gossip_rdzv_store_compare_set(gossip_rdzv_store* store, const char* key, const void* expected,
                                  size_t expected_length, const void* desired,
                                  size_t desired_length, void** current, size_t* current_length) {
  GR_CHECK_STORE(store, key);
  if ((expected == nullptr && expected_length != 0) ||
      (desired == nullptr && desired_length != 0) || current == nullptr ||
      current_length == nullptr) {
    return usage("gossip_rdzv_store_compare_set: NULL argument");
  }
  *current = nullptr;
  *current_length = 0;
  return guarded([&] {
    const auto* e = static_cast<const std::uint8_t*>(expected);
    const auto* d = static_cast<const std::uint8_t*>(desired);
    const auto now =
        store->store->compare_set(key, gossip_rdzv::Store::Bytes(e, e + expected_length),
                                  gossip_rdzv::Store::Bytes(d, d + desired_length));
    *current = copy_out(now, current_length);
  });
}

int gossip_rdzv_store_delete_key(gossip_rdzv_store* store, const char* key, int* deleted) {
  GR_CHECK_STORE(store, key);
  return guarded([&] {
    const bool existed = store->store->delete_key(key);
    if (deleted != nullptr) *deleted = existed ? 1 : 0;
  });
}

int gossip_rdzv_store_num_keys(gossip_rdzv_store* store, int64_t* count) {
  if (store == nullptr || count == nullptr)
    return usage("gossip_rdzv_store_num_keys: NULL argument");
  return guarded([&] { *count = store->store->num_keys(); });
}

int gossip_rdzv_store_member_stats(gossip_rdzv_store* store, char** text) {
  if (store == nullptr || text == nullptr) {
    return usage("gossip_rdzv_store_member_stats: NULL argument");
  }
  *text = nullptr;
  return guarded([&] {
    std::string lines;
    for (const auto& member : store->store->member_stats()) {
      lines += member.member + " " + std::to_string(member.home_requests) + " " +
               std::to_string(member.client_requests) + " " + std::to_string(member.forwarded) +
               " " + std::to_string(member.keys) + "\n";
    }
    *text = copy_text(lines);
  });
}

int gossip_rdzv_store_set_timeout(gossip_rdzv_store* store, int64_t timeout_ms) {
  if (store == nullptr || timeout_ms < 0) {
    return usage("gossip_rdzv_store_set_timeout: store is NULL or the timeout negative");
  }
  return guarded([&] { store->store->set_timeout(milliseconds(timeout_ms)); });
}

int gossip_rdzv_store_set_key_file(gossip_rdzv_store* store, const char* path) {
  if (store == nullptr || path == nullptr) {
    return usage("gossip_rdzv_store_set_key_file: store and path must not be NULL");
  }
  return guarded([&] { store->store->set_key_file(path); });
}

}  // extern "C"
