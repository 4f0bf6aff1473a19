// JSON encoding of the dynamic rendezvous state (see dynamic_rendezvous.hpp).
#include <nlohmann/json.hpp>

#include "tzrun/rendezvous/dynamic_rendezvous.hpp"
#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous {
namespace {

nlohmann::json NodeJson(const NodeDesc& n) {
  return nlohmann::json::array({n.addr, n.pid, n.local_id});
}

NodeDesc NodeFrom(const nlohmann::json& j) {
  if (!j.is_array() || j.size() < 3) throw std::invalid_argument("bad node descriptor");
  return {j.at(0).get<std::string>(), j.at(1).get<std::int64_t>(), j.at(2).get<std::int64_t>()};
}

}  // namespace

std::string NodeDesc::Str() const {
  return addr + "_" + std::to_string(pid) + "_" + std::to_string(local_id);
}

std::string EncodeState(const RendezvousState& s) {
  nlohmann::json j;
  j["format"] = 1;
  j["version"] = s.version;
  j["round"] = s.round;
  j["complete"] = s.complete;
  j["deadline"] = s.deadline ? nlohmann::json(*s.deadline) : nlohmann::json(nullptr);
  j["closed"] = s.closed;
  j["closed_exit_code"] =
      s.closed_exit_code ? nlohmann::json(*s.closed_exit_code) : nlohmann::json(nullptr);
  j["closed_by"] = s.closed_by;
  auto parts = nlohmann::json::array();
  for (const auto& [n, p] : s.participants) {
    auto e = NodeJson(n);
    e.push_back(p.rank);
    e.push_back(p.restart_count);
    parts.push_back(std::move(e));
  }
  j["participants"] = std::move(parts);
  auto wl = nlohmann::json::array();
  for (const auto& n : s.wait_list) wl.push_back(NodeJson(n));
  j["wait_list"] = std::move(wl);
  auto rl = nlohmann::json::array();
  for (const auto& n : s.redundancy_list) rl.push_back(NodeJson(n));
  j["redundancy_list"] = std::move(rl);
  auto hb = nlohmann::json::array();
  for (const auto& [n, t] : s.last_heartbeats) {
    auto e = NodeJson(n);
    e.push_back(t);
    hb.push_back(std::move(e));
  }
  j["last_heartbeats"] = std::move(hb);
  return j.dump();
}

RendezvousState DecodeState(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.is_null()) return {};
    if (!j.is_object() || j.value("format", 0) != 1) {
      throw std::invalid_argument("not a tzrun rendezvous state (format 1)");
    }
    RendezvousState s;
    s.version = j.at("version").get<std::int64_t>();
    s.round = j.at("round").get<int>();
    s.complete = j.at("complete").get<bool>();
    if (!j.at("deadline").is_null()) s.deadline = j.at("deadline").get<double>();
    s.closed = j.at("closed").get<bool>();
    if (j.contains("closed_exit_code") && !j.at("closed_exit_code").is_null()) {
      s.closed_exit_code = j.at("closed_exit_code").get<int>();
    }
    s.closed_by = j.value("closed_by", "");
    for (const auto& e : j.at("participants")) {
      s.participants[NodeFrom(e)] = {e.at(3).get<int>(), e.at(4).get<int>()};
    }
    for (const auto& e : j.at("wait_list")) s.wait_list.insert(NodeFrom(e));
    for (const auto& e : j.at("redundancy_list")) s.redundancy_list.insert(NodeFrom(e));
    for (const auto& e : j.at("last_heartbeats"))
      s.last_heartbeats[NodeFrom(e)] = e.at(3).get<double>();
    return s;
  } catch (const std::exception& e) {
    std::string shown(text.substr(0, 80));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    throw RendezvousStateError(
        "the rendezvous state in the store is not tzrun's (" + std::string(e.what()) +
        "; starts with '" + shown +
        "'): is a Python torchrun agent using the same --rdzv-id and endpoint? tzrun and "
        "torchrun agents cannot share a c10d rendezvous; run tzrun on every node or use "
        "another --rdzv-id");
  }
}

}  // namespace tzrun::rendezvous
