// Batch shuffle order and row-stream slicing (see shuffle.hpp).
#include "shuffle.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tzrec::input {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a full-period 64-bit generator, portable across standard
// libraries (std::uniform_int_distribution is not).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n >= 1); the modulo bias is below 2^-40 for n < 2^24.
  std::size_t Below(std::size_t n) { return static_cast<std::size_t>(Next() % n); }

 private:
  std::uint64_t state_;
};

}  // namespace

std::uint64_t EpochSeed(std::uint64_t seed, std::int64_t epoch, int rank) {
  SplitMix64 a(seed);
  SplitMix64 b(a.Next() ^ static_cast<std::uint64_t>(epoch));
  SplitMix64 c(b.Next() ^ static_cast<std::uint64_t>(rank));
  return c.Next();
}

std::vector<std::int64_t> ShuffleOrder(std::int64_t num_batches, std::int64_t buffer_size,
                                       std::uint64_t seed) {
  if (num_batches < 0) {
    throw std::invalid_argument("ShuffleOrder: num_batches " + std::to_string(num_batches) +
                                " is negative");
  }
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(num_batches));
  if (buffer_size <= 1) {
    for (std::int64_t i = 0; i < num_batches; ++i) order.push_back(i);
    return order;
  }
  SplitMix64 rng(seed);
  std::vector<std::int64_t> buffer;
  for (std::int64_t i = 0; i < num_batches; ++i) {
    buffer.push_back(i);
    if (static_cast<std::int64_t>(buffer.size()) < buffer_size) continue;
    const std::size_t k = rng.Below(buffer.size());
    order.push_back(buffer[k]);
    buffer.erase(buffer.begin() + static_cast<std::ptrdiff_t>(k));  // keeps the buffer's order
  }
  // Fisher-Yates over what is left.
  for (std::size_t i = buffer.size(); i > 1; --i) std::swap(buffer[i - 1], buffer[rng.Below(i)]);
  order.insert(order.end(), buffer.begin(), buffer.end());
  return order;
}

std::vector<RowRange> SliceStream(const std::vector<RowRange>& stream, std::int64_t begin,
                                  std::int64_t end) {
  std::vector<RowRange> out;
  std::int64_t offset = 0;  // stream positions before r
  for (const auto& r : stream) {
    if (offset >= end) break;
    const std::int64_t lo = std::max(begin - offset, std::int64_t{0});
    const std::int64_t hi = std::min(end - offset, r.Size());
    if (lo < hi) out.push_back({r.begin + lo, r.begin + hi});
    offset += r.Size();
  }
  return out;
}

std::vector<RowRange> RemoveBatches(const std::vector<RowRange>& stream,
                                    std::vector<std::int64_t> skip, std::int64_t batch_size) {
  std::int64_t total = 0;
  for (const auto& r : stream) total += r.Size();
  std::sort(skip.begin(), skip.end());
  std::vector<RowRange> out;
  std::int64_t pos = 0;
  for (const std::int64_t b : skip) {
    const std::int64_t lo = std::min(b * batch_size, total);
    if (lo > pos) {
      const auto kept = SliceStream(stream, pos, lo);
      out.insert(out.end(), kept.begin(), kept.end());
    }
    pos = std::max(pos, std::min(lo + batch_size, total));
  }
  const auto tail = SliceStream(stream, pos, total);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

}  // namespace tzrec::input
