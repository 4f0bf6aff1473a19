// tzrec/input/input.hpp — tzrec_train's input pipeline: Parquet (ParquetDataset) and delimited
// text (CsvDataset) files → feature transforms → batches of a KeyedJaggedTensor (sparse ids), a
// dense float matrix and labels; rank split of the global rows and a world-size independent data
// cursor for resuming (TorchEasyRec data_config / feature_configs semantics; notes
// ../shared/reference/torchrec-sharding.md §1.7).
//
// Rows. The files matching input_path (comma-separated globs, all matches sorted by name, each file
// once) are concatenated; their rows are numbered 0..total-1 in that order ("global rows").
// Parquet: the row counts come from the file metadata, and only the row groups holding a rank's
// rows and only the needed columns are read. A list<...> column (list<int64>, list<string>,
// list<double>,
// ...; TorchEasyRec's ARRAY_* types) is a multi-value cell: an id feature maps every non-null item
// (an item is one value, never split again), a raw feature takes value_dim items (null items:
// default_value; another length is an error). Text: one quote-aware record count per file; empty
// lines are not rows; with_header: the first record names the columns, else
// data_config.input_fields does.
//
// fg_mode (data_config): FG_NONE (TorchEasyRec's default) reads fg-encoded data: each feature the
// column named by its feature_name, ids (and raw bucket ids) as integers in [0, table rows),
// dense values as they are, multi-value cells split on data_config.fg_encoded_multival_sep.
// FG_NORMAL / FG_DAG read raw data: each feature the column of its expression (after the last ':')
// and tzrec_train runs the feature generation below (TorchEasyRec's pyfg semantics, with our own
// hash: ids hashed by hash_bucket_size differ from pyfg's).
// Feature transforms with feature generation (protos::FeatureConfig; column: InputColumn()):
//   id_feature  hash_bucket_size n: FNV-1a 64 of the value's text mod n. Integers are hashed via
//                 their decimal text ("12", "-3"), integral floats likewise ("3.0" in Parquet →
//                 "3"), other floats via their shortest round-trip text, so CSV and Parquet agree
//                 for ints.
//               num_buckets n: the integer value; a value outside [0, n) or not an integer is an
//                 error naming the feature, the value, num_buckets, the file and the row.
//               vocab_list: index in the list + 2; a value not in the list → 1; an empty token
//                 inside a multi-valued cell (e.g. "a||b") → 0.
//               separator (default "\x1d"): the cell is split on it and every non-empty token
//               mapped
//                 (hash / num_buckets) — so one sample may have several ids.
//               A missing value (Parquet null, empty text field) → no ids for that sample.
//   raw_feature the value (value_dim numbers; value_dim > 1 splits the cell on the feature's
//                 separator) or default_value when missing, then the normalizer:
//                 "" → x; "method=log1p" → log(1+x); "method=expression,expr=log(x+C)" → log(x+C)
//                 (also "expr=x"); "method=minmax,min=a,max=b" → (x-a)/(b-a);
//                 "method=zscore,mean=a,standard_deviation=b" → (x-a)/b;
//                 "method=log10,threshold=t,default=d" → log10(x) if x > t else d. With boundaries
//                 the normalised value is bucketised: id = number of boundaries <= x
//                 (std::upper_bound), a sparse feature with a table of len(boundaries)+1 rows;
//                 otherwise it is a dense column.
//   labels      float of each data_config.label_fields entry (ints, floats, bools or numeric
//               text); a missing label is an error. Batch::labels is the first.
//   weights     float of data_config.sample_weight_fields[0] (as labels; a missing weight is an
//               error).
//   group_ids   the grouped_auc metric's grouping_key names an input column (or a feature, whose
//   input
//               column is used): FNV-1a 64 of its text, masked to a non-negative int64.
//
// Errors (std::runtime_error, std::invalid_argument for DataCursor): say what failed, with which
// value (file, row, column, feature) and what to do. Errors found while prefetching are rethrown
// by the Next() that would have returned the batch.
//
// Shuffle: see Dataset::Dataset.
//
// Thread-safety: a Dataset is used by one thread (Next/StartNextEpoch/Cursor); it owns one
// background thread while num_workers >= 1 and, for num_workers N >= 2, N reader threads with
// their own file readers (num_workers == 0: batches are built inside Next()). The batches and
// their order do not depend on num_workers. DataCursor and RowRange are plain values.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"
#include "tzrec/core/kjt.hpp"

namespace tzrec {

// One batch on the CPU.
struct Batch {
  KeyedJaggedTensor sparse;  // keys = sparse features (IsSparse) in feature_configs
                             // order; ids already mapped into [0, num_embeddings); lengths int64
                             // [F*B] feature-major; values int64; no weights; stride B
  at::Tensor dense;          // float [B, D_dense]: dense raw features in config order, value_dim
                             // each (D_dense may be 0)
  at::Tensor labels;         // float [B]: data_config.label_fields[0] (the label TorchEasyRec's
                             // single-task rank models train on); undefined when there is none
  std::vector<at::Tensor> all_labels;  // float [B] per label_fields entry, in order
                                       // (all_labels[0] is `labels`)
  at::Tensor sample_weights;  // float [B]: data_config.sample_weight_fields[0], or undefined
  at::Tensor group_ids;       // int64 [B]: hash of the grouped_auc key column, or undefined
  std::int64_t size = 0;      // B (the last batch may be smaller unless drop_remainder)
};

// Global rows [begin, end).
struct RowRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t Size() const { return end - begin; }
  bool operator==(const RowRange&) const = default;
};

