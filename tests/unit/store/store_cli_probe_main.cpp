// Test-only executable: `tzrun_store_cli_probe ARGS` behaves like `tzrun store ARGS`.
#include "store_command.hpp"

int main(int argc, char** argv) {
  // store_main expects argv[0] == "store", as dispatched by tzrun's main.
  char store_name[] = "store";
  argv[0] = store_name;
  return tzrun::app::StoreMain(argc, argv);
}
