// tools/bench/store/scenarios.hpp — the three load patterns of tzrun_store_bench, each run
// against one started server (servers.hpp) with the raw-protocol loader (loader.hpp):
//   idle  server RSS growth per idle, validated connection;
//   mix   closed-loop SET+GET / ADD cycles on C connections (throughput, p50/p99 latency);
//   rdzv  N clients connect at once, VALIDATE+PING, ADD a counter, the last one SETs a "done"
//         key, everyone WAITs on it and GETs it (torch's store-based barrier shape).
// `tag` makes each run's keys distinct on a server that is reused across runs.
#pragma once

#include <string>

#include "servers.hpp"

namespace store_bench {

struct IdleResult {
  int conns = 0;
  double bytes_per_conn = 0;
  long rss_before_kib = 0;
  long rss_after_kib = 0;
  bool ok = false;
};

IdleResult RunIdle(const ServerProc& s, int n);

struct MixResult {
  int conns = 0;
  double ops_per_s = 0;
  double server_cpu_us_per_op = 0;  // server CPU time / operations: efficiency, loader-independent
  double server_busy = 0;           // server CPU time / wall time (1.0 = one core saturated)
  double loader_busy = 0;           // the same for the loader thread (near 1.0: loader-bound)
  double p50_us = 0;
  double p99_us = 0;
  int errors = 0;
  bool ok = false;
};

// Each cycle: SET k (64 B, no reply; pipelined) + GET k -> blob, then ADD counter -> i64.
// Throughput counts all three operations; latency percentiles are over the GET and ADD round
// trips (SET has no reply to time).
MixResult RunMix(const ServerProc& s, int n, double seconds, int tag);

struct RdzvResult {
  int clients = 0;
  double open_s = 0;     // the loader's connect() calls (client side, not the server)
  double connect_s = 0;  // all clients connected + validated
  double add_s = 0;      // last ADD answered (the N-th arrival)
  double total_s = 0;    // every client got the released GET
  double release_s = 0;  // total - add: WAIT fan-out + GETs
  int retries = 0;
  long listen_overflows = -1;  // host-wide delta during the run
  int errors = 0;
  bool ok = false;
  std::string error;
};

RdzvResult RunRendezvous(const ServerProc& s, int n, double timeout_s, int tag);

}  // namespace store_bench