// World-size independent position: the global rows consumed so far + completed epochs.
struct DataCursor {
  std::int64_t total_rows = 0;
  std::int64_t epochs_completed = 0;
  std::vector<RowRange> consumed;  // sorted, merged (no two ranges touch or overlap)
  // A shuffled epoch (data_config.shuffle) can be replayed exactly at the same world size: the
  // consumed rows when the epoch began, the world size that split them and, per rank, the batches
  // of the epoch's shuffle order it returned (-1: not known). Absent when not shuffling.
  struct Replay {
    int world = 0;
    std::vector<RowRange> epoch_base;
    std::vector<std::int64_t> batches;
    bool operator==(const Replay&) const = default;
  };
  std::optional<Replay> replay;

  // {"total_rows": N, "epochs_completed": E, "consumed": [[begin, end], ...]} and, with a replay,
  // "shuffle": {"world": W, "epoch_base": [[begin, end], ...], "batches": [k0, k1, ...]}
  std::string ToJson() const;
  // Throws std::invalid_argument naming the bad field/value (not JSON, missing key, a range outside
  // [0, total_rows) or with begin > end). Ranges are sorted and merged.
  static DataCursor FromJson(const std::string& json);
  // Union of the ranks' consumed rows. Throws std::invalid_argument when `per_rank` is empty or the
  // ranks disagree on total_rows or epochs_completed. The replay is kept when every cursor has
  // one with the same world and epoch_base; each rank's batch count is taken from the cursor that
  // knows it (>= 0); two different counts for one rank drop the replay.
  static DataCursor Merge(const std::vector<DataCursor>& per_rank);
  // This rank's rows: the rows not consumed, split in order into `world` contiguous-by-count parts
  // (remainder to the first ranks); no overlap, no loss. Throws std::invalid_argument for
  // world < 1 or rank outside [0, world).
  std::vector<RowRange> Assign(int rank, int world) const;
  // Rows in `consumed`.
  std::int64_t ConsumedRows() const;
};

// Sorts and merges ranges (drops empty ones).
std::vector<RowRange> NormalizeRanges(std::vector<RowRange> ranges);

class Dataset {
 public:
  // Opens and counts the files (Parquet: metadata row counts; text: one fast line count per file),
  // validates that every column the features/labels need exists (error naming the column, the file
  // and the available columns). `resume` (optional) restricts this rank to the unconsumed rows; its
  // total_rows must equal the files' row count (else std::invalid_argument: the data changed).
  // dataset_type: "ParquetDataset" | "CsvDataset" (else std::runtime_error). batch_size >= 1.
  // `train`: a training dataset, the only kind data_config.shuffle applies to (as TorchEasyRec).
  // Shuffle (TorchEasyRec BaseReader._arrow_reader_iter): batches are built in row order and
  // returned through a buffer of shuffle_buffer_size batches (src/worker/input/shuffle.hpp), seeded
  // by train_config.seed, the epoch and the rank; a batch keeps its rows. A resume cursor with a
  // replay for this world size restarts the epoch's order and skips the batches returned before,
  // so the resumed run sees exactly the batches of the uninterrupted one; at another world size
  // the rows left are split anew and shuffled (no row lost or repeated, another order).
  Dataset(const PipelineConfig& config, const std::string& input_path, int rank, int world,
          std::int64_t batch_size, const std::optional<DataCursor>& resume = std::nullopt,
          bool train = false);
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  // The next batch of this rank's rows (global order within its ranges); nullopt when this rank's
  // rows of the epoch are done. Rethrows a reader/transform error.
  std::optional<Batch> Next();
  // All rows again (epochs_completed + 1, nothing consumed), split as in the constructor. Any
  // prefetched batches of the current epoch are dropped.
  void StartNextEpoch();
  // This rank's consumed rows (the resume cursor's rows + the rows of the batches Next() returned
  // in this epoch) and total/epochs. DataCursor::Merge of all ranks' cursors is the global
  // position.
  DataCursor Cursor() const;
  // Rows this rank reads in the current epoch (after a shuffle replay: without the skipped
  // batches).
  std::int64_t RowsAssigned() const;
  // Total rows of all files.
  std::int64_t TotalRows() const;
  // Files read, sorted.
  const std::vector<std::string>& Files() const;
  const std::vector<std::string>& SparseFeatureNames() const;
  // Whether the batches' KeyedJaggedTensor carries per-id weights: some id_feature has
  // weighted: true (its "id:weight" weights; 1 for the ids of the other features).
  bool Weighted() const;
  // Table rows of each sparse feature, in sparse_feature_names() order.
  const std::vector<std::int64_t>& SparseNumEmbeddings() const;
  std::int64_t DenseDim() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzrec
