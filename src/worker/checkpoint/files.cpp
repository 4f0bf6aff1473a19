// The checkpoint directory's names and filesystem steps (files.hpp).
#include "files.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc, _GNU_SOURCE)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tzrec::checkpoint_detail {

namespace fs = std::filesystem;

void Warn(const std::string& message) {
  std::fprintf(stderr, "[tzrec checkpoint] warning: %s\n", message.c_str());
  std::fflush(stderr);
}

std::string RankFileName(const char* kind, int rank, int world_size) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%s-%06d-of-%06d.pt", kind, rank, world_size);
  return buf;
}

std::string CkptDirName(std::int64_t step) {
  return kCkptPrefix + std::to_string(step);
}
std::string TmpDirName(std::int64_t step) {
  return "." + CkptDirName(step) + ".tmp";
}

std::optional<std::int64_t> StepOfDirName(const std::string& name) {
  const std::string prefix = kCkptPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return {};
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return {};
  }
  return std::stoll(digits);
}

std::int64_t WriteTextFileSync(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CheckpointError("cannot create '" + path + "': " + std::strerror(errno) +
                          "; check that model_dir is writable");
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw CheckpointError("writing '" + path + "' failed: " + std::strerror(err) +
                            "; check free space in model_dir");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    throw CheckpointError("fsync/close of '" + path + "' failed: " + std::strerror(errno));
  }
  return static_cast<std::int64_t>(text.size());
}

void FsyncDir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw CheckpointError("cannot open directory '" + path +
                          "' to fsync it: " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0)
    throw CheckpointError("fsync of directory '" + path + "' failed: " + std::strerror(err));
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {  // filesystem without RENAME_NOREPLACE
    std::error_code ec;
    if (fs::exists(to, ec)) {
      err = EEXIST;
    } else if (::rename(from.c_str(), to.c_str()) == 0) {
      return;
    } else {
      err = errno;
    }
  }
  throw CheckpointError("renaming '" + from + "' to '" + to + "' failed: " + std::strerror(err) +
                        (err == EEXIST ? "; a checkpoint of this step already exists (remove it "
                                         "or save at another step)"
                                       : ""));
}

bool IsTmpDirName(const std::string& name) {
  return name.size() > 4 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
         StepOfDirName(name.substr(1, name.size() - 5)).has_value();
}

Json LoadMetadata(const fs::path& dir, bool check_files) {
  const fs::path path = dir / kMetadataFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw CheckpointError("checkpoint '" + dir.string() + "' has no " + kMetadataFile +
                          " (an incomplete save?); restore from another checkpoint");
  }
  Json meta;
  try {
    meta = Json::parse(ReadTextFile(path.string()));
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint metadata '" + path.string() + "' is corrupt: " + e.what());
  }
  if (!meta.is_object() || meta.value("format", "") != kFormatName || !meta.contains("files") ||
      !meta.contains("tables") || !meta.contains("step") || !meta.contains("world_size")) {
    throw CheckpointError("checkpoint metadata '" + path.string() +
                          "' is not a tzrec_train checkpoint (format/files/tables/step missing)");
  }
  const int version = meta.value("format_version", 0);
  if (version > kFormatVersion) {
    throw CheckpointError("checkpoint metadata '" + path.string() + "' has format_version " +
                          std::to_string(version) + "; this tzrec_train reads up to " +
                          std::to_string(kFormatVersion) + " (use a newer build)");
  }
  if (check_files) {
    for (const auto& f : meta.at("files")) {
      const fs::path file = dir / f.at("name").get<std::string>();
      const auto want = f.at("bytes").get<std::int64_t>();
      const auto have = fs::file_size(file, ec);
      if (ec) {
        throw CheckpointError("checkpoint file '" + file.string() + "' listed in " + path.string() +
                              " is missing: " + ec.message());
      }
      if (static_cast<std::int64_t>(have) != want) {
        throw CheckpointError("checkpoint file '" + file.string() +
                              "' is truncated or corrupt: " + std::to_string(have) +
                              " bytes on disk, " + kMetadataFile + " records " +
                              std::to_string(want) + "; restore from another checkpoint");
      }
    }
  }
  return meta;
}

}  // namespace tzrec::checkpoint_detail
