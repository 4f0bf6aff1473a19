// Minimal launch-benchmark worker: connect to the launcher's store
// (MASTER_ADDR:MASTER_PORT), ADD 1 to a per-attempt counter, WAIT until all
// WORLD_SIZE workers arrived, record the time the barrier was passed.
// With BENCH_CRASH=1, local rank 0 of attempt 0 records the time and exits 1
// at once, so the launcher restarts the group (crash->restart figure).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tzrun/store/client.hpp"

namespace {
std::string Env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}
double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}
void Mark(const std::string& path) {
  std::ofstream(path) << std::to_string(Now());
}
}  // namespace

int main() {
  const std::string out = Env("BENCH_OUT", "/tmp");
  const std::string attempt = Env("TORCHELASTIC_RESTART_COUNT", "0");
  const std::string rank = Env("RANK", "0");
  if (Env("BENCH_CRASH") == "1" && attempt == "0" && Env("LOCAL_RANK") == "0") {
    Mark(out + "/crash");
    return 1;
  }
  tzrun::store::ClientOptions opts;
  opts.host = Env("MASTER_ADDR", "127.0.0.1");
  opts.port = static_cast<std::uint16_t>(std::stoi(Env("MASTER_PORT", "29500")));
  opts.timeout = std::chrono::seconds(60);
  opts.initial_backoff = std::chrono::milliseconds(10);
  tzrun::store::Client store(opts);
  const std::string key = "bench/attempt_" + attempt;
  const auto world = std::stoll(Env("WORLD_SIZE", "1"));
  if (store.Add(key + "/count", 1) == world) store.Set(key + "/done", "1");
  store.Wait({key + "/done"});
  Mark(out + "/barrier-" + attempt + "-" + rank);
  return 0;
}
