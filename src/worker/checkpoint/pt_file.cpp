// The only translation unit with torch's serialization headers: .pt files of a checkpoint.
//
// Written like torch::pickle_save (torch/csrc/jit/serialization/pickle.cpp): a Pickler writes
// "data.pkl" and collects the tensors, then a PyTorchStreamWriter stores "data.pkl" and every
// tensor's bytes as "data/<i>" in a zip archive. Differences, on purpose:
//   * the archive is streamed to the file descriptor (no in-memory copy of the whole checkpoint);
//   * the dict is pickled without the TorchScript type tag (tag_aggregates = false): the tag
//     calls torch.jit._pickle.restore_type_tag, which torch.load(weights_only=True) — Python's
//     default since torch 2.6 — refuses; a plain dict loads there and in C++ alike;
//   * a "byteorder" record ("little"), as Python's torch.save writes.
#include "pt_file.hpp"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace tzrec::checkpoint_detail {
namespace {

// First line of a c10 error, printable and at most 300 characters (a corrupt pickle's error
// quotes the damaged bytes).
std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return line;
}

class FdWriter {
 public:
  explicit FdWriter(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw CheckpointError("cannot create checkpoint file '" + path +
                            "': " + std::strerror(errno) + "; check that model_dir is writable");
    }
  }
  ~FdWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdWriter(const FdWriter&) = delete;
  FdWriter& operator=(const FdWriter&) = delete;

  // PyTorchStreamWriter's writer_func: returns the bytes written (short on error; the writer
  // then fails and we report errno_).
  std::size_t Write(const void* data, std::size_t size) {
    const char* bytes = static_cast<const char*>(data);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, bytes + done, size - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        errno_ = errno;
        return done;
      }
      done += static_cast<std::size_t>(n);
    }
    written_ += static_cast<std::int64_t>(size);
    return size;
  }

  std::int64_t Finish() {
    if (::fsync(fd_) != 0) Fail("fsync");
    if (::close(fd_) != 0) {
      fd_ = -1;
      Fail("close");
    }
    fd_ = -1;
    return written_;
  }

  [[noreturn]] void Fail(const std::string& what) const {
    const int err = errno_ != 0 ? errno_ : errno;
    throw CheckpointError("writing checkpoint file '" + path_ + "' failed (" + what + "): " +
                          std::strerror(err) + "; check free space and permissions of model_dir");
  }
  int Error() const { return errno_; }

 private:
  std::string path_;
  int fd_ = -1;
  int errno_ = 0;
  std::int64_t written_ = 0;
};

}  // namespace

std::int64_t WritePtFile(const std::string& path, const std::vector<NamedTensor>& entries) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& entry : entries) dict.insert(entry.name, entry.tensor);

  std::vector<char> pickle_data;
  torch::jit::Pickler pickler(
      [&](const char* buf, std::size_t size) {
        pickle_data.insert(pickle_data.end(), buf, buf + size);
      },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();

  FdWriter file(path);
  try {
    caffe2::serialize::PyTorchStreamWriter writer(
        [&file](const void* data, std::size_t size) { return file.Write(data, size); },
        /*compute_crc32=*/false);
    writer.writeRecord("data.pkl", pickle_data.data(), pickle_data.size());
    static constexpr char kByteOrder[] = "little";
    writer.writeRecord("byteorder", kByteOrder, sizeof(kByteOrder) - 1);
    const auto& tensors = pickler.tensorData();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto data = torch::jit::getWriteableTensorData(tensors[i]);
      writer.writeRecord("data/" + std::to_string(i), data.data(), data.sizeInBytes());
    }
    writer.writeEndOfFile();
  } catch (const c10::Error& e) {
    if (file.Error() != 0) file.Fail("write");
    throw CheckpointError("writing checkpoint file '" + path +
                          "' failed: " + FirstLine(e.what_without_backtrace()));
  }
  return file.Finish();
}

std::vector<NamedTensor> ReadPtFile(const std::string& path) {
  c10::IValue value;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    value = torch::jit::readArchiveAndTensors("data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
                                              /*type_resolver=*/std::nullopt,
                                              /*obj_loader=*/std::nullopt,
                                              /*device=*/at::Device(at::kCPU), reader);
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint file '" + path + "' is corrupt or truncated (" +
                          FirstLine(e.what_without_backtrace()) +
                          "); restore from another checkpoint or re-save it");
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint file '" + path + "' is corrupt or truncated (" +
                          FirstLine(e.what()) + "); restore from another checkpoint or re-save it");
  }
  if (!value.isGenericDict()) {
    throw CheckpointError("checkpoint file '" + path + "' holds a " + value.tagKind() +
                          ", not a dict of name -> tensor; it was not written by tzrec_train");
  }
  std::vector<NamedTensor> out;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor()) {
      throw CheckpointError("checkpoint file '" + path + "' has an entry that is not string -> " +
                            "tensor (" + item.key().tagKind() + " -> " + item.value().tagKind() +
                            "); it was not written by tzrec_train");
    }
    out.push_back({item.key().toStringRef(), item.value().toTensor()});
  }
  return out;
}

}  // namespace tzrec::checkpoint_detail
