// The pure transitions of the legacy etcd rendezvous (see etcd_legacy_ops.hpp).
#include "etcd_legacy_ops.hpp"

#include <nlohmann/json.hpp>

#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

LegacyWrite Retry(LegacyStep step, std::string why) {
  LegacyWrite w;
  w.step = step;
  w.why = std::move(why);
  return w;
}

}  // namespace

LegacyState ParseLegacyState(const std::string& json) {
  try {
    auto j = nlohmann::json::parse(json);
    LegacyState s;
    s.status = j.at("status").get<std::string>();
    if (auto it = j.find("version"); it != j.end()) {
      s.version = it->is_string() ? it->get<std::string>() : it->dump();
    }
    if (auto it = j.find("participants"); it != j.end())
      s.participants = it->get<std::vector<int>>();
    if (auto it = j.find("keep_alives"); it != j.end()) {
      s.keep_alives = it->get<std::vector<std::string>>();
    }
    if (auto it = j.find("num_workers_waiting"); it != j.end()) {
      s.num_workers_waiting = it->get<std::int64_t>();
    }
    if (auto it = j.find("tzrun_exit_code"); it != j.end() && it->is_number_integer()) {
      s.tzrun_exit_code = it->get<int>();
    }
    s.extra = j.dump();
    return s;
  } catch (const std::exception& e) {
    throw RendezvousStateError(
        "the legacy etcd rendezvous state is not torchrun's (" + std::string(e.what()) +
        "; it reads '" + json.substr(0, 80) +
        "'): another program may use the same etcd key (<etcd_prefix>run_<--rdzv-id>/rdzv/"
        "active_version); pick another --rdzv-id or delete the key");
  }
}

std::string DumpLegacyState(const LegacyState& s) {
  nlohmann::json j = s.extra.empty() ? nlohmann::json::object() : nlohmann::json::parse(s.extra);
  j["status"] = s.status;
  if (s.status != "setup") {
    j["version"] = s.version;
    j["participants"] = s.participants;
  }
  if (s.status == "frozen" || s.status == "final" || j.contains("keep_alives")) {
    j["keep_alives"] = s.keep_alives;
  }
  if (s.status == "final" || j.contains("num_workers_waiting")) {
    j["num_workers_waiting"] = s.num_workers_waiting;
  }
  if (s.tzrun_exit_code) j["tzrun_exit_code"] = *s.tzrun_exit_code;
  return j.dump();
}

LegacyWrite LegacyJoin(const LegacyState& s, const std::string& expected, int min_nodes,
                       int max_nodes) {
  if (s.status != "joinable") {
    return Retry(LegacyStep::kRetryLater,
                 "Rendezvous state became non-joinable before we could join. Must join next one.");
  }
  if (s.version != expected) {
    return Retry(LegacyStep::kRetryImmediately,
                 "Rendezvous version changed. Must try join the new one.");
  }
  if (static_cast<int>(s.participants.size()) >= max_nodes) {
    return Retry(LegacyStep::kRetryLater, "joinable rendezvous without space left");
  }
  LegacyWrite w;
  w.step = LegacyStep::kWrite;
  w.next = s;
  w.rank = static_cast<int>(s.participants.size());
  w.next.participants.push_back(w.rank);
  const int n = static_cast<int>(w.next.participants.size());
  if (n == max_nodes) {
    w.next.status = "frozen";
    w.next.keep_alives.clear();
    w.ttl = kLegacyFrozenTtl;
  } else if (n >= min_nodes) {
    w.ttl = kLegacyJoinableTtl;
  }
  return w;
}

LegacyWrite LegacyConfirm(const LegacyState& s, const std::string& expected,
                          const std::string& lease_key) {
  if (s.status != "frozen") {
    return Retry(LegacyStep::kRetryImmediately,
                 "Rendezvous no longer frozen, before we confirmed. Must join next one");
  }
  if (s.version != expected) {
    return Retry(LegacyStep::kRetryImmediately,
                 "Rendezvous version changed. Must try join the new one.");
  }
  LegacyWrite w;
  w.step = LegacyStep::kWrite;
  w.next = s;
  w.next.keep_alives.push_back(lease_key);
  if (w.next.keep_alives.size() == w.next.participants.size()) {
    w.next.status = "final";
    w.next.num_workers_waiting = 0;
  } else {
    w.ttl = kLegacyFrozenTtl;
  }
  return w;
}

LegacyWrite LegacyAnnounceWaiting(const LegacyState& s, const std::string& expected) {
  if (s.status != "final" || s.version != expected) {
    return Retry(LegacyStep::kRetryImmediately, "the final rendezvous changed");
  }
  LegacyWrite w;
  w.step = LegacyStep::kWrite;
  w.next = s;
  ++w.next.num_workers_waiting;
  return w;
}

LegacyWrite LegacyFreeze(const LegacyState& s, const std::string& expected) {
  if (s.status == "frozen" && s.version == expected) return {};
  if (s.status != "joinable" || s.version != expected) {
    return Retry(LegacyStep::kRetryLater,
                 "Rendezvous state transition no longer possible. Must re-enter.");
  }
  LegacyWrite w;
  w.step = LegacyStep::kWrite;
  w.next = s;
  w.next.status = "frozen";
  w.next.keep_alives.clear();
  w.ttl = kLegacyFrozenTtl;
  return w;
}

LegacyWrite LegacyClose(const LegacyState& s, std::optional<int> exit_code) {
  if (s.status == "closed") return {};
  LegacyWrite w;
  w.step = LegacyStep::kWrite;
  w.next = s;
  w.next.status = "closed";
  w.next.tzrun_exit_code = exit_code;
  return w;
}

std::optional<std::string> LegacyExpiredKeepAlive(const LegacyState& s,
                                                  const std::set<std::string>& alive) {
  for (const auto& k : s.keep_alives) {
    if (!alive.contains(k)) return k;
  }
  return std::nullopt;
}

std::optional<WatchEvent> LegacyWatchEvent(const std::optional<LegacyState>& s,
                                           const std::string& my_version, const std::string& run_id,
                                           bool& closed_seen, bool& membership_seen) {
  if (s && s->status == "closed") {
    if (closed_seen) return std::nullopt;
    closed_seen = true;
    WatchEvent ev;
    ev.kind = WatchEvent::Kind::kJobFailed;
    ev.exit_code = s->tzrun_exit_code.value_or(125);
    ev.detail = "the legacy etcd rendezvous '" + run_id + "' was closed" +
                (s->tzrun_exit_code ? " by a node that failed with exit code " +
                                          std::to_string(*s->tzrun_exit_code)
                                    : std::string(" by another node"));
    return ev;
  }
  const bool mine = s && s->status == "final" && s->version == my_version;
  if (membership_seen || (mine && s->num_workers_waiting == 0)) return std::nullopt;
  membership_seen = true;
  WatchEvent ev;
  ev.kind = WatchEvent::Kind::kMembershipChanged;
  ev.scale_up = mine;
  ev.detail = mine ? std::to_string(s->num_workers_waiting) +
                         " node(s) waiting to join the legacy etcd rendezvous '" + run_id + "'"
                   : "the round (version " + my_version + ") of the legacy etcd rendezvous '" +
                         run_id + "' was destroyed or replaced";
  return ev;
}

}  // namespace tzrun::rendezvous::detail
