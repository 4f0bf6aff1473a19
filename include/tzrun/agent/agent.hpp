// tzrun/agent/agent.hpp — the elastic agent: rendezvous with the other nodes, spawn and
// supervise the local worker group, restart it on failure, forward signals.
//
// Follows torchrun 2.11's LocalElasticAgent / SimpleElasticAgent
// (torch/distributed/elastic/agent/server/{api,local_elastic_agent}.py) and PContext
// (torch/distributed/elastic/multiprocessing/api.py), with these documented differences:
//   * exit status: 0 success; the root-cause worker's code (128+N when killed by signal N)
//     after the restarts are exhausted; 128+N when tzrun got handled signal N; 2 usage
//     (e.g. missing script), 125 infrastructure (store bind, log dir, fork), 126/127 when
//     the worker program cannot be executed / is not found. torchrun exits 1 for all.
//   * worker exits are seen the moment they happen (SIGCHLD via signalfd), not polled.
//   * no orphans: workers get PR_SET_PDEATHSIG(SIGKILL); tzrun is a child subreaper and,
//     when stopping a group, signals every worker's process group (grandchildren included)
//     and re-parented descendants; a guardian process SIGKILLs the worker process groups
//     if tzrun itself is killed with SIGKILL.
//   * a second handled signal during the shutdown grace period skips the rest of the grace
//     and SIGKILLs at once.
//   * a signal that was ignored when tzrun started (SIGHUP under nohup) stays ignored, for
//     tzrun and for the workers.
//   * TORCHELASTIC_ENABLE_FILE_TIMER=1: torchrun's file timer (src/agent/timer_server.hpp).
//     An expired timer kills its worker with the requested signal; then, as torchrun's
//     server kills its own agent, run() stops the group and ends the process by that signal
//     (it does not return) unless the signal is a handled one (then: 128+N as below).
//   * TORCHELASTIC_HEALTH_CHECK_PORT: an HTTP health check (src/agent/health_check.hpp) where
//     torchrun has a stub.
//   * the exit barrier's timeout is cfg.exit_barrier_timeout (--exit-barrier-timeout, torchrun's
//     LocalElasticAgent default 300 s); the node hosting the store waits on past it while a
//     slower node still runs healthy workers (include/tzrun/rendezvous/handler.hpp).
//   * stragglers (src/agent/straggler.hpp): one local worker still running
//     cfg.straggler_warning s after every other one exited 0 gets a warning; after
//     cfg.straggler_timeout s (when > 0) it is stopped and the group fails with it as the root
//     cause.
// Multi-node jobs go through tzrun::rendezvous (include/tzrun/rendezvous/handler.hpp):
// `static` (node 0's agent hosts the c10d-compatible store the agents and the workers use)
// and `c10d` / --standalone (elastic; round rank 0's agent hosts the workers' store). Ranks
// are assigned as torchrun does (role_info / assigned_ranks); workers connect to the agent
// store (TORCHELASTIC_USE_AGENT_STORE=True). Beyond torchrun: a worker failure on one node
// restarts every node (static: job-wide restart rounds with one TORCHELASTIC_RESTART_COUNT;
// c10d: membership changes), a node that gives up stops the others with its exit code, a
// lost rendezvous store ends the run with 125, and every restart gets a clean workers'
// store. Rendezvous errors exit 125 (usage errors in --rdzv-* 2; a node not needed 0).
// Restarts (src/agent/restart_policy.hpp): TORCHELASTIC_RESTART_COUNT is this agent's own
// failure-restart count, as torchrun's; membership restarts are counted and bounded by
// --max-membership-restarts (exit 125 beyond it, for the whole job); a failure whose error
// file says retryable "false", or whose exit code is in --no-restart-exit-codes, is not
// retried and stops every node (tzrun additions).
//
// Thread-safety: call run() at most once at a time per process; it changes process-wide
// state for its duration (signal mask, SIGPIPE disposition, child-subreaper flag) and reaps
// every child process of tzrun.
#pragma once

#include "tzrun/launch_config.hpp"

namespace tzrun::agent {

/// Runs the job described by `cfg` to completion and returns tzrun's exit status (see
/// above). Errors are reported on stderr ("tzrun: error: <what>; <what to do>") and mapped to
/// exit codes: a tzrun::Error (include/tzrun/error.hpp) ends with its ExitCode(), any other
/// exception is a tzrun bug ("tzrun: error: internal error: ...", exit 1); run() does not
/// throw for expected failures.
int Run(const LaunchConfig& cfg);

}  // namespace tzrun::agent
