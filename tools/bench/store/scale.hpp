// tools/bench/store/scale.hpp — the `--scale` scenario of tzrun_store_bench: a rendezvous of N
// clients (100k and more) against one server, the clients spread over several forked loader
// processes (scale_slice.hpp), each client a real TCP connection from a loopback source
// address 127.0.0.x. Every client connects, VALIDATEs + PINGs, ADDs a counter, the one that
// sees N SETs "done", and everyone WAITs on "done" and GETs it (c10d's store-based barrier).
// The coordinator starts the slices at one instant, follows their progress in shared memory,
// and measures the server's CPU time and peak RSS over the run.
#pragma once

#include <string>

#include "servers.hpp"

namespace store_bench {

struct ScaleOptions {
  int clients = 100000;    // N: clients of the rendezvous
  int first = 0;           // the loader runs clients first .. N-1 (others join elsewhere)
  int procs = 4;           // loader processes
  double timeout_s = 120;  // the run stops here; its counters say how far it got
  int connect_window = 0;  // connects in progress per loader process; 0 = no limit
  bool pin = true;         // loaders on CPU 1 (the server is on CPU 0)
  // The "abort" shape: nobody SETs "done"; once every ADD is answered (all N clients are
  // then in WAIT) every client disconnects (RST), as the ranks of a killed job do, and the
  // server's CPU time and the time until it idles measure the N disconnects of waiters.
  bool abort = false;
  std::string key_prefix;  // wire prefix of the counter and done keys, e.g. "/bench/scale1/"
};

struct ScaleResult {
  int clients = 0;
  int procs = 0;
  bool ok = false;                // every client finished
  std::string error;              // why not: "timeout after ..." or a client's first error
  double total_s = -1;            // the last client's GET answered (-1: not reached)
  double connects_issued_s = -1;  // every loader issued all its connect() calls
  double connect_s = -1;          // every client connected and validated
  double add_s = -1;              // the N-th ADD answered
  double release_s = -1;          // total - add: WAIT fan-out and the GETs
  int validated = 0, added = 0, released = 0, finished = 0, errors = 0, retries = 0;
  long listen_overflows = -1;                    // host-wide TcpExt ListenOverflows delta
  double server_user_s = -1, server_sys_s = -1;  // server CPU during the run
  double loader_cpu_s = -1;                      // all loader processes, user + system
  long server_start_rss_kib = -1;                // before the run
  long server_peak_rss_kib = -1;                 // VmHWM after the run (the whole process)
  double abort_cpu_s = -1;     // abort shape: server CPU from the disconnects until it idles
  double abort_settle_s = -1;  // abort shape: from the disconnects to its last busy tick
};

/// Runs one rendezvous of o.clients against the server listening on 127.0.0.1:port (`pid`
/// is the server's, for CPU and RSS; -1 skips those figures).
ScaleResult RunScale(std::uint16_t port, pid_t pid, const ScaleOptions& o);

/// One line for stderr: where the run stands (or ended).
std::string ScaleSummary(const ScaleResult& r);

}  // namespace store_bench
