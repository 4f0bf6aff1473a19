// torch_store_client — libtorch's c10d::TCPStore as a client of a store server.
//
// Usage: torch_store_client HOST PORT
// Runs every operation c10d::TCPStore offers (torch/csrc/distributed/c10d/TCPStore.hpp, 2.11)
// against the server at HOST:PORT with isServer=false, and prints one "name value" line per
// result (values are printed with C-style escapes). tests/integration/
// test_store_libtorch_client.py asserts on them. Exit code 0 = every call returned/threw as
// printed; 1 = an unexpected exception (message on stderr).
#include <torch/csrc/distributed/c10d/exception.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;
using std::chrono::milliseconds;

Bytes B(const std::string& s) {
  return Bytes(s.begin(), s.end());
}

std::string Esc(const Bytes& b) {
  std::string out;
  for (uint8_t c : b) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

void Print(const std::string& name, const std::string& value) {
  std::cout << name << ' ' << value << '\n' << std::flush;
}
void Print(const std::string& name, const Bytes& value) {
  Print(name, Esc(value));
}
void Print(const std::string& name, int64_t value) {
  Print(name, std::to_string(value));
}
void PrintBool(const std::string& name, bool value) {
  Print(name, value ? "true" : "false");
}

template <class F>
void ExpectThrow(const std::string& name, F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  std::string what = "none";
  try {
    f();
  } catch (const c10::DistQueueEmptyError&) {
    what = "DistQueueEmptyError";
  } catch (const c10::DistStoreError&) {
    what = "DistStoreError";
  } catch (const c10::DistNetworkError&) {
    what = "DistNetworkError";
  } catch (const c10::Error&) {
    what = "c10::Error";
  }
  auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
  Print(name, what + " " + std::to_string(ms.count()));
}

// Each step below prints its results in script order.

/// GET/SET (binary), ADD, COMPARE_SET, CHECK.
void GetSetAddCas(c10d::TCPStore& store) {
  store.set("k", B("v1"));
  Print("get", store.get("k"));
  store.set("k", B(std::string("a\0b", 3)));
  Print("get_binary", store.get("k"));

  Print("add1", store.add("cnt", 5));
  Print("add2", store.add("cnt", -7));
  Print("add_stored", store.get("cnt"));

  Print("cas_missing_empty", store.compareSet("cas1", {}, B("new")));
  Print("cas_missing_lie", store.compareSet("cas2", B("exp"), B("new")));
  PrintBool("cas_missing_lie_stored", store.check({"cas2"}));
  store.set("cas3", B("old"));
  Print("cas_match", store.compareSet("cas3", B("old"), B("new")));
  Print("cas_mismatch", store.compareSet("cas3", B("zzz"), B("newer")));

  PrintBool("check_present", store.check({"k", "cnt"}));
  PrintBool("check_missing", store.check({"k", "nope"}));
}

/// WAIT: on present keys, timing out, and released by another connection (clone()).
void Waits(c10d::TCPStore& store) {
  store.wait({"k", "cnt"}, milliseconds(1000));
  Print("wait_present", "ok");
  ExpectThrow("wait_timeout", [&] { store.wait({"nope"}, milliseconds(500)); });
  {  // WAIT released by another connection (clone()), then GET.
    auto other = store.clone();
    std::thread setter([&] {
      std::this_thread::sleep_for(milliseconds(200));
      other->set("late", B("arrived"));
    });
    auto t0 = std::chrono::steady_clock::now();
    store.wait({"late"}, milliseconds(20000));
    auto ms =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
    setter.join();
    Print("wait_released",
          std::string(ms >= 150 ? "late" : "early") + " " + Esc(store.get("late")));
  }
}

/// NUM_KEYS, DELETE, APPEND, MULTI_SET / MULTI_GET.
void KeysAppendMulti(c10d::TCPStore& store) {
  const int64_t n0 = store.getNumKeys();
  store.set("extra", B("x"));
  Print("num_keys_delta", store.getNumKeys() - n0);
  PrintBool("delete_present", store.deleteKey("extra"));
  PrintBool("delete_missing", store.deleteKey("extra"));
  Print("num_keys_after_delete", store.getNumKeys() - n0);

  store.append("ap", B("ab"));
  store.append("ap", B("cd"));
  Print("append", store.get("ap"));

  store.multiSet({"m1", "m2"}, {B("one"), B("two")});
  std::string mg;
  for (const auto& v : store.multiGet({"m2", "m1", "ap"})) mg += Esc(v) + ",";
  Print("multi_get", mg);
}

/// QUEUE_PUSH / QUEUE_POP / QUEUE_LEN, blocking and not.
void Queues(c10d::TCPStore& store) {
  Print("queue_len_empty", store.queueLen("q"));
  store.queuePush("q", B("a"));
  store.queuePush("q", B("b"));
  Print("queue_len", store.queueLen("q"));
  Print("queue_pop_block", store.queuePop("q", true));
  Print("queue_pop_nonblock", store.queuePop("q", false));
  ExpectThrow("queue_pop_empty", [&] { store.queuePop("q", false); });
  {
    auto other = store.clone();
    std::thread pusher([&] {
      std::this_thread::sleep_for(milliseconds(200));
      other->queuePush("bq", B("pushed"));
    });
    Print("queue_pop_blocking_wait", store.queuePop("bq", true));
    pusher.join();
  }
}

int Run(const std::string& host, uint16_t port) {
  c10d::TCPStoreOptions opts;
  opts.port = port;
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = milliseconds(30000);
  c10d::TCPStore store(host, opts);
  GetSetAddCas(store);
  Waits(store);
  KeysAppendMulti(store);
  Queues(store);
  auto keys = store.listKeys();
  std::sort(keys.begin(), keys.end());
  std::string joined;
  for (const auto& k : keys) joined += k + ",";
  Print("list_keys", joined);
  PrintBool("has_extended_api", store.hasExtendedApi());
  Print("done", "ok");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " HOST PORT\n";
    return 2;
  }
  try {
    return Run(argv[1], static_cast<uint16_t>(std::atoi(argv[2])));
  } catch (const std::exception& e) {
    std::cerr << "torch_store_client: unexpected exception: " << e.what() << '\n';
    return 1;
  }
}
