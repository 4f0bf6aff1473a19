// Worker rank assignment and wait helpers (see include/tzrun/rendezvous/ranks.hpp).
#include "tzrun/rendezvous/ranks.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kRoleInfoPrefix = "torchelastic/role_info/";
constexpr std::string_view kAssignedRanksPrefix = "torchelastic/assigned_ranks/";

int JsonInt(const nlohmann::json& j) {
  if (!j.is_number_integer()) throw std::invalid_argument("not an integer");
  return j.get<int>();
}

}  // namespace

std::string SerializeRoleInfo(const RoleInstanceInfo& info) {
  // json.dumps({"role": ..., "rank": ..., "local_world_size": ...}) — insertion order,
  // ", " and ": " separators, ensure_ascii.
  return "{\"role\": " + nlohmann::json(info.role).dump(-1, ' ', true) +
         ", \"rank\": " + std::to_string(info.rank) +
         ", \"local_world_size\": " + std::to_string(info.local_world_size) + "}";
}

RoleInstanceInfo ParseRoleInfo(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    RoleInstanceInfo info;
    info.role = j.at("role").get<std::string>();
    info.rank = JsonInt(j.at("rank"));
    info.local_world_size = JsonInt(j.at("local_world_size"));
    return info;
  } catch (const std::exception& e) {
    throw RendezvousStateError("undecodable role_info value '" + std::string(text) + "' (" +
                               e.what() +
                               "); every node of a job must run the same launcher (all tzrun, "
                               "or all torchrun) with the same --rdzv-id");
  }
}

std::string SerializeAssignedRanks(const AssignedRanks& r) {
  std::string out = "[";
  out.append(std::to_string(r.base_global_rank)).append(", ");
  out.append(std::to_string(r.global_world_size)).append(", ");
  out.append(std::to_string(r.base_role_rank)).append(", ");
  return out.append(std::to_string(r.role_world_size)).append("]");
}

AssignedRanks ParseAssignedRanks(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (!j.is_array() || j.size() != 4) throw std::invalid_argument("not a list of 4 integers");
    return {JsonInt(j[0]), JsonInt(j[1]), JsonInt(j[2]), JsonInt(j[3])};
  } catch (const std::exception& e) {
    throw RendezvousStateError("undecodable assigned_ranks value '" + std::string(text) + "' (" +
                               e.what() +
                               "); every node of a job must run the same launcher with the "
                               "same --rdzv-id");
  }
}

std::vector<AssignedRanks> ComputeAssignedRanks(const std::vector<RoleInstanceInfo>& infos) {
  std::map<std::string, int> role_sizes;
  int global_size = 0;
  for (const auto& i : infos) {
    role_sizes[i.role] += i.local_world_size;
    global_size += i.local_world_size;
  }
  std::vector<AssignedRanks> out;
  out.reserve(infos.size());
  int base_global = 0;
  std::map<std::string, int> role_ranks;
  for (const auto& i : infos) {
    out.push_back({base_global, global_size, role_ranks[i.role], role_sizes[i.role]});
    base_global += i.local_world_size;
    role_ranks[i.role] += i.local_world_size;
  }
  return out;
}

AssignedRanks IdenticalRanks(int group_rank, int group_world_size, int local_world_size) {
  const int world = group_world_size * local_world_size;
  const int base = group_rank * local_world_size;
  return {base, world, base, world};
}

void WaitKeys(store::Store& store, const std::vector<std::string>& keys, milliseconds timeout,
              const Interrupt& interrupt, const std::string& what) {
  const auto deadline = SteadyClock::now() + timeout;
  while (true) {
    if (interrupt) interrupt();
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left <= milliseconds(0)) {
      throw RendezvousTimeoutError(what + ": keys " + base::QuotedList(keys, 4) +
                                   " did not appear in the rendezvous store within " +
                                   base::DurationText(timeout) +
                                   "; another node is missing or slow (check that every node "
                                   "was started with the same --nnodes/--rdzv-id), or raise "
                                   "the timeout");
    }
    try {
      store.Wait(keys, std::clamp(left, milliseconds(1), milliseconds(1000)));
      return;
    } catch (const store::TimeoutError&) {
      // next slice
    } catch (const store::StoreError& e) {
      throw RendezvousConnectionError(what + ": the rendezvous store failed: " + e.what());
    }
  }
}

AssignedRanks AssignWorkerRanks(store::Store& store, int group_rank, int group_world_size,
                                const std::string& role, int local_world_size, milliseconds timeout,
                                const Interrupt& interrupt) {
  try {
    store.Set(std::string(kRoleInfoPrefix) + std::to_string(group_rank),
              SerializeRoleInfo({role, group_rank, local_world_size}));
    const std::string mine = std::string(kAssignedRanksPrefix) + std::to_string(group_rank);
    if (group_rank == 0) {
      std::vector<std::string> keys;
      keys.reserve(static_cast<std::size_t>(group_world_size));
      for (int i = 0; i < group_world_size; ++i) {
        keys.push_back(std::string(kRoleInfoPrefix) + std::to_string(i));
      }
      WaitKeys(store, keys, timeout, interrupt, "rank assignment (waiting for every node)");
      const auto values = store.MultiGet(keys);
      std::vector<RoleInstanceInfo> infos;
      infos.reserve(values.size());
      for (const auto& v : values) infos.push_back(ParseRoleInfo(v));
      const auto assigned = ComputeAssignedRanks(infos);
      std::vector<std::string> out_keys;
      std::vector<std::string> out_values;
      for (std::size_t i = 0; i < assigned.size(); ++i) {
        out_keys.push_back(std::string(kAssignedRanksPrefix) + std::to_string(i));
        out_values.push_back(SerializeAssignedRanks(assigned[i]));
      }
      store.MultiSet(out_keys, out_values);
      return assigned.front();
    }
    WaitKeys(store, {mine}, timeout, interrupt, "rank assignment (waiting for node 0)");
    return ParseAssignedRanks(store.Get(mine));
  } catch (const store::StoreError& e) {
    throw RendezvousConnectionError(std::string("rank assignment: the rendezvous store failed: ") +
                                    e.what());
  }
}

}  // namespace tzrun::rendezvous
