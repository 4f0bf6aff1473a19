// tzrun/src/app/store_command.hpp — `tzrun store`: run a standalone c10d-compatible store.
#pragma once

namespace tzrun::app {

/// Entry point of `tzrun store [options]`; argv[0] is "store". Returns the process exit code:
/// 0 after a clean SIGTERM/SIGINT shutdown, 2 for bad flags, 125 when the store cannot start.
int StoreMain(int argc, char** argv);

}  // namespace tzrun::app
