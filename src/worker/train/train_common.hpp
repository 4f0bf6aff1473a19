// Internal helpers shared by the tzrec_train commands.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>

#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>

#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/error.hpp"
#include "tzrec/planner/planner.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"
#include "tzrec/train/model.hpp"

namespace tzrec {

// Bad input data (a missing input file, a value a feature cannot take) is tzrec::InputError
// (include/tzrec/error.hpp): exit code 2, like a bad config. GuardInput turns the input library's
// std::runtime_error into it.

// Runs f (a Dataset constructor or Dataset::Next) and rethrows its std::runtime_error as
// InputError.
template <typename F>
auto GuardInput(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
}

// Runs a command body and maps our exception types to exit codes with a one-line message:
// 2 bad input (config, flags, data), 3 no feasible sharding plan, 4 collective/checkpoint failure.
inline int RunGuarded(const char* command, const std::function<int()>& body) {
  const char* rank = std::getenv("RANK");
  const std::string who =
      std::string("tzrec_train ") + command + (rank != nullptr ? std::string(" rank ") + rank : "");
  try {
    return body();
  } catch (const PlannerError& e) {
    std::cerr << who << ": no feasible sharding plan: " << e.what() << std::endl;
    return 3;
  } catch (const CommError& e) {
    std::cerr << who << ": collective failed: " << e.what() << std::endl;
    return 4;
  } catch (const CheckpointError& e) {
    std::cerr << who << ": checkpoint: " << e.what() << std::endl;
    return 4;
  } catch (const InputError& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    return 2;
  } catch (const ConfigError& e) {
    std::cerr << who << ": config: " << e.what() << std::endl;
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    return 2;
  } catch (const std::out_of_range& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    return 2;
  } catch (const c10::Error& e) {
    // A libtorch error: its message without the C++ backtrace.
    std::cerr << who << ": internal error in libtorch: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    return 1;
  }
}

// This rank's embedding shards and dense parameters as a checkpoint TrainState (views, not copies:
// Restore writes into them). Optimizer states: the shards' StateTensors (momentum views; "step"
// copies that the caller loads back with LoadStateTensors).
TrainState ModelState(ShardedEmbeddingBagCollection& ebc,
                      const std::vector<EmbeddingBagConfig>& tables, const DenseModel& dense);
// Loads the optimizer states of `state` (as filled by Restore) back into the shards.
void LoadShardOptimizerStates(ShardedEmbeddingBagCollection& ebc, const TrainState& state);

// torch.autocast(device_type, dtype) for the scope's lifetime.
class AutocastScope {
 public:
  AutocastScope(const at::Device& device, at::ScalarType dtype) : type_(device.type()) {
    prev_enabled_ = at::autocast::is_autocast_enabled(type_);
    prev_dtype_ = at::autocast::get_autocast_dtype(type_);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, prev_enabled_);
    at::autocast::set_autocast_dtype(type_, prev_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  at::DeviceType type_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kFloat;
};

}  // namespace tzrec
