// The one table of status names (include/gossip_rdzv/error.hpp): every code of the C++ API
// and every status of the C API has its stable name there, and both exception types share
// the documented base Failure.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gossip_rdzv/error.hpp"
#include "gossip_rdzv/gossip_rdzv.h"
#include "gossip_rdzv/store.hpp"

namespace gossip_rdzv {
namespace {

// Every status with the name scripts, logs and docs/troubleshooting.md rely on.
const std::vector<std::pair<int, std::string>> kExpected = {
    {GOSSIP_RDZV_OK, "ok"},
    {1, "worker_failed"},
    {GOSSIP_RDZV_E_USAGE, "usage"},
    {GOSSIP_RDZV_E_LISTEN_FAILED, "listen_failed"},
    {GOSSIP_RDZV_E_SEED_UNREACHABLE, "seed_unreachable"},
    {GOSSIP_RDZV_E_JOIN_TIMEOUT, "join_timeout"},
    {GOSSIP_RDZV_E_RUN_ID_MISMATCH, "run_id_mismatch"},
    {GOSSIP_RDZV_E_VERSION_MISMATCH, "version_mismatch"},
    {GOSSIP_RDZV_E_RANK_CONFLICT, "rank_conflict"},
    {GOSSIP_RDZV_E_NOT_ADMITTED, "not_admitted"},
    {GOSSIP_RDZV_E_IO, "io_error"},
    {GOSSIP_RDZV_E_SEED_UNRESOLVED, "seed_unresolved"},
    {GOSSIP_RDZV_E_JOB_OVER, "job_over"},
    {GOSSIP_RDZV_E_AUTH_FAILED, "auth_failed"},
    {GOSSIP_RDZV_E_INTERNAL, "internal"},
    {GOSSIP_RDZV_E_STORE_TIMEOUT, "store_timeout"},
    {GOSSIP_RDZV_E_STORE_UNAVAILABLE, "store_unavailable"},
    {GOSSIP_RDZV_E_STORE_BAD_REQUEST, "store_bad_request"},
    {GOSSIP_RDZV_E_STORE_NOT_READY, "store_not_ready"},
    {GOSSIP_RDZV_E_STORE_REFUSED, "store_refused"},
    {GOSSIP_RDZV_E_STORE_TOO_LARGE, "store_too_large"},
};

TEST(Status, EveryStatusHasItsName) {
  std::set<std::string> names;
  for (const auto& [status, name] : kExpected) {
    EXPECT_EQ(status_name(status), name) << status;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kExpected.size()) << "two statuses share a name";
}

TEST(Status, NumbersThatNameNoStatusAreUnknown) {
  for (int status : {-1, 14, 69, 71, 100, 107, 255}) EXPECT_EQ(status_name(status), "unknown");
}

TEST(Status, ErrorCodesAreTheirStatuses) {
  const std::vector<std::pair<ErrorCode, std::string>> codes = {
      {ErrorCode::ok, "ok"},
      {ErrorCode::worker_failed, "worker_failed"},
      {ErrorCode::usage, "usage"},
      {ErrorCode::listen_failed, "listen_failed"},
      {ErrorCode::seed_unreachable, "seed_unreachable"},
      {ErrorCode::join_timeout, "join_timeout"},
      {ErrorCode::run_id_mismatch, "run_id_mismatch"},
      {ErrorCode::version_mismatch, "version_mismatch"},
      {ErrorCode::rank_conflict, "rank_conflict"},
      {ErrorCode::not_admitted, "not_admitted"},
      {ErrorCode::io_error, "io_error"},
      {ErrorCode::seed_unresolved, "seed_unresolved"},
      {ErrorCode::job_over, "job_over"},
      {ErrorCode::auth_failed, "auth_failed"},
      {ErrorCode::internal, "internal"},
  };
  for (const auto& [code, name] : codes) {
    EXPECT_EQ(to_string(code), name);
    const Error error(code, "message");
    EXPECT_EQ(error.code(), code);
    EXPECT_EQ(error.status(), static_cast<int>(code));
    EXPECT_EQ(error.status_name(), name);
  }
  EXPECT_EQ(to_string(static_cast<ErrorCode>(42)), "unknown");
}

TEST(Status, StoreCodesMapToTheCStatuses) {
  const std::vector<std::pair<StoreErrorCode, int>> codes = {
      {StoreErrorCode::timeout, GOSSIP_RDZV_E_STORE_TIMEOUT},
      {StoreErrorCode::unavailable, GOSSIP_RDZV_E_STORE_UNAVAILABLE},
      {StoreErrorCode::bad_request, GOSSIP_RDZV_E_STORE_BAD_REQUEST},
      {StoreErrorCode::not_ready, GOSSIP_RDZV_E_STORE_NOT_READY},
      {StoreErrorCode::refused, GOSSIP_RDZV_E_STORE_REFUSED},
      {StoreErrorCode::too_large, GOSSIP_RDZV_E_STORE_TOO_LARGE},
      {StoreErrorCode::usage, GOSSIP_RDZV_E_USAGE},
  };
  for (const auto& [code, status] : codes) {
    EXPECT_EQ(store_status(code), status);
    const StoreError error(code, "message", "key", "home");
    EXPECT_EQ(error.code(), code);
    EXPECT_EQ(error.status(), status);
    EXPECT_NE(error.status_name(), "unknown");
  }
}

TEST(Status, BothExceptionsAreFailures) {
  try {
    throw StoreError(StoreErrorCode::timeout, "get('k') timed out", "k", "n1:1");
  } catch (const Failure& failure) {
    EXPECT_EQ(failure.status_name(), "store_timeout");
    EXPECT_STREQ(failure.what(), "get('k') timed out");
  }
  try {
    throw Error(ErrorCode::join_timeout, "no agreement");
  } catch (const Failure& failure) {
    EXPECT_EQ(failure.status(), GOSSIP_RDZV_E_JOIN_TIMEOUT);
  }
  // Existing catch sites keep working: each type is still caught by its own name and as a
  // std::runtime_error.
  EXPECT_THROW(throw Error(ErrorCode::usage, "x"), Error);
  EXPECT_THROW(throw StoreError(StoreErrorCode::usage, "x"), StoreError);
  EXPECT_THROW(throw StoreError(StoreErrorCode::usage, "x"), std::runtime_error);
}

}  // namespace
}  // namespace gossip_rdzv
