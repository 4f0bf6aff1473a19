// Sequence features (see transform.hpp): the FG_NONE reading of encoded sequences and, with
// fg_mode FG_NORMAL / FG_DAG, the feature generation of each item as TorchEasyRec's pyfg does it
// (tzrec/features/sequence_feature.py and its tests): a text cell split on sequence_delim (empty
// items kept), a list cell item by item; an empty item, and an empty cell as one item, take the
// feature's default_value (a sequence_id_feature's "" reads "0", as SequenceIdFeature.fg_json
// resets it; a raw feature's "" leaves an empty cell empty); each item is one value mapped as an
// id_feature value (hash / num_buckets / vocabulary) or bucketized by boundaries; the first
// sequence_length items are kept. FG_NONE sequences are read whole; one longer than
// sequence_length is an error (CheckEncodedLength).
#include <stdexcept>
#include <string>
#include <string_view>

#include "transform.hpp"
#include "tzrec/error.hpp"

namespace tzrec::input {

void FeatureTransform::InitFgSequence(const protos::FeatureConfig& config) {
  fg_sequence_ = true;
  sequence_length_ = SequenceLength(config);
  sequence_delim_ = SequenceDelim(config);
  if (config.has_sequence_raw_feature()) {
    const protos::SequenceRawFeature& raw = config.sequence_raw_feature();
    boundaries_.assign(raw.boundaries().begin(), raw.boundaries().end());
    kind_ = IdKind::kBoundaries;
    table_size_ = static_cast<std::int64_t>(boundaries_.size()) + 1;
    item_default_ = raw.default_value();
    return;
  }
  const protos::SequenceIdFeature& seq = config.sequence_id_feature();
  item_default_ = seq.default_value().empty() ? "0" : seq.default_value();
  const protos::IdFeature id = SequenceItemFeature(seq);
  separator_ = id.separator();
  table_size_ = NumEmbeddings(config);
  if (id.hash_bucket_size() > 0) {
    kind_ = IdKind::kHash;
  } else if (id.num_buckets() > 0) {
    kind_ = IdKind::kNumBuckets;
  } else {
    kind_ = IdKind::kVocab;
    Vocabulary v = IdVocabulary(id);
    vocab_ = std::move(v.ids);
    unknown_id_ = v.unknown_id;
    // TorchEasyRec puts the default value first ([default_value, "<OOV>"] + vocab_list: id 0
    // unless the list has it too) or sets vocab_dict[default_value] = 0.
    if (id.vocab_dict_size() > 0) {
      vocab_[item_default_] = 0;
    } else {
      vocab_.emplace(item_default_, 0);
    }
  }
}

void FeatureTransform::AppendItem(std::string_view text, const Cell* numeric,
                                  std::vector<std::int64_t>* out) const {
  if (numeric != nullptr) {
    if (kind_ != IdKind::kBoundaries) {
      out->push_back(MapToken({}, numeric));
    } else {
      out->push_back(Bucketize(numeric->kind == Cell::Kind::kInt ? static_cast<double>(numeric->i)
                                                                 : numeric->d));
    }
    return;
  }
  if (text.empty()) text = item_default_;
  if (text.empty()) {
    throw InputError("feature '" + name_ +
                     "': an empty sequence item and default_value \"\"; set default_value "
                     "(e.g. \"0\") or fill the item");
  }
  if (!separator_.empty() && text.find(separator_) != std::string_view::npos) {
    throw InputError("feature '" + name_ + "': sequence item '" + std::string(text) +
                     "' holds several values (separator '" + separator_ +
                     "'); tzrec_train reads one value per item (multi-value items are not "
                     "implemented): keep one value per item");
  }
  if (kind_ != IdKind::kBoundaries) {
    out->push_back(MapToken(text, nullptr));
    return;
  }
  const auto x = ParseDouble(text);
  if (!x) {
    throw InputError("feature '" + name_ + "': sequence item '" + std::string(text) +
                     "' is not a number; fix the data or make it an id_feature");
  }
  out->push_back(Bucketize(*x));
}

void FeatureTransform::AppendFgSequence(const Cell& cell, std::vector<std::int64_t>* out) const {
  const bool empty = cell.IsNull() || (cell.kind == Cell::Kind::kString && cell.s.empty()) ||
                     (cell.kind == Cell::Kind::kList && cell.i == 0);
  if (empty) {
    if (!item_default_.empty()) AppendItem(item_default_, nullptr, out);
    return;
  }
  if (cell.kind == Cell::Kind::kList) {
    for (std::int64_t k = 0; k < cell.i && k < sequence_length_; ++k) {
      const Cell& item = cell.items[k];
      if (item.kind == Cell::Kind::kString || item.IsNull()) {
        AppendItem(item.IsNull() ? std::string_view() : item.s, nullptr, out);
      } else {
        AppendItem({}, &item, out);
      }
    }
    return;
  }
  if (cell.kind != Cell::Kind::kString) return AppendItem({}, &cell, out);
  std::int64_t kept = 0;
  ForEachToken(cell.s, sequence_delim_, [&](std::string_view item) {
    if (kept++ < sequence_length_) AppendItem(item, nullptr, out);
  });
}

void FeatureTransform::AppendSequence(const Cell& cell, std::vector<std::int64_t>* out) const {
  if (fg_sequence_) return AppendFgSequence(cell, out);
  const bool empty = cell.IsNull() || (cell.kind == Cell::Kind::kString && Trim(cell.s).empty()) ||
                     (cell.kind == Cell::Kind::kList && cell.i == 0);
  if (empty) {
    if (!default_sequence_) return;
    return AppendSequence(Cell::String(*default_sequence_), out);
  }
  const std::size_t before = out->size();
  if (cell.kind == Cell::Kind::kList) {
    for (std::int64_t k = 0; k < cell.i; ++k) {
      const Cell& item = cell.items[k];
      if (item.kind == Cell::Kind::kNull) continue;
      out->push_back(item.kind == Cell::Kind::kString ? MapToken(Trim(item.s), nullptr)
                                                      : MapToken({}, &item));
    }
  } else if (cell.kind != Cell::Kind::kString) {
    out->push_back(MapToken({}, &cell));
  } else {
    ForEachToken(cell.s, separator_,
                 [&](std::string_view token) { out->push_back(MapToken(Trim(token), nullptr)); });
  }
  CheckEncodedLength(static_cast<std::int64_t>(out->size() - before));
}

// TorchEasyRec keeps every item of an FG_NONE sequence (sequence_feature.py's
// _parse_fg_encoded_sequence_sparse_feature_impl has no length; sequence_length only reaches
// pyfg) and pads each batch to its longest sequence; our sequence embeddings are sequence_length
// items wide, so a longer sequence is refused rather than silently cut.
void FeatureTransform::CheckEncodedLength(std::int64_t items) const {
  if (items <= sequence_length_) return;
  throw InputError("feature '" + name_ + "': a sequence of " + std::to_string(items) +
                   " items, more than its sequence_length " + std::to_string(sequence_length_) +
                   ". With fg_mode FG_NONE TorchEasyRec keeps every item (it cuts sequences to "
                   "sequence_length only when it runs the feature generation), and this trainer's "
                   "sequence embeddings are sequence_length items wide: set sequence_length to at "
                   "least the longest sequence in the data, or cut the column's sequences to " +
                   std::to_string(sequence_length_) + " items when you write the data");
}

}  // namespace tzrec::input
