// Delimited text reader (CsvDataset) and input path expansion (see reader.hpp).
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "reader.hpp"
#include "tzrec/error.hpp"

namespace tzrec::input {
namespace {

constexpr std::int64_t kIndexStride = 4096;  // a byte offset is kept for every 4096th data row
constexpr std::size_t kReadChunk = 1 << 20;

// Scans data[0, n), which starts at a record start. Calls fn(begin, end) (offsets, end before the
// '\n') for each complete non-empty record, at most `max_records` of them (< 0: no limit). Returns
// the offset where scanning stopped: after the last emitted record's '\n' when the limit was
// reached, else the start of the first incomplete record (n when everything was consumed). With
// `eof`, a last record without '\n' is complete; an open quote at eof throws.
template <typename Fn>
std::size_t ScanRecords(const char* data, std::size_t n, bool eof, char delim,
                        std::int64_t max_records, const std::string& path, Fn&& fn) {
  std::size_t rec_start = 0;
  bool field_start = true;
  bool in_quote = false;
  std::int64_t emitted = 0;
  auto empty = [&](std::size_t b, std::size_t e) {
    return e == b || (e == b + 1 && data[b] == '\r');
  };
  std::size_t i = 0;
  while (i < n) {
    const char c = data[i];
    if (in_quote) {
      if (c == '"') {
        if (i + 1 < n) {
          if (data[i + 1] == '"') {
            i += 2;
            continue;
          }
        } else if (!eof) {
          return rec_start;  // "" split by the buffer end: decide with more data
        }
        in_quote = false;
      }
      ++i;
      continue;
    }
    if (c == '\n') {
      if (!empty(rec_start, i)) {
        fn(rec_start, i);
        if (++emitted == max_records) return i + 1;
      }
      rec_start = i + 1;
      field_start = true;
      ++i;
      continue;
    }
    if (c == '"' && field_start) {
      in_quote = true;
      field_start = false;
    } else {
      field_start = (c == delim);
    }
    ++i;
  }
  if (!eof) return rec_start;
  if (in_quote) {
    throw InputError("CsvDataset: " + path +
                     ": a quoted field is not closed before the end of the file (record "
                     "starting at byte offset " +
                     std::to_string(rec_start) +
                     " of the last read); close the quote or escape it as \"\"");
  }
  if (!empty(rec_start, n)) fn(rec_start, n);
  return n;
}

class Fd {
 public:
  explicit Fd(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) {
      throw InputError("CsvDataset: cannot open " + path + ": " + std::strerror(errno) +
                       "; check input_path");
    }
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int Get() const { return fd_; }

