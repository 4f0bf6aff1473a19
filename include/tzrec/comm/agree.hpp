// tzrec/comm/agree.hpp — every rank agrees on the first error of a step that any rank may fail,
// so no rank is left waiting in a collective for a rank that has already thrown.
//
//   ShardingPlan plan = AgreeOnFirstError(comm, [&] { return Plan(...); });
//   AgreeOnFirstError(comm, "checkpoint save (step 5)", [&] { WriteRankFiles(...); });
//
// AgreeOnFirstError runs `body` on this rank, catches ANY exception, then all-gathers a small
// status (ok, or rank / error class / exit code / message) from every rank. When no rank failed it
// returns body's result. Otherwise every rank — the failing ones included — throws the error of the
// LOWEST failing rank, rebuilt with the same class: InputError, ConfigError, PlannerError (kind,
// table and missing bytes kept), CommError, CheckpointError (exit code kept), InternalError, or a
// plain tzrec::Error with its exit code and label. A non-tzrec exception (std::invalid_argument,
// c10::Error, ...) becomes an InternalError naming the rank ("rank 1: <what>"). With a non-empty
// `context` the message becomes "<context> failed on rank <R>: <message>" (for every class).
//
// Collective: every rank of `comm` must call it in the same order (one AllGatherStrings: two
// all-gathers). At world size 1 it still rebuilds the error, so messages do not depend on the
// world size. Thread-safety: as Comm (one thread issues collectives).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tzrec/comm/comm.hpp"
#include "tzrec/error.hpp"

namespace tzrec {

// Every rank's `text`, by rank (two all-gathers: lengths, then the bytes padded to the longest).
// On device() under NCCL; at world size 1 returns {text}. Throws CommError as the collectives do.
std::vector<std::string> AllGatherStrings(Comm& comm, const std::string& text);

// The class of an agreed error (the wire value; append only).
enum class ErrorClass : int {
  kError = 1,       // tzrec::Error of no class below
  kInput = 2,       // InputError
  kConfig = 3,      // ConfigError
  kPlanner = 4,     // PlannerError
  kComm = 5,        // CommError
  kCheckpoint = 6,  // CheckpointError
  kInternal = 7,    // InternalError
  kForeign = 8,     // not a tzrec::Error (std::exception or anything else)
};

// What one rank reports after its body.
struct RankStatus {
  bool ok = true;
  int rank = 0;
  ErrorClass error_class = ErrorClass::kForeign;
  ExitCode code = ExitCode::kInternal;
  std::string label;    // tzrec::Error::label() of a kError (the others know theirs)
  std::string message;  // what()
  // PlannerError only.
  int planner_kind = 0;
  std::string planner_table;
  std::int64_t planner_missing_bytes = 0;
};

// The status of `error` (null: ok) caught on `rank`.
RankStatus StatusOf(const std::exception_ptr& error, int rank);
// The wire form: "OK", or "ERR" and length-prefixed fields (messages may hold any bytes).
std::string EncodeStatus(const RankStatus& status);
// Inverse of EncodeStatus. Throws CommError for text it did not write (ranks of other builds).
RankStatus DecodeStatus(const std::string& text);
// The lowest failing rank's status among every rank's encoded status (by rank), or nullopt.
std::optional<RankStatus> FirstFailure(const std::vector<std::string>& encoded);
// Throws the error `status` describes (see the top of this file); `context` as there.
[[noreturn]] void ThrowAgreed(const RankStatus& status, const std::string& context);

namespace agree_detail {
// All-gathers this rank's status and throws the first failure, if any.
void Agree(Comm& comm, const std::string& context, const std::exception_ptr& error);
}  // namespace agree_detail

template <class F>
auto AgreeOnFirstError(Comm& comm, const std::string& context, F&& body)
    -> std::invoke_result_t<F&> {
  using R = std::invoke_result_t<F&>;
  std::exception_ptr error;
  if constexpr (std::is_void_v<R>) {
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    agree_detail::Agree(comm, context, error);
  } else {
    std::optional<R> result;
    try {
      result.emplace(body());
    } catch (...) {
      error = std::current_exception();
    }
    agree_detail::Agree(comm, context, error);
    return std::move(*result);
  }
}

template <class F>
auto AgreeOnFirstError(Comm& comm, F&& body) -> std::invoke_result_t<F&> {
  return AgreeOnFirstError(comm, std::string(), std::forward<F>(body));
}

}  // namespace tzrec
