// store_script — a fixed script of store operations through tzrun::store::Client, one JSON line.
//
// Usage: store_script HOST PORT [--no-queues] [--barrier]
// Runs the same operations in the same order against any c10d-compatible server and prints
// {"op": result, ...} on one line, so tests/integration/test_store_our_client_vs_torch.py can
// compare our server with PyTorch's libuv and legacy servers. Results hold no timings: a
// blocking call that runs out of time is recorded as "TimeoutError", a broken connection as
// "ConnectionError". --no-queues skips QUEUE_* (the legacy server closes the connection on
// them); --barrier adds the BARRIER opcode (PyTorch 2.12+ servers, not 2.11).
// Exit code: 0 = script ran to the end; 1 = an unexpected exception; 2 = usage.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tzrun/store/client.hpp"
#include "tzrun/store/errors.hpp"
#include "tzrun/store/store.hpp"

namespace {

using nlohmann::ordered_json;
using std::chrono::milliseconds;
using tzrun::store::Client;
using tzrun::store::ClientOptions;

/// JSON cannot hold arbitrary bytes: printable ASCII stays, anything else becomes \xNN.
std::string Esc(std::string_view b) {
  std::string out;
  for (unsigned char c : b) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

ordered_json Strings(std::vector<std::string> v, bool sort = false) {
  if (sort) std::sort(v.begin(), v.end());
  ordered_json out = ordered_json::array();
  for (const auto& s : v) out.push_back(Esc(s));
  return out;
}

/// Runs f; returns its JSON result, or the error class when it throws a store error.
template <class F>
ordered_json Try(F&& f) {
  try {
    return f();
  } catch (const tzrun::store::TimeoutError&) {
    return "TimeoutError";
  } catch (const tzrun::store::ConnectionError&) {
    return "ConnectionError";
  }
}

/// Starts `waiter` waiting on `key` (timeout `ms`), runs `act` on another connection after
/// 150 ms, returns "released" or "TimeoutError".
template <class A>
ordered_json WaitReleasedBy(Client& waiter, Client& actor, const std::string& key, int ms,
                            A&& act) {
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(150));
    act(actor);
  });
  ordered_json r = Try([&]() -> ordered_json {
    waiter.Wait({key}, milliseconds(ms));
    return "released";
  });
  t.join();
  return r;
}

// Each step below appends its results to `r` in script order; `c` runs the operations,
// `other` is the second connection that releases waits and queue pops.

/// GET/SET (binary, 100 kB, missing key), ADD, COMPARE_SET.
void GetSetAddCas(Client& c, ordered_json& r) {
  c.Set("k", "v1");
  r["get"] = Esc(c.Get("k"));
  c.Set("k", std::string("a\0b", 3));
  r["get_binary"] = Esc(c.Get("k"));
  const std::string big(100000, 'z');
  c.Set("big", big);
  r["get_big_ok"] = c.Get("big") == big;
  r["get_missing_timeout"] =
      Try([&]() -> ordered_json { return Esc(c.Get("nope", milliseconds(300))); });

  r["add1"] = c.Add("cnt", 5);
  r["add2"] = c.Add("cnt", -7);
  r["add_read"] = c.Add("cnt", 0);
  r["add_stored"] = Esc(c.Get("cnt"));
  c.Set("num", "40");
  r["add_on_set"] = c.Add("num", 2);

  r["cas_missing_empty"] = Esc(c.CompareSet("cas1", "", "new"));
  r["cas_missing_lie"] = Esc(c.CompareSet("cas2", "exp", "new"));
  r["cas_missing_lie_stored"] = c.Check({"cas2"});
  c.Set("cas3", "old");
  r["cas_match"] = Esc(c.CompareSet("cas3", "old", "new"));
  r["cas_mismatch"] = Esc(c.CompareSet("cas3", "zzz", "newer"));
  r["cas_after"] = Esc(c.Get("cas3"));
}

/// CHECK and WAIT, released by each kind of write from the other connection.
void CheckAndWait(Client& c, Client& other, ordered_json& r) {
  r["check_present"] = c.Check({"k", "cnt"});
  r["check_missing"] = c.Check({"k", "nope"});
  r["check_empty"] = c.Check({});

  r["wait_present"] = Try([&]() -> ordered_json {
    c.Wait({"k", "cnt"}, milliseconds(1000));
    return "ok";
  });
  r["wait_timeout"] = Try([&]() -> ordered_json {
    c.Wait({"k", "nope"}, milliseconds(300));
    return "ok";
  });
  r["wait_by_set"] =
      WaitReleasedBy(c, other, "w_set", 20000, [](Client& a) { a.Set("w_set", "1"); });
  r["wait_by_add"] = WaitReleasedBy(c, other, "w_add", 20000, [](Client& a) { a.Add("w_add", 1); });
  r["wait_by_append"] =
      WaitReleasedBy(c, other, "w_app", 20000, [](Client& a) { a.Append("w_app", "x"); });
  r["wait_by_multi_set"] = WaitReleasedBy(c, other, "w_ms", 20000, [](Client& a) {
    a.MultiSet({"w_ms_other", "w_ms"}, {"1", "2"});
  });
  // compare_set that stores a value: the libuv server wakes waiters, the legacy one never does.
  r["wait_by_cas_store"] = WaitReleasedBy(c, other, "w_cas", 1500,
                                          [](Client& a) { (void)a.CompareSet("w_cas", "", "v"); });
  // compare_set that stores nothing (missing key, non-empty expected): libuv wakes the waiter
  // anyway (upstream bug, see docs/store.md); tzrun and legacy do not.
  r["wait_by_cas_lie"] = WaitReleasedBy(c, other, "w_lie", 800,
                                        [](Client& a) { (void)a.CompareSet("w_lie", "exp", "v"); });
  r["w_lie_exists"] = c.Check({"w_lie"});
}

