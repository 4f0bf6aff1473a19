// Internal: the .pt (torch.save zip) files of a checkpoint. pt_file.cpp is the only translation
// unit that includes torch's serialization headers (slow to parse).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tzrec/checkpoint/checkpoint.hpp"

namespace tzrec::checkpoint_detail {

// Writes `entries` as a dict name → tensor in torch.save's zip format (what torch::pickle_save
// produces, streamed to the file instead of built in memory), fsyncs the file and returns its size
// in bytes. Tensors must be CPU, contiguous and own exactly their storage (the caller compacts
// them). Throws CheckpointError naming the path and errno on a write failure.
std::int64_t WritePtFile(const std::string& path, const std::vector<NamedTensor>& entries);

// Reads a file written by WritePtFile (or torch.save of a dict str → tensor) into CPU tensors, in
// the file's order. Throws CheckpointError naming the path when it is not a readable zip archive,
// the pickle is corrupt, or the value is not a dict of string → tensor.
std::vector<NamedTensor> ReadPtFile(const std::string& path);

}  // namespace tzrec::checkpoint_detail
