// Internal helpers shared by the tzrec_train commands.
#pragma once

#include <ATen/autocast_mode.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparse_arch.hpp"
#include "tzrec/checkpoint/checkpoint.hpp"
#include "tzrec/comm/comm.hpp"
#include "tzrec/config/config.hpp"
#include "tzrec/error.hpp"
#include "tzrec/planner/planner.hpp"
#include "tzrec/sharding/collective_plan.hpp"
#include "tzrec/sharding/sharded_ebc.hpp"
#include "tzrec/train/model.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

// Runs f (a Dataset constructor or Dataset::Next) and rethrows the input library's errors as
// InputError (tzrec/error.hpp: exit 2): std::runtime_error for bad files and rows,
// std::invalid_argument for a damaged data cursor (src/worker/input/cursor.cpp). Typed errors pass
// unchanged.
template <typename F>
auto GuardInput(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

// This rank's embedding shards, dense parameters and then dense buffers (BN running stats; one
// "dense" list, names unique) as a checkpoint TrainState (views, not copies: Restore writes into
// them). Optimizer states: the shards' StateTensors (momentum views; "step"
// copies that the caller loads back with LoadStateTensors).
TrainState ModelState(SparseArch& sparse, const DenseModel& dense);
// ParseParamMap (include/tzrec/train/train.hpp) of the file at `path`; ConfigError naming the
// path when it cannot be read.
std::map<std::string, std::string> LoadParamMap(const std::string& path);
// Renames `state`'s tables and dense tensors by fine_tune_ckpt_param_map's renames (current →
// saved name) so Restore reads each from its saved name, with its optimizer state (a table's
// shards carry theirs; dense "<name>/<state>" tensors follow <name>). `path` is the map file (for
// messages).
// Throws ConfigError naming a current name that is neither one of `tables` nor a dense tensor
// of `dense` (checked against the whole model, so every rank throws alike).
void ApplyParamMap(const std::map<std::string, std::string>& renames, const std::string& path,
                   const SparseArch& sparse, const DenseModel& dense, TrainState& state);
// ApplyParamMap's renaming without the check: shards' tables, dense tensors and dense optimizer
// states "<name>/<state>" whose name is a key of `renames` take the mapped saved name. Pure.
void RenameToSaved(const std::map<std::string, std::string>& renames, TrainState& state);
// Loads the optimizer states of `state` (as filled by Restore) back into the shards.
void LoadShardOptimizerStates(SparseArch& sparse, const TrainState& state);

// The config's optimizers and learning-rate schedules as the kernels take them (TorchEasyRec's
// mapping: dense eps = torch.optim's default, sparse eps = FBGEMM's). optimizer_options.cpp.
EmbeddingOptimizerConfig SparseOptimizerFromConfig(const protos::SparseOptimizer& optimizer);
DenseOptimizerOptions DenseOptimizerFromConfig(const protos::DenseOptimizer& optimizer);
LrScheduleOptions SparseScheduleFromConfig(const protos::SparseOptimizer& optimizer);
LrScheduleOptions DenseScheduleFromConfig(const protos::DenseOptimizer& optimizer);
// Prints the config's accepted-without-effect warnings, one "tzrec_train: warning: ..." line each
// (rank 0 only, from the launcher env's RANK).
void PrintConfigWarnings(const std::vector<std::string>& warnings);

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
