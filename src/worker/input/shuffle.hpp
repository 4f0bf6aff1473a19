// Internal to tzrec::input: the batch shuffle buffer of data_config.shuffle as pure functions of
// (batch count, buffer size, seed), and the mapping of a rank's row stream to global rows.
//
// TorchEasyRec (tzrec/datasets/dataset.py, BaseReader._arrow_reader_iter; training only) shuffles
// whole batches, not rows: batches are built in read order and put into a buffer of
// shuffle_buffer_size batches; once the buffer is full, a uniformly drawn one is returned; at the
// end of the data the rest of the buffer is returned in a random order. A batch keeps its rows. We
// do the same with a seeded generator (SplitMix64), so the order is a pure function of the seed
// and a resumed run can replay it. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "tzrec/input/input.hpp"

namespace tzrec::input {

// The seed of one rank's shuffle in one epoch: a mix of train_config.seed, the epoch
// (epochs_completed) and the rank, so epochs and ranks get different orders.
std::uint64_t EpochSeed(std::uint64_t seed, std::int64_t epoch, int rank);

// The order in which the shuffle buffer returns batches 0..num_batches-1 (built in that order):
// a permutation of [0, num_batches). buffer_size <= 1 returns batches as built (the identity).
// Throws std::invalid_argument for num_batches < 0.
std::vector<std::int64_t> ShuffleOrder(std::int64_t num_batches, std::int64_t buffer_size,
                                       std::uint64_t seed);

// Positions [begin, end) of the row stream `stream` (its ranges concatenated) as global rows.
std::vector<RowRange> SliceStream(const std::vector<RowRange>& stream, std::int64_t begin,
                                  std::int64_t end);

// `stream` without the positions of the batches `skip` (batch i = positions
// [i * batch_size, (i + 1) * batch_size)), in order. The batches left keep their boundaries: every
// removed batch but the last is exactly batch_size rows.
std::vector<RowRange> RemoveBatches(const std::vector<RowRange>& stream,
                                    std::vector<std::int64_t> skip, std::int64_t batch_size);

}  // namespace tzrec::input
