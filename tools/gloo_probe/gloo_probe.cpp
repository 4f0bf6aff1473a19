// gloo_probe — proof that our libtorch programs reach c10d::ProcessGroupGloo (docs/gloo-route.md).
//
// Run under the launcher, e.g.
//   tzrun --nproc-per-node=3 --no-python build-gloo/gloo_probe
// Builds ProcessGroupGloo(store, RANK, WORLD_SIZE, Options::create_default(timeout)) on torch's
// store chain and runs the checks of probe_common.hpp on CPU tensors. Exit status: 0 all passed;
// 1 a result differed; 2 set-up failed or a collective threw.
// `gloo_probe --layout` prints sizeof(ProcessGroupGloo) and sizeof(ProcessGroupGloo::Options) as
// this TU sees them, one "<type> <bytes>" line each, for check_layout.sh.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "probe_common.hpp"

int main(int argc, char** argv) {
  using namespace tzrun_probe;
  if (argc > 1 && std::string(argv[1]) == "--layout") {
    // Sizes this TU computed from the headers; check_layout.sh compares them with the sizes
    // libtorch_cpu.so allocates (operator new in ProcessGroupGloo::split /
    // Options::create_default).
    std::cout << "ProcessGroupGloo " << sizeof(c10d::ProcessGroupGloo) << "\n"
              << "ProcessGroupGloo::Options " << sizeof(c10d::ProcessGroupGloo::Options) << "\n";
    return 0;
  }
  ProbeEnv env;
  c10::intrusive_ptr<c10d::Backend> backend;
  try {
    env = ReadEnv();
    auto store = MakeStore(env, "cpu");
    auto options = c10d::ProcessGroupGloo::Options::create_default(env.timeout);
    backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world, options);
    std::cout << "gloo_probe rank=" << env.rank << " world=" << env.world
              << " backend=" << backend->getBackendName() << " timeout_ms=" << env.timeout.count()
              << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "gloo_probe: set-up failed: " << e.what() << '\n';
    return 2;
  }
  Checker ck(env, std::move(backend));
  RunAll(ck, env, at::Device(at::kCPU));
  ck.Shutdown();
  return ck.ExitCode();
}
