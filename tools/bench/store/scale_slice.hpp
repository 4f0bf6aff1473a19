// tools/bench/store/scale_slice.hpp — one loader process of the `--scale` rendezvous: a slice
// of the clients, each a real TCP connection speaking the c10d TCPStore protocol as torch's
// TCPStore client does (VALIDATE + PING handshake, then ADD on a counter; the client whose ADD
// returns N SETs "done"; everyone WAITs on "done" and then GETs it, as TCPStore::get does).
//
// Light on purpose: 100k clients are spread over several such processes on the machine that
// also runs the server, so a client is 24 bytes of state plus its socket, requests are
// encoded once per slice, and one epoll loop with non-blocking sockets drives them all. The
// slice publishes its progress in a SliceProgress that lives in memory shared with the
// coordinator (scale.cpp), which reads it while the run goes and after the process exits.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace store_bench {

/// Progress of one slice, in shared memory (MAP_SHARED, written by the slice only).
/// Times are CLOCK_MONOTONIC nanoseconds (std::chrono::steady_clock), comparable across
/// processes; 0 = not reached.
struct SliceProgress {
  std::atomic<int> validated{0};  // connected and the PING echo came back
  std::atomic<int> added{0};      // ADD answered
  std::atomic<int> released{0};   // STOP_WAITING received
  std::atomic<int> finished{0};   // GET answered with the "done" value
  std::atomic<int> errors{0};
  std::atomic<int> retries{0};  // connects retried after refused / reset / timed out
  std::atomic<std::int64_t> last_validated_ns{0};
  std::atomic<std::int64_t> nth_add_ns{0};  // this slice got the ADD reply N (it SET "done")
  std::atomic<std::int64_t> last_added_ns{0};
  std::atomic<std::int64_t> last_finished_ns{0};
  std::atomic<std::int64_t> all_started_ns{0};  // every connect() of the slice issued
  std::atomic<int> exited{0};  // the slice is done (all finished, failed or out of time)
  char first_error[160] = {};
};

/// What one slice runs: clients `first .. first + count - 1` of a rendezvous of `total`.
struct SliceSpec {
  std::uint16_t port = 0;
  int total = 0;
  int first = 0;
  int count = 0;
  std::string count_key;  // wire keys, with TCPStore's "/" prefix
  std::string done_key;
  std::int64_t deadline_ns = 0;  // give up then (steady_clock)
  int connect_window = 0;        // connects in progress at once; 0 = all at once
  bool abort = false;            // nobody SETs "done": everyone stays in WAIT until the slice stops
};

/// Client `id` connects from 127.0.0.(1 + id / kScaleClientsPerSource): from one source
/// address, connect() slows down quadratically in the kernel once the ephemeral port range
/// gets crowded (tools/bench/store/README.md).
constexpr int kScaleClientsPerSource = 8192;

/// Runs the slice, publishing into `progress`, until `stop` becomes non-zero (the coordinator
/// sets it once every slice finished, so all N connections stay open until the end, as a
/// job's ranks keep theirs) or the deadline passes. The sockets are closed with RST at the end.
void RunSlice(const SliceSpec& spec, SliceProgress& progress, const std::atomic<int>& stop);

}  // namespace store_bench
