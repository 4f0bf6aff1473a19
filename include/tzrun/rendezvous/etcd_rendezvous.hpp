// tzrun/rendezvous/etcd_rendezvous.hpp — the legacy `etcd` backend: torchrun's
// EtcdRendezvous (torch/distributed/elastic/rendezvous/etcd_rendezvous.py), so tzrun and
// torchrun agents can share one such rendezvous.
//
// Same protocol as upstream, under <etcd_prefix>run_<run_id>/ (a directory with a 2 h ttl
// the agents keep renewing): rdzv/version_counter, rdzv/active_version (the JSON state of
// src/rendezvous/etcd_legacy_ops.hpp), rdzv/v_<version>/rank_<r> (10 s keep-alive keys the
// participants renew every 5 s) and rdzv/v_<version>/kv (the round store, torch's EtcdStore
// layout). A round: create (setup -> joinable), join (ranks in join order; frozen at MAX,
// or `last_call_timeout` after MIN joined, by rank MIN-1), confirm (frozen -> final once
// every participant wrote its keep-alive key). A node that finds a final round announces
// itself waiting (num_workers_waiting + 1) and waits until the round is replaced, or
// destroys it when a participant's keep-alive key expired. Every next_rendezvous is bounded
// by `timeout` (600 s).
//
// As in torchrun: node ranks follow the join order; the round store is the EtcdStore itself
// (no prefix); rank 0 publishes MASTER_ADDR (--local-addr or the FQDN) and MASTER_PORT in it;
// a running node restarts its workers when the watcher sees nodes waiting; shutdown closes
// the rendezvous. Differences: round rank 0's agent hosts the workers' TCPStore on that port
// (torchrun's legacy handler leaves it to worker rank 0, TORCHELASTIC_USE_AGENT_STORE=False;
// both kinds of workers meet on MASTER_ADDR:MASTER_PORT either way); a node that fails for
// good closes the rendezvous with its exit code ("tzrun_exit_code" in the state) so the other
// nodes stop with it; the watcher also reports a round that was destroyed or replaced and a
// lost etcd (exit 125); every etcd request is bounded by read_timeout.
//
// Thread-safety: see handler.hpp.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "tzrun/rendezvous/handler.hpp"
#include "tzrun/rendezvous/params.hpp"
#include "tzrun/store/log.hpp"

namespace tzrun::rendezvous {

struct EtcdOptions {
  std::string run_id;
  int min_nodes = 1;
  int max_nodes = 1;
  Endpoint endpoint{"localhost", 2379};
  EtcdTls tls;                               ///< http or https with certificates (params.hpp)
  std::string prefix = "/torchelastic/p2p";  ///< rdzv-conf etcd_prefix
  /// MASTER_ADDR published by round rank 0 (--local-addr or the FQDN). Must not be empty.
  std::string local_addr;
  std::chrono::milliseconds timeout = std::chrono::seconds(600);  ///< rdzv-conf timeout
  std::chrono::milliseconds last_call_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);  ///< each etcd request
  /// The watcher's period between reads of the rendezvous state (--monitor-interval; the agent
  /// passes it, torchrun checks num_nodes_waiting every monitor tick).
  std::chrono::milliseconds poll_interval = std::chrono::seconds(1);
  store::LogSink log;
};

/// Creates the handler; construction creates the run's directories in etcd (retrying until
/// `timeout` while etcd does not answer). Throws ConfigError for bad options,
/// RendezvousConnectionError when etcd cannot be reached.
[[nodiscard]] std::unique_ptr<Handler> MakeEtcdRendezvous(EtcdOptions options,
                                                          const Interrupt& interrupt = {});

}  // namespace tzrun::rendezvous