/// NUM_KEYS, DELETE, APPEND, MULTI_SET / MULTI_GET.
void KeysAppendMulti(Client& c, ordered_json& r) {
  const std::int64_t n0 = c.NumKeys();
  c.Set("extra", "x");
  r["num_keys_delta"] = c.NumKeys() - n0;
  r["delete_present"] = c.DeleteKey("extra");
  r["delete_missing"] = c.DeleteKey("extra");
  r["num_keys_after_delete"] = c.NumKeys() - n0;

  c.Append("ap", "ab");
  c.Append("ap", "cd");
  c.Append("ap", "");
  r["append"] = Esc(c.Get("ap"));

  c.MultiSet({"m1", "m2", "m3"}, {"one", "two", ""});
  r["multi_get"] = Strings(c.MultiGet({"m3", "m1", "m2", "m1"}));
  r["multi_get_none"] = Strings(c.MultiGet({}));
  r["multi_get_missing_timeout"] = Try([&]() -> ordered_json {
    return Strings(c.MultiGet({"m1", "nope"}, milliseconds(300)));
  });
}

/// PrefixStore composition (as init_process_group builds it) seen through raw wire keys.
void Prefixes(const ClientOptions& o, ordered_json& r) {
  auto shared = std::make_shared<Client>(o);
  tzrun::store::PrefixStore pg(
      "cpu/", std::make_shared<tzrun::store::PrefixStore>(
                  "0/", std::make_shared<tzrun::store::PrefixStore>("default_pg", shared)));
  pg.Set("0", "uid");
  r["prefix_raw_get"] = Esc(shared->WithKeyPrefix("").Get("/default_pg/0//cpu//0"));
  r["prefix_list_keys"] = Strings(pg.ListKeys(), true);
}

/// QUEUE_PUSH / QUEUE_POP / QUEUE_LEN (not on the legacy server).
void Queues(Client& c, Client& other, ordered_json& r) {
  const std::int64_t nq0 = c.NumKeys();
  r["queue_len_empty"] = c.QueueLen("q");
  c.QueuePush("q", "a");
  c.QueuePush("q", "b");
  c.QueuePush("q", "");
  r["queue_len"] = c.QueueLen("q");
  r["queue_pop"] = Esc(c.QueuePop("q"));
  auto p = c.TryQueuePop("q");
  r["queue_try_pop"] = p ? ordered_json(Esc(*p)) : ordered_json(nullptr);
  r["queue_pop_empty_value"] = Esc(c.QueuePop("q"));
  auto e = c.TryQueuePop("q");
  r["queue_try_pop_empty"] = e ? ordered_json(Esc(*e)) : ordered_json(nullptr);
  r["queue_pop_timeout"] =
      Try([&]() -> ordered_json { return Esc(c.QueuePop("q", milliseconds(300))); });
  r["queue_check_nonempty"] = [&] {
    c.QueuePush("qc", "x");
    return c.Check({"qc"});
  }();
  {
    std::thread pusher([&] {
      std::this_thread::sleep_for(milliseconds(150));
      other.QueuePush("bq", "pushed");
    });
    r["queue_pop_blocking"] =
        Try([&]() -> ordered_json { return Esc(c.QueuePop("bq", milliseconds(20000))); });
    pusher.join();
  }
  r["queue_num_keys_unchanged"] = c.NumKeys() - nq0;  // queues are not keys
}

/// BARRIER between the two connections (PyTorch 2.12+ servers).
void Barrier(Client& c, Client& other, ordered_json& r) {
  std::thread t([&] { other.Barrier("bar", 2, milliseconds(20000)); });
  r["barrier"] = Try([&]() -> ordered_json {
    c.Barrier("bar", 2, milliseconds(20000));
    return "ok";
  });
  t.join();
  r["barrier_counter"] = Esc(c.Get("bar"));
}

int Run(const std::string& host, std::uint16_t port, bool queues, bool barrier) {
  ClientOptions o;
  o.host = host;
  o.port = port;
  o.timeout = milliseconds(30000);
  Client c(o);
  Client other(o);
  ordered_json r;
  GetSetAddCas(c, r);
  CheckAndWait(c, other, r);
  KeysAppendMulti(c, r);
  Prefixes(o, r);
  if (queues) Queues(c, other, r);
  if (barrier) Barrier(c, other, r);
  r["list_keys"] = Strings(c.ListKeys(), true);
  r["raw_list_keys"] = Strings(c.WithKeyPrefix("").ListKeys(), true);
  r["num_keys"] = c.NumKeys();
  r["still_connected"] = c.Connected() && other.Connected();
  std::cout << r.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " HOST PORT [--no-queues] [--barrier]\n";
    return 2;
  }
  bool queues = true;
  bool barrier = false;
  for (int i = 3; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--no-queues") {
      queues = false;
    } else if (a == "--barrier") {
      barrier = true;
    } else {
      std::cerr << "store_script: unknown option '" << a << "'; use --no-queues or --barrier\n";
      return 2;
    }
  }
  try {
    return Run(argv[1], static_cast<std::uint16_t>(std::atoi(argv[2])), queues, barrier);
  } catch (const std::exception& e) {
    std::cerr << "store_script: unexpected exception: " << e.what() << '\n';
    return 1;
  }
}
