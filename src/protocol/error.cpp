#include "gossip_rdzv/error.hpp"

#include <array>

namespace gossip_rdzv {
namespace {

struct StatusName {
  int status;
  std::string_view name;
};

// The one table of status names (include/gossip_rdzv/error.hpp): C's
// gossip_rdzv_status_name() and the Python package read it through status_name(). The
// names are string literals, so C can hand out their data() as NUL-terminated strings.
constexpr std::array<StatusName, 21> kStatusNames = {{
    {static_cast<int>(ErrorCode::ok), "ok"},
    {static_cast<int>(ErrorCode::worker_failed), "worker_failed"},
    {static_cast<int>(ErrorCode::usage), "usage"},
    {static_cast<int>(ErrorCode::listen_failed), "listen_failed"},
    {static_cast<int>(ErrorCode::seed_unreachable), "seed_unreachable"},
    {static_cast<int>(ErrorCode::join_timeout), "join_timeout"},
    {static_cast<int>(ErrorCode::run_id_mismatch), "run_id_mismatch"},
    {static_cast<int>(ErrorCode::version_mismatch), "version_mismatch"},
    {static_cast<int>(ErrorCode::rank_conflict), "rank_conflict"},
    {static_cast<int>(ErrorCode::not_admitted), "not_admitted"},
    {static_cast<int>(ErrorCode::io_error), "io_error"},
    {static_cast<int>(ErrorCode::seed_unresolved), "seed_unresolved"},
    {static_cast<int>(ErrorCode::job_over), "job_over"},
    {static_cast<int>(ErrorCode::auth_failed), "auth_failed"},
    {static_cast<int>(ErrorCode::internal), "internal"},
    {store_status(StoreErrorCode::timeout), "store_timeout"},
    {store_status(StoreErrorCode::unavailable), "store_unavailable"},
    {store_status(StoreErrorCode::bad_request), "store_bad_request"},
    {store_status(StoreErrorCode::not_ready), "store_not_ready"},
    {store_status(StoreErrorCode::refused), "store_refused"},
    {store_status(StoreErrorCode::too_large), "store_too_large"},
    // StoreErrorCode::usage has ErrorCode::usage's status, named above.
}};

}  // namespace

std::string_view status_name(int status) {
  for (const StatusName& entry : kStatusNames) {
    if (entry.status == status) return entry.name;
  }
  // A number that names no status (e.g. a corrupted exit status).
  return "unknown";
}

std::string_view to_string(ErrorCode code) {
  return status_name(static_cast<int>(code));
}

}  // namespace gossip_rdzv
