// tzrun/rendezvous/ranks.hpp — worker rank assignment and the exit barrier, exactly as
// torchrun 2.11 does them on the rendezvous store.
//
// Upstream: torch/distributed/elastic/agent/server/api.py (_RoleInstanceInfo,
// SimpleElasticAgent._assign_worker_ranks, _exit_barrier) and
// torch/distributed/elastic/utils/store.py (barrier). Keys and JSON encodings are torchrun's
// byte for byte (Python json.dumps with its default ", " / ": " separators):
//   torchelastic/role_info/<group_rank>      {"role": "default", "rank": 0, "local_world_size": 2}
//   torchelastic/assigned_ranks/<group_rank> [base_global_rank, global_world_size,
//                                             base_role_rank, role_world_size]
//   torchelastic/agent/terminal_state/{num_members,last_member}
// Every agent writes its role_info; group rank 0 multi_gets them all in group-rank order,
// computes running sums (global and per role) and multi_sets every assigned_ranks entry;
// every agent then reads its own. Heterogeneous local world sizes are supported.
//
// Thread-safety: pure functions are reentrant; the store functions use the given store only.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::rendezvous {

/// torchrun's _RoleInstanceInfo.
struct RoleInstanceInfo {
  std::string role;
  int rank = 0;  ///< group rank
  int local_world_size = 1;
  friend bool operator==(const RoleInstanceInfo&, const RoleInstanceInfo&) = default;
};

/// What one node's workers get: RANK = base_global_rank + LOCAL_RANK, ROLE_RANK =
/// base_role_rank + LOCAL_RANK, WORLD_SIZE, ROLE_WORLD_SIZE.
struct AssignedRanks {
  int base_global_rank = 0;
  int global_world_size = 0;
  int base_role_rank = 0;
  int role_world_size = 0;
  friend bool operator==(const AssignedRanks&, const AssignedRanks&) = default;
};

/// Python json.dumps of the role info dict (ASCII-escaped like ensure_ascii=True).
[[nodiscard]] std::string SerializeRoleInfo(const RoleInstanceInfo& info);
/// Parses a role_info value (any JSON spacing). Throws RendezvousStateError naming the text.
[[nodiscard]] RoleInstanceInfo ParseRoleInfo(std::string_view text);
/// "[b, g, r, s]" exactly as json.dumps writes the list.
[[nodiscard]] std::string SerializeAssignedRanks(const AssignedRanks& ranks);
/// Throws RendezvousStateError.
[[nodiscard]] AssignedRanks ParseAssignedRanks(std::string_view text);

/// Group rank 0's computation: entry i belongs to infos[i] (walked in group-rank order).
[[nodiscard]] std::vector<AssignedRanks> ComputeAssignedRanks(
    const std::vector<RoleInstanceInfo>& infos);

/// TORCH_ELASTIC_WORKER_IDENTICAL=1 fast path: no store traffic.
[[nodiscard]] AssignedRanks IdenticalRanks(int group_rank, int group_world_size,
                                           int local_world_size);

/// Blocks until every key exists, waiting in slices of <= 1 s and calling `interrupt`
/// between them. Throws RendezvousTimeoutError (naming the keys and `timeout`) or
/// RendezvousConnectionError.
void WaitKeys(store::Store& store, const std::vector<std::string>& keys,
              std::chrono::milliseconds timeout, const Interrupt& interrupt,
              const std::string& what);

/// The store exchange of _assign_worker_ranks on the round store. Throws as wait_keys,
/// RendezvousStateError for undecodable values.
[[nodiscard]] AssignedRanks AssignWorkerRanks(store::Store& store, int group_rank,
                                              int group_world_size, const std::string& role,
                                              int local_world_size,
                                              std::chrono::milliseconds timeout,
                                              const Interrupt& interrupt);

/// Prefix of torchrun's exit barrier keys.
inline constexpr std::string_view kTerminalStatePrefix = "torchelastic/agent/terminal_state";

}  // namespace tzrun::rendezvous
