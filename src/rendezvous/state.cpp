// NodeDesc (see dynamic_rendezvous.hpp); the state itself is torchrun's pickle (torch_state.hpp).
#include "tzrun/rendezvous/dynamic_rendezvous.hpp"

namespace tzrun::rendezvous {

std::string NodeDesc::Str() const {
  return addr + "_" + std::to_string(pid) + "_" + std::to_string(local_id);
}

}  // namespace tzrun::rendezvous
