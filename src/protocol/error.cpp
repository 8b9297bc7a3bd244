#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok:
      return "ok";
    case ErrorCode::worker_failed:
      return "worker_failed";
    case ErrorCode::usage:
      return "usage";
    case ErrorCode::listen_failed:
      return "listen_failed";
    case ErrorCode::seed_unreachable:
      return "seed_unreachable";
    case ErrorCode::join_timeout:
      return "join_timeout";
    case ErrorCode::run_id_mismatch:
      return "run_id_mismatch";
    case ErrorCode::version_mismatch:
      return "version_mismatch";
    case ErrorCode::rank_conflict:
      return "rank_conflict";
    case ErrorCode::not_admitted:
      return "not_admitted";
    case ErrorCode::io_error:
      return "io_error";
    case ErrorCode::seed_unresolved:
      return "seed_unresolved";
    case ErrorCode::internal:
      return "internal";
  }
  // A value cast from an int that names no code (e.g. a corrupted exit status).
  return "unknown";
}

}  // namespace gossip_rdzv
