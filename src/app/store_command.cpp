// Placeholder, replaced by the store component shortly.
#include "store_command.hpp"

#include <cstdio>

namespace tzrun::app {
int store_main(int /*argc*/, char** /*argv*/) {
  std::fputs("tzrun store: not implemented yet\n", stderr);
  return 125;
}
}  // namespace tzrun::app
