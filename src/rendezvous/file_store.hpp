// tzrun rendezvous internals: torch's c10d FileStore as a store::Store — what torchrun's c10d
// backend uses under --rdzv-conf store_type=file (c10d_rendezvous_backend.py _create_file_store),
// so tzrun and torchrun agents (and Python's torch.distributed.FileStore) share one file.
//
// Same file operations as torch/csrc/distributed/c10d/FileStore.cpp: every call opens the file,
// takes flock (shared to read, exclusive to append), replays the records written since its last
// call (file_store_codec.hpp) and closes it again; waits poll every 10 ms (no inotify: it does not
// work on NFS). Opening a file that does not exist yet is retried until the call's timeout
// (reads; writers create it, mode 0644 less the umask). Creating the store counts it in
// "refcount/"; when the last handle of it goes, "cleanup/" +1 and "refcount/" -1, and the file is
// removed only when a world size was given (num_workers >= 0, never by the rendezvous) and was
// reached — torch's destructor.
// Differences from torch: a log that shrank or ends inside a record is a ConnectionError naming
// the file and offset (torch reads garbage or spins); delete_key() says whether the key existed
// (torch: always true); list_keys() returns the user keys without the "/" prefix (torch 2.11
// drops the first character of every key, its counters' included); append() is one exclusive
// append (torch: a compare_set loop, same result); queues and barrier throw StoreError (torch:
// not implemented). Clone() shares this process's view of the file (one refcount per
// MakeFileStore, like the one FileStore object of torchrun's agent).
//
// Errors: store::ConnectionError (the file cannot be opened, locked, read or written; it shrank
// or is corrupt), store::TimeoutError (get/wait, naming keys, file and duration).
// Thread-safety: calls are serialised per MakeFileStore (handles from Clone() share a mutex);
// several processes coordinate through flock.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tzrun/store/store.hpp"

namespace tzrun::rendezvous::detail {

/// FileStore(path, num_workers) with `timeout` for its blocking calls. Throws
/// store::ConnectionError naming the path and the reason.
[[nodiscard]] std::shared_ptr<store::Store> MakeFileStore(const std::string& path,
                                                          store::Duration timeout,
                                                          int num_workers = -1);

/// tempfile.mkstemp() as _create_file_store calls it without an endpoint: a new empty file
/// "tmp" + 8 of [a-z0-9_], mode 0600, in the first directory of $TMPDIR, $TEMP, $TMP, /tmp,
/// /var/tmp, /usr/tmp, the working directory where one can be created (Python's
/// tempfile.gettempdir()). Returns its absolute path; throws store::ConnectionError.
[[nodiscard]] std::string MakeTempStoreFile();

}  // namespace tzrun::rendezvous::detail
