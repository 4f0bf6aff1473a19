// What tzrec_sharding_check's two halves share: sharding_check_main.cpp (the sharded EBC) and
// ec_check.cpp (the sharded EmbeddingCollection), both checked against unsharded references.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tzrec/comm/comm.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec_check {

// "" when got equals want within the check's tolerance, else a message naming `what`.
std::string Compare(const std::string& what, const at::Tensor& got, const at::Tensor& want);

// The plan every rank agrees on for these tables at this local batch and optimizer (a name
// ParseEmbeddingOptimizerKind accepts), through tzrec::CollectivePlan.
tzrec::ShardingPlan PlanForCheck(tzrec::Comm& comm, const tzrec::Topology& topo,
                                 const std::vector<tzrec::TableSpec>& specs,
                                 std::int64_t local_batch, const std::string& opt_name);

// ec_check.cpp: the sharded EmbeddingCollection against composed libtorch; "" or the mismatch.
std::string CheckEc(const std::shared_ptr<tzrec::Comm>& comm, const tzrec::Topology& topo,
                    std::int64_t global_batch, int steps, const std::string& plan_name,
                    const std::string& opt_name);

}  // namespace tzrec_check
