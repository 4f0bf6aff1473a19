// dense_sync.cpp — DenseSync (include/tzrec/comm/comm.hpp): DDP's bucketed parameter broadcast
// and gradient averaging over a Comm.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <string>
#include <utility>

#include "tzrec/comm/comm.hpp"

namespace tzrec {

namespace {

// Consecutive parameters of one dtype and device, at most `bucket_bytes` together (a parameter
// larger than that gets a bucket of its own), as DDP's buckets.
std::vector<std::vector<std::size_t>> MakeBuckets(const std::vector<at::Tensor>& params,
                                                  std::int64_t bucket_bytes) {
  std::vector<std::vector<std::size_t>> buckets;
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    const std::int64_t nbytes = p.numel() * static_cast<std::int64_t>(p.element_size());
    bool fresh = buckets.empty();
    if (!fresh) {
      const at::Tensor& first = params[buckets.back().front()];
      fresh = first.scalar_type() != p.scalar_type() || first.device() != p.device() ||
              bytes + nbytes > bucket_bytes;
    }
    if (fresh) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += nbytes;
  }
  return buckets;
}

}  // namespace

DenseSync::DenseSync(std::shared_ptr<Comm> comm, std::vector<at::Tensor> parameters,
                     std::int64_t bucket_bytes)
    : comm_(std::move(comm)), parameters_(std::move(parameters)), bucket_bytes_(bucket_bytes) {
  if (!comm_) throw CommError("DenseSync: comm is null; pass the Comm from Comm::Init");
  if (bucket_bytes_ < 1) {
    throw CommError("DenseSync: bucket_bytes " + std::to_string(bucket_bytes_) +
                    " must be positive (DDP's default is 25 MiB)");
  }
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i];
    if (!p.defined()) {
      throw CommError("DenseSync: parameter " + std::to_string(i) +
                      " is undefined; pass only defined tensors");
    }
    if (!at::isFloatingType(p.scalar_type())) {
      throw CommError("DenseSync: parameter " + std::to_string(i) + " has dtype " +
                      std::string(c10::toString(p.scalar_type())) +
                      "; only floating-point parameters can be averaged");
    }
  }
}

void DenseSync::BroadcastParameters(int root) {
  if (comm_->WorldSize() == 1) return;
  c10::NoGradGuard no_grad;
  for (const auto& bucket : MakeBuckets(parameters_, bucket_bytes_)) {
    std::vector<at::Tensor> flat;
    flat.reserve(bucket.size());
    for (std::size_t i : bucket) flat.push_back(parameters_[i].detach().reshape({-1}));
    at::Tensor buffer = at::cat(flat, 0);
    comm_->Broadcast(buffer, root);
    std::int64_t at_offset = 0;
    for (std::size_t i : bucket) {
      at::Tensor& p = parameters_[i];
      const std::int64_t n = p.numel();
      p.detach().copy_(buffer.narrow(0, at_offset, n).view(p.sizes()));
      at_offset += n;
    }
  }
}

void DenseSync::AllReduceGradients() {
  c10::NoGradGuard no_grad;
  const double world = comm_->WorldSize();
  for (const auto& bucket : MakeBuckets(parameters_, bucket_bytes_)) {
    std::vector<at::Tensor> flat;
    flat.reserve(bucket.size());
    for (std::size_t i : bucket) {
      const at::Tensor& p = parameters_[i];
      const at::Tensor& g = p.grad();
      if (!g.defined()) {
        flat.push_back(at::zeros({p.numel()}, p.options()));
      } else {
        if (g.is_sparse()) {
          throw CommError("DenseSync::AllReduceGradients: parameter " + std::to_string(i) +
                          " has a sparse gradient; DenseSync averages dense gradients only");
        }
        flat.push_back(g.detach().reshape({-1}));
      }
    }
    at::Tensor buffer = at::cat(flat, 0);
    comm_->AllReduceSum(buffer);
    buffer.div_(world);
    std::int64_t at_offset = 0;
    for (std::size_t i : bucket) {
      at::Tensor& p = parameters_[i];
      const std::int64_t n = p.numel();
      at::Tensor avg = buffer.narrow(0, at_offset, n).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().detach().copy_(avg);
      } else {
        p.mutable_grad() = avg.clone();
      }
      at_offset += n;
    }
  }
}

}  // namespace tzrec
