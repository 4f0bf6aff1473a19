// The distributed model's setup and batches (src/worker/train/dist_model.hpp).
#include "dist_model.hpp"

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "train_common.hpp"

namespace tzrec {
namespace {

// Planner HBM cap per GPU (H100/H200 class); 0 on CPU.
std::int64_t DeviceMemoryBytes(const at::Device& device) {
  return device.is_cuda() ? (80LL << 30) : 0;
}

Batch EmptyBatch(const PipelineConfig& config, const Dataset& ds) {
  Batch b;
  const auto& keys = ds.SparseFeatureNames();
  // Weighted like the real batches, so that every rank runs the same input collectives.
  std::optional<at::Tensor> weights;
  if (ds.Weighted()) weights = at::zeros({0}, at::kFloat);
  b.sparse =
      KeyedJaggedTensor(keys, at::zeros({0}, at::kLong), at::zeros({0}, at::kLong), weights, 0);
  b.dense = at::zeros({0, ds.DenseDim()});
  b.labels = at::zeros({0});
  for (int i = 0; i < config.data_config().label_fields_size(); ++i)
    b.all_labels.push_back(at::zeros({0}));
  if (config.data_config().sample_weight_fields_size() > 0) b.sample_weights = at::zeros({0});
  if (!GroupedAucKey(config).empty()) b.group_ids = at::zeros({0}, at::kLong);
  return b;
}

}  // namespace

DistModel BuildDistModel(const PipelineConfig& config, std::shared_ptr<Comm> comm) {
  DistModel m;
  m.comm = std::move(comm);
  m.rank = m.comm->Rank();
  m.world = m.comm->WorldSize();
  m.device = m.comm->Device();
  const std::vector<TableSpec> specs = SparseTableSpecs(config);
  Topology topo = Topology::FromEnvironment(
      m.world, m.comm->LocalWorldSize(),
      m.device.is_cuda() ? ComputeDevice::kCuda : ComputeDevice::kCpu, DeviceMemoryBytes(m.device));
  PlannerOptions popts;
  popts.batch_size = config.data_config().batch_size();
  m.ebc_opt = SparseOptimizerFromConfig(config.train_config().sparse_optimizer());
  popts.optimizer = m.ebc_opt.kind;
  m.dense = DenseModel::Create(config, Seed(config), m.device);
  popts.dense_parameter_bytes = m.dense->NumParameters() * 4;
  m.plan = CollectivePlan(*m.comm, topo, specs, popts);
  m.sparse = std::make_unique<SparseArch>(config, m.plan, m.ebc_opt, Seed(config), m.comm);
  return m;
}

std::optional<Fetched> FetchBatch(DistModel& model, const PipelineConfig& config, Dataset& ds,
                                  bool train) {
  std::optional<Batch> b = GuardInput([&] { return ds.Next(); });
  const bool has_batch = b.has_value();
  Fetched f;
  f.batch = has_batch ? std::move(*b) : EmptyBatch(config, ds);
  f.dist = model.sparse->InputDist(f.batch.sparse.To(model.device));
  // has_batch agreement: the input dist's batch-size exchange carries it when some table is
  // sharded; otherwise an all-reduce, SUM then compare (Gloo's AVG is unreliable, pytorch
  // #162338).
  std::optional<int> ranks_with_data = model.sparse->RanksWithSamples(f.dist);
  if (!ranks_with_data) {
    at::Tensor flag =
        at::full({1}, has_batch ? 1.0F : 0.0F, at::TensorOptions().device(model.device));
    model.comm->AllReduceSum(flag);
    ranks_with_data = static_cast<int>(std::lround(flag.item<float>()));
  }
  if (train ? *ranks_with_data < model.world : *ranks_with_data == 0) {
    model.sparse->Drain(f.dist);
    return std::nullopt;
  }
  f.cursor_json = ds.Cursor().ToJson();
  return f;
}

at::Tensor DenseLogits(DistModel& model, const PipelineConfig& config, const Fetched& f,
                       bool training, DenseSync* buffer_sync) {
  const KeyedTensor kt = model.sparse->Compute(f.dist);
  const at::Tensor dense = f.batch.dense.to(model.device);
  if (training && buffer_sync != nullptr) buffer_sync->BroadcastParameters(0);
  const std::string& mp = config.train_config().mixed_precision();
  if (mp.empty()) return model.dense->Forward(kt, dense, training);
  AutocastScope scope(model.device, mp == "BF16" ? at::kBFloat16 : at::kHalf);
  return model.dense->Forward(kt, dense, training).to(at::kFloat);
}

}  // namespace tzrec
