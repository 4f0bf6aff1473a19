// The file timer's pure core (see timer_requests.hpp; upstream: torch/distributed/elastic/
// timer/file_based_local_timer.py, FileTimerServer._get_requests / register_timers /
// get_expired_timers / _run_watchdog).
#include "timer_requests.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace tzrun::agent {
namespace {

bool IntegerField(const nlohmann::json& j, const char* key, long long* out, std::string* why) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    *why = std::string("\"") + key + "\" is missing or not an integer";
    return false;
  }
  *out = it->get<long long>();
  return true;
}

}  // namespace

std::optional<TimerRequest> ParseTimerRequest(std::string_view line, std::string* why) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "not a JSON object";
    return std::nullopt;
  }
  TimerRequest r;
  long long pid = 0;
  long long sig = 0;
  if (!IntegerField(j, "pid", &pid, why) || !IntegerField(j, "signal", &sig, why)) {
    return std::nullopt;
  }
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) {
    *why = "\"pid\" " + std::to_string(pid) + " is not a process id";
    return std::nullopt;
  }
  auto scope = j.find("scope_id");
  if (scope == j.end() || !scope->is_string()) {
    *why = "\"scope_id\" is missing or not a string";
    return std::nullopt;
  }
  auto exp = j.find("expiration_time");
  if (exp == j.end() || !exp->is_number()) {
    *why = "\"expiration_time\" is missing or not a number";
    return std::nullopt;
  }
  r.pid = static_cast<pid_t>(pid);
  r.scope_id = scope->get<std::string>();
  r.expiration_time = exp->get<double>();
  r.signal = static_cast<int>(std::clamp<long long>(sig, -1, 1 << 20));
  return r;
}

void TimerTable::Apply(const std::vector<TimerRequest>& requests) {
  for (const auto& r : requests) {
    auto key = std::make_pair(r.pid, r.scope_id);
    if (r.expiration_time < 0) {
      timers_.erase(key);
    } else {
      timers_[key] = r;
    }
  }
}

std::vector<TimerReap> TimerTable::Expired(double now) const {
  std::map<pid_t, std::vector<const TimerRequest*>> by_pid;
  for (const auto& [key, r] : timers_) {
    if (r.expiration_time <= now) by_pid[key.first].push_back(&r);
  }
  std::vector<TimerReap> out;
  for (auto& [pid, timers] : by_pid) {
    std::stable_sort(timers.begin(), timers.end(), [](const auto* a, const auto* b) {
      return a->expiration_time < b->expiration_time;
    });
    TimerReap reap;
    reap.pid = pid;
    for (const auto* t : timers) {
      reap.scopes.push_back(t->scope_id);
      if (reap.signal == 0 && t->signal > 0) reap.signal = t->signal;
    }
    out.push_back(std::move(reap));
  }
  return out;
}

std::optional<double> TimerTable::NextExpiry() const {
  std::optional<double> next;
  for (const auto& [key, r] : timers_) {
    if (!next || r.expiration_time < *next) next = r.expiration_time;
  }
  return next;
}

}  // namespace tzrun::agent
