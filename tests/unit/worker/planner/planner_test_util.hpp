// Helpers shared by the tzrec::planner unit tests (planner_estimate_test.cpp,
// planner_plan_test.cpp): a table spec and a CPU topology with the fields the tests vary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tzrec/planner/planner.hpp"

namespace tzrec::planner_test {

inline TableSpec MakeTable(const std::string& name, std::int64_t rows, std::int64_t dim,
                           std::vector<std::string> features = {}) {
  TableSpec table;
  table.name = name;
  table.num_embeddings = rows;
  table.embedding_dim = dim;
  table.feature_names = features.empty() ? std::vector<std::string>{name + "_f"} : features;
  return table;
}

inline Topology Cpu(int world, int local, std::int64_t ddr_cap = Topology::kDefaultDdrCap) {
  Topology topo;
  topo.world_size = world;
  topo.local_world_size = local;
  topo.device = ComputeDevice::kCpu;
  topo.ddr_cap = ddr_cap;
  return topo;
}

}  // namespace tzrec::planner_test
