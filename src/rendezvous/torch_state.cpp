// torchrun's pickled _RendezvousState (see torch_state.hpp).
#include "torch_state.hpp"

#include <cmath>

#include "pickle.hpp"
#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using Kind = PyValue::Kind;

constexpr std::string_view kModule = "torch.distributed.elastic.rendezvous.dynamic_rendezvous";
constexpr std::int64_t kMicrosPerDay = 86'400'000'000LL;

// Days since 1970-01-01 of a civil date, and back (H. Hinnant's algorithms).
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void CivilFromDays(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
}

[[noreturn]] void Bad(const std::string& why) {
  throw RendezvousStateError(
      "the etcd-v2 rendezvous state is not a torchrun _RendezvousState (" + why +
      "); another program may use the same etcd key (/torch/elastic/rendezvous/<--rdzv-id>): "
      "pick another --rdzv-id or delete the key");
}

bool IsGlobal(const PyRef& v, std::string_view module, std::string_view name) {
  return v && v->kind == Kind::kGlobal && v->s == std::string(module) + "." + std::string(name);
}

std::int64_t IntOf(const PyRef& v, const char* what) {
  if (!v || v->kind != Kind::kInt) Bad(std::string(what) + " is not an int");
  return v->i;
}

NodeDesc NodeOf(const PyRef& v) {
  if (!v || v->kind != Kind::kObject || !IsGlobal(v->cls, kModule, "_NodeDesc")) {
    Bad("a node is not a _NodeDesc");
  }
  const auto addr = DictGet(v->state, "addr");
  if (!addr || addr->kind != Kind::kStr) Bad("_NodeDesc.addr is not a str");
  return {addr->s, IntOf(DictGet(v->state, "pid"), "_NodeDesc.pid"),
          IntOf(DictGet(v->state, "local_id"), "_NodeDesc.local_id")};
}

// A datetime.datetime(bytes[, tzinfo]) call -> Unix seconds.
double TimeOf(const PyRef& v) {
  if (!v || v->kind != Kind::kCall || !IsGlobal(v->cls, "datetime", "datetime") ||
      v->args->items.empty() || v->args->items[0]->kind != Kind::kBytes ||
      v->args->items[0]->s.size() != 10) {
    Bad("a time is not a datetime");
  }
  double offset = 0;
  if (v->args->items.size() > 1) {
    const auto& tz = v->args->items[1];
    if (tz->kind != Kind::kCall || !IsGlobal(tz->cls, "datetime", "timezone") ||
        tz->args->items.empty() || tz->args->items[0]->kind != Kind::kCall ||
        !IsGlobal(tz->args->items[0]->cls, "datetime", "timedelta")) {
      Bad("a datetime's tzinfo is not a datetime.timezone");
    }
    const auto& td = tz->args->items[0]->args->items;
    const double parts[3] = {td.size() > 0 ? static_cast<double>(IntOf(td[0], "days")) : 0,
                             td.size() > 1 ? static_cast<double>(IntOf(td[1], "seconds")) : 0,
                             td.size() > 2 ? static_cast<double>(IntOf(td[2], "micros")) : 0};
    offset = parts[0] * 86400 + parts[1] + parts[2] / 1e6;
  }
  return DatetimeSeconds(v->args->items[0]->s, offset);
}

template <typename F>
void ForPairs(const PyRef& dict, const char* what, F f) {
  if (!dict || dict->kind != Kind::kDict) Bad(std::string(what) + " is not a dict");
  for (std::size_t k = 0; k + 1 < dict->items.size(); k += 2) f(dict->items[k], dict->items[k + 1]);
}

std::set<NodeDesc> NodeSet(const PyRef& v, const char* what) {
  if (!v || v->kind != Kind::kSet) Bad(std::string(what) + " is not a set");
  std::set<NodeDesc> out;
  for (const auto& n : v->items) out.insert(NodeOf(n));
  return out;
}

// ---- writer ----------------------------------------------------------------------------
void WriteNode(PickleWriter& w, const NodeDesc& n) {
  w.Global(kModule, "_NodeDesc");
  w.EmptyTuple();
  w.NewObj();
  w.EmptyDict();
  w.Mark();
  w.Str("addr");
  w.Str(n.addr);
  w.Str("pid");
  w.Int(n.pid);
  w.Str("local_id");
  w.Int(n.local_id);
  w.SetItems();
  w.Build();
}

void WriteTime(PickleWriter& w, double unix_seconds) {
  w.Global("datetime", "datetime");
  w.Bytes(DatetimeBytes(unix_seconds));
  w.Global("datetime", "timezone");
  w.Global("datetime", "timedelta");
  w.Int(0);
  w.Int(0);
  w.Int(0);
  w.Tuple(3);
  w.Reduce();
  w.Tuple(1);
  w.Reduce();
  w.Tuple(2);
  w.Reduce();
}

void WriteNodeSet(PickleWriter& w, const std::set<NodeDesc>& nodes) {
  w.EmptySet();
  if (nodes.empty()) return;
  w.Mark();
  for (const auto& n : nodes) WriteNode(w, n);
  w.AddItems();
}

template <typename Map, typename F>
void WriteNodeDict(PickleWriter& w, const Map& m, F value) {
  w.EmptyDict();
  if (m.empty()) return;
  w.Mark();
  for (const auto& [n, v] : m) {
    WriteNode(w, n);
    value(v);
  }
  w.SetItems();
}

}  // namespace

