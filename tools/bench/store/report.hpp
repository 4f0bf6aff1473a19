// tools/bench/store/report.hpp — what tzrun_store_bench was asked to run, what it measured per
// server, and the markdown table it prints on stdout (quoted by docs/performance.md and
// tools/bench/figures.json: keep the format).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "scale.hpp"
#include "scenarios.hpp"

namespace store_bench {

/// The command line (defaults as in tools/bench/store/README.md).
struct Options {
  std::string tzrun;
  std::string python;
  std::vector<int> mix_conns{1, 64, 1024};
  std::vector<int> rdzv{1000, 4000, 16000};
  int idle = 4096;
  double seconds = 3.0;
  double rdzv_timeout = 300.0;
  int repeat = 3;
  bool pin = true;
  std::vector<std::string> servers{"tzrun", "torch"};
  // --scale: only the many-process rendezvous (scale.hpp), a fresh server per client count.
  std::vector<int> scale;
  int procs = 4;
  double scale_timeout = 120.0;
  int connect_window = 0;
  bool scale_abort = false;  // --scale-abort: the abort shape (scale.hpp)
  int attach_port = 0;       // --attach PORT: no servers started; one --scale run against it
  int attach_first = 0;      // --attach-first K: clients 0 .. K-1 join from elsewhere
  std::string tag;           // --tag: key prefix /bench/scale<tag>/ (default: the pid)
};

struct ServerResults {
  IdleResult idle;
  std::vector<MixResult> mix;
  std::vector<RdzvResult> rdzv;
  std::vector<ScaleResult> scale;  // one per Options::scale entry
  long start_rss_kib = 0;
  long peak_rss_kib = 0;
};

using Results = std::vector<std::pair<std::string, ServerResults>>;

/// Markdown table: one column per server, then "tzrun vs X" for every other server (>1x means
/// tzrun is better: throughput tzrun/X; times, latency and memory X/tzrun).
void PrintTable(const Options& o, const Results& res);

}  // namespace store_bench
