// Internal to tzrec::input: file readers. A TableReader reads rows [begin, end) of one file (file-
// local row numbers) for a set of columns and returns them as Cells. Errors: std::runtime_error
// naming the file (and row / column). Thread-safety: one thread per reader.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cell.hpp"

namespace tzrec::input {

// Rows of one read: columns[c][r] is row r of the c-th requested column. Owns (keep_alive) the
// memory the string cells view.
struct ColumnBlock {
  std::int64_t num_rows = 0;
  std::vector<std::vector<Cell>> columns;
  std::shared_ptr<const void> keep_alive;
};

class TableReader {
 public:
  virtual ~TableReader() = default;
  virtual const std::string& Path() const = 0;
  virtual std::int64_t NumRows() const = 0;
  virtual const std::vector<std::string>& ColumnNames() const = 0;
  // The end of the cheapest read starting at row `begin` (Parquet: the end of its row group).
  virtual std::int64_t ChunkEnd(std::int64_t begin) const = 0;
  // Rows [begin, end) of the columns with the given indices into column_names(); end <=
  // ChunkEnd(begin). Sequential reads (begin = previous end) are the fast path.
  virtual ColumnBlock Read(std::int64_t begin, std::int64_t end,
                           const std::vector<int>& columns) = 0;
  // Closes the file and drops cached row groups (the counts and the text row index stay); the next
  // Read reopens it. Keeps open files and memory bounded when a dataset has many files.
  virtual void Release() = 0;
};

// Parquet: counts rows from the footer; reads row groups of the needed columns.
std::unique_ptr<TableReader> OpenParquet(const std::string& path);

struct CsvOptions {
  char delimiter = ',';
  bool with_header = true;
  std::vector<std::string> input_fields;  // column names when !with_header
};
// Delimited text (RFC 4180 quotes): one counting pass at open (also indexes every 4096th row).
std::unique_ptr<TableReader> OpenCsv(const std::string& path, const CsvOptions& options);

// Splits one record (no line terminator; a trailing '\r' is dropped) into fields, unquoting quoted
// fields in place ("" inside quotes → "). Empty fields are returned as empty views. Throws
// std::runtime_error for text after a closing quote or an unterminated quote.
void SplitRecord(char* begin, char* end, char delimiter, std::vector<std::string_view>* fields);

// Expands comma-separated glob patterns into the sorted, de-duplicated list of matching regular
// files. Throws std::runtime_error naming a pattern that matches nothing.
std::vector<std::string> ExpandInputPath(const std::string& input_path);

}  // namespace tzrec::input