std::string DatetimeBytes(double unix_seconds) {
  const auto us = static_cast<std::int64_t>(std::llround(unix_seconds * 1e6));
  std::int64_t days = us / kMicrosPerDay;
  std::int64_t rest = us % kMicrosPerDay;
  if (rest < 0) {
    rest += kMicrosPerDay;
    --days;
  }
  std::int64_t y = 0;
  unsigned m = 0;
  unsigned d = 0;
  CivilFromDays(days, y, m, d);
  const auto secs = rest / 1'000'000;
  const auto micro = rest % 1'000'000;
  std::string b(10, '\0');
  b[0] = static_cast<char>((y >> 8) & 0xff);
  b[1] = static_cast<char>(y & 0xff);
  b[2] = static_cast<char>(m);
  b[3] = static_cast<char>(d);
  b[4] = static_cast<char>(secs / 3600);
  b[5] = static_cast<char>((secs / 60) % 60);
  b[6] = static_cast<char>(secs % 60);
  b[7] = static_cast<char>((micro >> 16) & 0xff);
  b[8] = static_cast<char>((micro >> 8) & 0xff);
  b[9] = static_cast<char>(micro & 0xff);
  return b;
}

double DatetimeSeconds(std::string_view b, double offset_s) {
  auto u = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(b[k])); };
  const std::int64_t year = static_cast<std::int64_t>(u(0) * 256 + u(1));
  const unsigned month = u(2) & 0x7fU;  // the high bit is `fold`
  const std::int64_t days = DaysFromCivil(year, month, u(3));
  const double micro = static_cast<double>((u(7) << 16U) | (u(8) << 8U) | u(9));
  return static_cast<double>(days * 86400 + u(4) * 3600 + u(5) * 60 + u(6)) + micro / 1e6 -
         offset_s;
}

std::string EncodeTorchState(const RendezvousState& s) {
  PickleWriter w;
  w.Global(kModule, "_RendezvousState");
  w.EmptyTuple();
  w.NewObj();
  w.EmptyDict();
  w.Mark();
  w.Str("round");
  w.Int(s.round);
  w.Str("complete");
  w.Bool(s.complete);
  w.Str("deadline");
  if (s.deadline) {
    WriteTime(w, *s.deadline);
  } else {
    w.None();
  }
  w.Str("closed");
  w.Bool(s.closed);
  w.Str("participants");
  WriteNodeDict(w, s.participants, [&](const RendezvousState::Participant& p) { w.Int(p.rank); });
  w.Str("wait_list");
  WriteNodeSet(w, s.wait_list);
  w.Str("redundancy_list");
  WriteNodeSet(w, s.redundancy_list);
  w.Str("last_heartbeats");
  WriteNodeDict(w, s.last_heartbeats, [&](double t) { WriteTime(w, t); });
  w.Str("tzrun_closed_exit_code");
  if (s.closed_exit_code) {
    w.Int(*s.closed_exit_code);
  } else {
    w.None();
  }
  w.Str("tzrun_closed_by");
  w.Str(s.closed_by);
  w.Str("tzrun_restart_counts");
  WriteNodeDict(w, s.participants,
                [&](const RendezvousState::Participant& p) { w.Int(p.restart_count); });
  w.SetItems();
  w.Build();
  return w.Finish();
}

RendezvousState DecodeTorchState(std::string_view pickle) {
  PyRef root;
  try {
    root = Unpickle(pickle);
  } catch (const PickleError& e) {
    Bad(std::string("not a pickle we can read: ") + e.what());
  }
  if (root->kind != Kind::kObject || !IsGlobal(root->cls, kModule, "_RendezvousState")) {
    Bad("the top object is not a _RendezvousState");
  }
  const auto& d = root->state;
  RendezvousState s;
  s.round = static_cast<int>(IntOf(DictGet(d, "round"), "round"));
  const auto complete = DictGet(d, "complete");
  const auto closed = DictGet(d, "closed");
  if (!complete || complete->kind != Kind::kBool || !closed || closed->kind != Kind::kBool) {
    Bad("complete/closed are not bools");
  }
  s.complete = complete->b;
  s.closed = closed->b;
  const auto deadline = DictGet(d, "deadline");
  if (deadline && deadline->kind != Kind::kNone) s.deadline = TimeOf(deadline);
  ForPairs(DictGet(d, "participants"), "participants", [&](const PyRef& k, const PyRef& v) {
    s.participants[NodeOf(k)].rank = static_cast<int>(IntOf(v, "a rank"));
  });
  s.wait_list = NodeSet(DictGet(d, "wait_list"), "wait_list");
  s.redundancy_list = NodeSet(DictGet(d, "redundancy_list"), "redundancy_list");
  ForPairs(DictGet(d, "last_heartbeats"), "last_heartbeats",
           [&](const PyRef& k, const PyRef& v) { s.last_heartbeats[NodeOf(k)] = TimeOf(v); });
  if (const auto code = DictGet(d, "tzrun_closed_exit_code"); code && code->kind == Kind::kInt) {
    s.closed_exit_code = static_cast<int>(code->i);
  }
  if (const auto by = DictGet(d, "tzrun_closed_by"); by && by->kind == Kind::kStr) {
    s.closed_by = by->s;
  }
  if (const auto rc = DictGet(d, "tzrun_restart_counts"); rc && rc->kind == Kind::kDict) {
    ForPairs(rc, "tzrun_restart_counts", [&](const PyRef& k, const PyRef& v) {
      auto it = s.participants.find(NodeOf(k));
      if (it != s.participants.end())
        it->second.restart_count = static_cast<int>(IntOf(v, "count"));
    });
  }
  return s;
}

}  // namespace tzrun::rendezvous::detail
