// tzrun/store/errors.hpp — exceptions thrown by the store library.
//
// All derive from StoreError (a std::runtime_error); messages name what failed, the value
// involved (host:port, keys, durations) and what to do about it. Mirrors c10d's split into
// DistStoreError (timeouts) and DistNetworkError (connection problems).
#pragma once

#include <stdexcept>
#include <string>

namespace tzrun::store {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The server could not bind or listen (port in use, permission, bad host).
class BindError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// A blocking operation (connect, wait, get, barrier, ...) did not finish before its deadline.
class TimeoutError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// The connection to the server failed or broke (reset, EOF, invalid reply). A broken client
/// stays broken: like c10d's TCPStore it never reconnects; make a new Client (or clone()).
class ConnectionError : public StoreError {
 public:
  using StoreError::StoreError;
};

}  // namespace tzrun::store
