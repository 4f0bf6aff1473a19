// nccl_probe — the NCCL half of docs/gloo-route.md: ProcessGroupNCCL.hpp compiles with
// USE_C10D_NCCL against the CUDA toolkit's nccl.h and links against the wheel's libtorch_cuda.so.
//
// Always: prints the nccl.h version compiled against, the libnccl version libtorch_cuda loaded,
// and ProcessGroupNCCL::Options defaults; fails (exit 1) when the two NCCL versions differ in
// major.minor (ProcessGroupNCCL::Options embeds ncclConfig_t by value, so its size must match).
// Without a CUDA device it then prints "SKIP nccl collectives: ..." and exits 0.
// With CUDA devices, under tzrun (one process per GPU: --nproc-per-node <= GPUs), it builds
// ProcessGroupNCCL on cuda:LOCAL_RANK over torch's store chain and runs the checks of
// probe_common.hpp on CUDA tensors. Exit status as in probe_common.hpp.
// `nccl_probe --layout` prints sizeof(ProcessGroupNCCL) and sizeof(ProcessGroupNCCL::Options) as
// this TU sees them, for check_layout.sh.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <nccl.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "probe_common.hpp"

int main(int argc, char** argv) {
  using namespace tzrun_probe;
  if (argc > 1 && std::string(argv[1]) == "--layout") {
    std::cout << "ProcessGroupNCCL " << sizeof(c10d::ProcessGroupNCCL) << "\n"
              << "ProcessGroupNCCL::Options " << sizeof(c10d::ProcessGroupNCCL::Options) << "\n";
    return 0;
  }
  const int compiled = NCCL_VERSION_CODE;
  const int loaded = c10d::getNcclVersionNumber();
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  std::cout << "nccl_probe nccl.h=" << NCCL_MAJOR << '.' << NCCL_MINOR << '.' << NCCL_PATCH
            << " libnccl=" << c10d::getNcclVersion()
            << " options.is_high_priority_stream=" << opts->is_high_priority_stream
            << " options.timeout_ms=" << opts->timeout.count() << std::endl;
  if (compiled / 100 != loaded / 100) {
    std::cerr << "nccl_probe: nccl.h " << compiled << " differs from the libnccl " << loaded
              << " that libtorch_cuda loaded; use the nccl.h of the nvidia-nccl wheel torch pins\n";
    return 1;
  }
  if (!at::cuda::is_available()) {
    std::cout << "SKIP nccl collectives: no CUDA device visible (compiled and linked OK)"
              << std::endl;
    return 0;
  }
  ProbeEnv env;
  c10::intrusive_ptr<c10d::Backend> backend;
  try {
    env = ReadEnv();
    if (env.local_rank >= c10::cuda::device_count()) {
      throw std::runtime_error("LOCAL_RANK " + std::to_string(env.local_rank) + " has no GPU (" +
                               std::to_string(c10::cuda::device_count()) +
                               " visible); launch at most one process per GPU");
    }
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
    opts->timeout = env.timeout;
    auto store = MakeStore(env, "cuda");
    backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world, opts);
    std::cout << "nccl_probe rank=" << env.rank << " world=" << env.world
              << " backend=" << backend->getBackendName() << " device=cuda:" << env.local_rank
              << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "nccl_probe: set-up failed: " << e.what() << '\n';
    return 2;
  }
  Checker ck(env, std::move(backend));
  RunAll(ck, env, at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank)));
  ck.Shutdown();
  return ck.ExitCode();
}
