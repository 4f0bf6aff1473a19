// HeuristicalStorageReservation (torchrec/distributed/planner/storage_reservations.py): what is
// left on every rank for embedding shards after the reserve percentage, the dense parameters and
// the input batches.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "planner_internal.hpp"

namespace tzrec {
namespace {

// planner/constants.py
constexpr std::int64_t kDenseReservationMultiplier = 6;
constexpr std::int64_t kKjtReservationMultiplier = 20;

}  // namespace

StorageCapacity ReservedCapacity(const Topology& topo, const std::vector<TableSpec>& tables,
                                 const PlannerOptions& options) {
  topo.Validate();
  planner_detail::ValidateTables(tables);
  planner_detail::ValidateOptions(options);
  StorageCapacity capacity;
  const bool cuda = topo.device == ComputeDevice::kCuda;
  capacity.hbm = cuda ? static_cast<std::int64_t>((1.0 - topo.storage_reserve_percent) *
                                                  static_cast<double>(topo.hbm_cap))
                      : 0;
  capacity.ddr = topo.ddr_cap;
  double ids = 0;
  for (const TableSpec& table : tables) ids += planner_detail::TableWorkload(table, options).inputs;
  const std::int64_t kjt =
      static_cast<std::int64_t>(std::ceil(ids * planner_detail::kBigIntBytes)) *
      kKjtReservationMultiplier;
  const std::int64_t dense = kDenseReservationMultiplier * options.dense_parameter_bytes;
  std::int64_t& primary = cuda ? capacity.hbm : capacity.ddr;
  const std::int64_t before = primary;
  primary -= kjt + dense;
  if (primary < 0) {
    throw PlannerError(
        PlannerError::Kind::kInsufficientStorage, "", -primary,
        "the storage reservation does not fit on one rank: " + planner_detail::ResourceName(topo) +
            " " + FormatBytes(before) + " per rank" +
            (cuda ? " (after the " +
                        std::to_string(
                            static_cast<int>(std::lround(topo.storage_reserve_percent * 100))) +
                        "% STORAGE_RESERVE_PERCENT reserve)"
                  : std::string()) +
            " minus " + FormatBytes(dense) + " for dense parameters (6x) and " + FormatBytes(kjt) +
            " for input batches leaves " + FormatBytes(primary) +
            ": raise the per-rank capacity or lower the batch size" +
            (cuda ? std::string(" or STORAGE_RESERVE_PERCENT") : std::string()));
  }
  return capacity;
}

}  // namespace tzrec