 private:
  int fd_;
};

// Appends up to `count` bytes read at `offset` to `buf`; returns the number read.
std::size_t ReadAt(int fd, const std::string& path, std::int64_t offset, std::size_t count,
                   std::string* buf) {
  const std::size_t old = buf->size();
  buf->resize(old + count);
  std::size_t got = 0;
  while (got < count) {
    const ssize_t n = ::pread(fd, buf->data() + old + got, count - got,
                              static_cast<off_t>(offset + static_cast<std::int64_t>(got)));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError("CsvDataset: read error in " + path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  buf->resize(old + got);
  return got;
}

class CsvReader final : public TableReader {
 public:
  CsvReader(const std::string& path, const CsvOptions& options)
      : path_(path), options_(options), fd_(std::make_unique<Fd>(path)) {
    struct stat st {};
    if (::fstat(fd_->Get(), &st) != 0) {
      throw InputError("CsvDataset: cannot stat " + path + ": " + std::strerror(errno));
    }
    file_size_ = static_cast<std::int64_t>(st.st_size);
    Count();
    if (!options_.with_header) columns_ = options_.input_fields;
  }

  const std::string& Path() const override { return path_; }
  std::int64_t NumRows() const override { return rows_; }
  const std::vector<std::string>& ColumnNames() const override { return columns_; }
  std::int64_t ChunkEnd(std::int64_t begin) const override {
    return std::min(rows_, begin + kIndexStride);
  }

  ColumnBlock Read(std::int64_t begin, std::int64_t end, const std::vector<int>& columns) override {
    if (begin < 0 || end > rows_ || begin > end) {
      throw std::logic_error("CsvDataset: row range out of bounds");
    }
    std::int64_t offset = 0;
    std::int64_t skip = 0;
    if (begin == next_row_) {
      offset = next_offset_;
    } else {
      const std::int64_t c = begin / kIndexStride;
      offset = index_[static_cast<std::size_t>(c)];
      skip = begin - c * kIndexStride;
    }
    const std::int64_t want = end - begin;
    if (!fd_) fd_ = std::make_unique<Fd>(path_);
    auto buf = std::make_shared<std::string>();
    std::vector<std::pair<std::size_t, std::size_t>> records;
    records.reserve(static_cast<std::size_t>(want));
    std::size_t scan_pos = 0;
    std::int64_t file_pos = offset;
    while (static_cast<std::int64_t>(records.size()) < want) {
      const std::size_t got = ReadAt(fd_->Get(), path_, file_pos, kReadChunk, buf.get());
      file_pos += static_cast<std::int64_t>(got);
      const bool eof = got == 0 || file_pos >= file_size_;
      const std::int64_t remaining = skip + want - static_cast<std::int64_t>(records.size());
      const std::size_t base = scan_pos;
      scan_pos += ScanRecords(buf->data() + base, buf->size() - base, eof, options_.delimiter,
                              remaining, path_, [&](std::size_t b, std::size_t e) {
                                if (skip > 0) {
                                  --skip;
                                } else {
                                  records.emplace_back(base + b, base + e);
                                }
                              });
      if (eof && static_cast<std::int64_t>(records.size()) < want) {
        throw InputError("CsvDataset: " + path_ + " ended after row " +
                         std::to_string(begin + static_cast<std::int64_t>(records.size())) +
                         " but held " + std::to_string(rows_) +
                         " rows when it was counted; do not change input files while "
                         "training");
      }
    }
    next_row_ = end;
    next_offset_ = offset + static_cast<std::int64_t>(scan_pos);

    ColumnBlock block;
    block.num_rows = want;
    block.columns.assign(columns.size(), std::vector<Cell>(static_cast<std::size_t>(want)));
    const std::size_t num_columns = columns_.size();
    for (std::size_t r = 0; r < records.size(); ++r) {
      char* b = buf->data() + records[r].first;
      char* e = buf->data() + records[r].second;
      try {
        SplitRecord(b, e, options_.delimiter, &fields_);
      } catch (const std::exception& ex) {
        throw InputError("CsvDataset: " + path_ + " row " +
                         std::to_string(begin + static_cast<std::int64_t>(r)) + ": " + ex.what());
      }
      if (fields_.size() > num_columns) {
        throw InputError("CsvDataset: " + path_ + " row " +
                         std::to_string(begin + static_cast<std::int64_t>(r)) + " has " +
                         std::to_string(fields_.size()) + " fields but " +
                         std::to_string(num_columns) + " columns are named (" +
                         (options_.with_header ? "header" : "data_config.input_fields") +
                         "); check data_config.delimiter and the column names");
      }
      for (std::size_t c = 0; c < columns.size(); ++c) {
        const auto idx = static_cast<std::size_t>(columns[c]);
        if (idx < fields_.size() && !fields_[idx].empty()) {
          block.columns[c][r] = Cell::String(fields_[idx]);
        }
      }
    }
    block.keep_alive = std::move(buf);
    return block;
  }

  void Release() override { fd_.reset(); }

 private:
  void Count() {
    std::string buf;
    std::int64_t buf_offset = 0;  // file offset of buf[0]
    std::int64_t file_pos = 0;
    bool need_header = options_.with_header;
    bool eof = false;
    while (!eof) {
      const std::size_t got = ReadAt(fd_->Get(), path_, file_pos, kReadChunk, &buf);
      file_pos += static_cast<std::int64_t>(got);
      eof = got == 0 || file_pos >= file_size_;
      if (buf_offset == 0 && buf.size() >= 3 && buf.compare(0, 3, "\xEF\xBB\xBF") == 0) {
        buf.erase(0, 3);  // UTF-8 byte order mark
        buf_offset = 3;
      }
      const std::size_t consumed = ScanRecords(
          buf.data(), buf.size(), eof, options_.delimiter, -1, path_,
          [&](std::size_t b, std::size_t e) {
            if (need_header) {
              need_header = false;
              std::string text(buf.data() + b, e - b);
              std::vector<std::string_view> names;
              SplitRecord(text.data(), text.data() + text.size(), options_.delimiter, &names);
              for (auto n : names) columns_.emplace_back(Trim(n));
              return;
            }
            if (rows_ % kIndexStride == 0) {
              index_.push_back(buf_offset + static_cast<std::int64_t>(b));
            }
            ++rows_;
          });
      buf.erase(0, consumed);
      buf_offset += static_cast<std::int64_t>(consumed);
    }
    if (options_.with_header && need_header) {
      throw InputError("CsvDataset: " + path_ +
                       " is empty but data_config.with_header is true (no header line); "
                       "remove the file or write its header");
    }
    if (!index_.empty()) next_offset_ = index_[0];
    next_row_ = 0;
  }

  std::string path_;
  CsvOptions options_;
  std::unique_ptr<Fd> fd_;
  std::int64_t file_size_ = 0;
  std::int64_t rows_ = 0;
  std::vector<std::string> columns_;
  std::vector<std::int64_t> index_;  // byte offset of data row k*kIndexStride
  std::int64_t next_row_ = -1;
  std::int64_t next_offset_ = 0;
  std::vector<std::string_view> fields_;
};

}  // namespace

void SplitRecord(char* begin, char* end, char delimiter, std::vector<std::string_view>* fields) {
  fields->clear();
  if (end > begin && end[-1] == '\r') --end;
  char* p = begin;
  while (true) {
    if (p < end && *p == '"') {
      char* w = p;
      char* q = p + 1;
      bool closed = false;
      while (q < end) {
        if (*q == '"') {
          if (q + 1 < end && q[1] == '"') {
            *w++ = '"';
            q += 2;
            continue;
          }
          closed = true;
          ++q;
          break;
        }
        *w++ = *q++;
      }
      if (!closed) {
        throw InputError("field " + std::to_string(fields->size()) +
                         " opens a quote that is not closed; close it or escape \" as \"\"");
      }
      fields->emplace_back(p, static_cast<std::size_t>(w - p));
      if (q == end) return;
      if (*q != delimiter) {
        throw InputError("field " + std::to_string(fields->size() - 1) +
                         " has text after its closing quote; quote the whole field and "
                         "escape inner quotes as \"\"");
      }
      p = q + 1;
      continue;
    }
    auto* d = static_cast<char*>(std::memchr(p, delimiter, static_cast<std::size_t>(end - p)));
    if (d == nullptr) {
      fields->emplace_back(p, static_cast<std::size_t>(end - p));
      return;
    }
    fields->emplace_back(p, static_cast<std::size_t>(d - p));
    p = d + 1;
  }
}

std::unique_ptr<TableReader> OpenCsv(const std::string& path, const CsvOptions& options) {
  return std::make_unique<CsvReader>(path, options);
}

std::vector<std::string> ExpandInputPath(const std::string& input_path) {
  std::vector<std::string> files;
  std::string_view rest = input_path;
  bool any_pattern = false;
  while (true) {
    const auto comma = rest.find(',');
    const auto pattern = std::string(Trim(rest.substr(0, comma)));
    if (!pattern.empty()) {
      any_pattern = true;
      glob_t g{};
      const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
      std::size_t matched = 0;
      if (rc == 0) {
        for (std::size_t i = 0; i < g.gl_pathc; ++i) {
          std::error_code ec;
          const std::string p = g.gl_pathv[i];
          if (std::filesystem::is_directory(p, ec)) {
            ::globfree(&g);
            throw InputError("input path '" + pattern + "' matches the directory " + p +
                             "; name the files, e.g. " + p + "/*.parquet");
          }
          files.push_back(p);
          ++matched;
        }
      }
      ::globfree(&g);
      if (matched == 0) {
        throw InputError("input path pattern '" + pattern + "' (of '" + input_path +
                         "') matches no file; check the path and the working directory " +
                         std::filesystem::current_path().string());
      }
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (!any_pattern) {
    throw InputError("input path is empty; set train_input_path / eval_input_path");
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace tzrec::input
