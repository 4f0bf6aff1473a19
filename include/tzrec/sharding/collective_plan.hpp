// tzrec/sharding/collective_plan.hpp — TorchRec's collective_plan
// (torchrec/distributed/planner/planners.py EmbeddingShardingPlanner.collective_plan): rank 0
// plans, every rank gets the same ShardingPlan.
#pragma once

#include <vector>

#include "tzrec/comm/comm.hpp"
#include "tzrec/planner/planner.hpp"

namespace tzrec {

// Collective. Rank 0 runs Plan(topology, tables, options) and broadcasts the plan JSON with its
// hash; every rank checks the hash of what it received, then all-gathers it so a disagreeing rank
// stops the job. Each step is agreed on (AgreeOnFirstError, tzrec/comm/agree.hpp): a PlannerError
// on rank 0 is re-raised on every rank with rank 0's message, kind, table and missing bytes; any
// other exception of rank 0 (std::invalid_argument for bad specs) becomes an InternalError on
// every rank. Throws CommError when the ranks' plans differ (different builds or configs).
ShardingPlan CollectivePlan(Comm& comm, const Topology& topology,
                            const std::vector<TableSpec>& tables, const PlannerOptions& options);

}  // namespace tzrec
