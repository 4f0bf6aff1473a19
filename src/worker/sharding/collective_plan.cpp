// CollectivePlan (include/tzrec/sharding/collective_plan.hpp).
#include "tzrec/sharding/collective_plan.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>

#include <string>
#include <vector>

#include "tzrec/comm/agree.hpp"

namespace tzrec {

ShardingPlan CollectivePlan(Comm& comm, const Topology& topology,
                            const std::vector<TableSpec>& tables, const PlannerOptions& options) {
  // Every rank's host size: the plan assumes one for all (a 1+1+2 layout cannot be planned).
  const at::Tensor sizes =
      comm.AllGather(at::full({1}, static_cast<std::int64_t>(topology.local_world_size),
                              at::TensorOptions().dtype(at::kLong).device(comm.Device())))
          .to(at::kCPU);
  std::vector<int> local_world_sizes;
  for (int r = 0; r < comm.WorldSize(); ++r) {
    local_world_sizes.push_back(static_cast<int>(sizes[r].item<std::int64_t>()));
  }
  const std::string layout = Topology::HostLayoutProblem(local_world_sizes);
  if (!layout.empty()) throw InputError(layout);  // every rank sees the same sizes
  // "<hash>\n<json>" from rank 0; the others pass "".
  std::string message = AgreeOnFirstError(comm, [&] {
    if (comm.Rank() != 0) return std::string();
    const ShardingPlan plan = Plan(topology, tables, options);
    return plan.Hash() + "\n" + plan.ToJson(-1);
  });
  message = comm.BroadcastString(message, 0);
  const ShardingPlan plan = AgreeOnFirstError(comm, [&] {
    const auto newline = message.find('\n');
    const std::string hash = message.substr(0, newline);
    ShardingPlan received =
        ShardingPlan::FromJson(newline == std::string::npos ? "" : message.substr(newline + 1));
    const std::string mine = received.Hash();
    if (mine != hash) {
      throw CommError("rank " + std::to_string(comm.Rank()) +
                      ": the sharding plan received from rank 0 hashes to " + mine +
                      " but rank 0 sent " + hash + ": the ranks run different tzrec_train builds?");
    }
    return received;
  });
  // Every rank checks every other rank holds the same plan.
  const std::string mine = plan.Hash();
  const auto h = static_cast<std::int64_t>(std::stoull(mine, nullptr, 16));
  at::Tensor all =
      comm.AllGather(at::full({1}, h, at::TensorOptions().dtype(at::kLong).device(comm.Device())))
          .to(at::kCPU);
  for (int r = 0; r < comm.WorldSize(); ++r) {
    if (all[r].item<std::int64_t>() != h) {
      throw CommError("sharding plan disagreement: rank " + std::to_string(r) +
                      " holds a plan whose hash differs from " + mine + " (rank " +
                      std::to_string(comm.Rank()) +
                      "): make every rank run the same config and build");
    }
  }
  return plan;
}

}  // namespace tzrec
