// Internal: one agreed step of Save or Restore. Every rank runs `body`; the first failure of any
// rank is thrown on every rank as "<context> failed on rank R: <message>" (AgreeOnFirstError,
// include/tzrec/comm/agree.hpp). Exceptions that are not a tzrec::Error (std::filesystem_error,
// nlohmann::json errors from a corrupt metadata.json, c10::Error) count as checkpoint failures:
// they become a CheckpointError with their message, as the checkpoint's own errors are.
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/agree.hpp"

namespace tzrec::checkpoint_detail {

template <class F>
auto Phase(Comm& comm, const std::string& context, F&& body) -> std::invoke_result_t<F&> {
  return AgreeOnFirstError(comm, context, [&]() -> std::invoke_result_t<F&> {
    try {
      return body();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw CheckpointError(e.what());
    }
  });
}

}  // namespace tzrec::checkpoint_detail
