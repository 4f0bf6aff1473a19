// tzrun rendezvous internals: RendezvousState <-> torchrun's pickled _RendezvousState
// (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py, _BackendRendezvousStateHolder
// pickle.dumps / pickle.loads), the encoding the etcd-v2 backend keeps in etcd so tzrun and
// torchrun agents can share one rendezvous.
//
// Mapping: round, complete, closed as they are; deadline and last_heartbeats are
// timezone-aware UTC datetimes (microseconds) <-> Unix seconds; participants is
// {_NodeDesc: rank}; wait_list / redundancy_list sets of _NodeDesc. tzrun's own fields ride
// along as extra instance attributes, which torchrun keeps untouched when it rewrites the
// state (pickle carries the whole __dict__): tzrun_closed_exit_code (int or None),
// tzrun_closed_by (str), tzrun_restart_counts ({_NodeDesc: int}). A state written by
// torchrun lacks them: no exit code, restart counts 0. `version` is not stored (the etcd
// modifiedIndex plays that role).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "tzrun/rendezvous/dynamic_rendezvous.hpp"

namespace tzrun::rendezvous::detail {

/// Pickle (protocol 4) of `s` as torchrun's _RendezvousState.
[[nodiscard]] std::string EncodeTorchState(const RendezvousState& s);

/// Decodes a pickled _RendezvousState; throws RendezvousStateError naming what is wrong.
[[nodiscard]] RendezvousState DecodeTorchState(std::string_view pickle);

/// Unix seconds -> datetime's 10-byte pickle state (UTC) and back (`offset_s` east of UTC).
[[nodiscard]] std::string DatetimeBytes(double unix_seconds);
[[nodiscard]] double DatetimeSeconds(std::string_view bytes10, double offset_s);

}  // namespace tzrun::rendezvous::detail
