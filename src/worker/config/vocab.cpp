// Vocabularies of id features: vocab_list / vocab_dict / vocab_file with default_bucketize_value
// (include/tzrec/config/config.hpp; TorchEasyRec tzrec/features/feature.py).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

std::string Where(const protos::IdFeature& f) {
  return "id_feature '" + f.feature_name() + "'";
}

// The text of a vocab_file line without its line end and surrounding blanks.
std::string TrimLine(const std::string& line) {
  const auto begin = line.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = line.find_last_not_of(" \t\r");
  return line.substr(begin, end - begin + 1);
}

}  // namespace

std::int64_t VocabRows(const protos::IdFeature& f) {
  const bool reserved = !f.has_default_bucketize_value();
  if (f.vocab_list_size() > 0) return f.vocab_list_size() + (reserved ? 2 : 0);
  if (f.vocab_dict_size() == 0) return 0;
  std::uint64_t top = 0;
  for (const auto& entry : f.vocab_dict()) top = std::max(top, entry.value());
  return static_cast<std::int64_t>(top) + 1;
}

Vocabulary IdVocabulary(const protos::IdFeature& f) {
  if (f.has_vocab_file()) {
    throw ConfigError(Where(f) + ": vocab_file '" + f.vocab_file() +
                      "' is not loaded; load the config with ParsePipelineConfig");
  }
  Vocabulary v;
  v.rows = VocabRows(f);
  const bool reserved = !f.has_default_bucketize_value();
  v.unknown_id = reserved ? 1 : static_cast<std::int64_t>(f.default_bucketize_value());
  if (reserved) v.ids.emplace("", 0);
  for (int i = 0; i < f.vocab_list_size(); ++i) {
    if (v.ids.count(f.vocab_list(i)) && !(reserved && f.vocab_list(i).empty())) {
      throw ConfigError(Where(f) + ": vocab_list holds '" + f.vocab_list(i) +
                        "' twice; remove the duplicate");
    }
    v.ids[f.vocab_list(i)] = i + (reserved ? 2 : 0);
  }
  for (const auto& entry : f.vocab_dict()) {
    if (!v.ids.emplace(entry.key(), static_cast<std::int64_t>(entry.value())).second &&
        !(reserved && entry.key().empty())) {
      throw ConfigError(Where(f) + ": vocab_dict holds the key '" + entry.key() +
                        "' twice; remove the duplicate");
    }
    v.ids[entry.key()] = static_cast<std::int64_t>(entry.value());
  }
  // TorchEasyRec: the default value's entry of a vocab_dict is 0 when nothing is reserved.
  if (reserved && f.vocab_dict_size() > 0) v.ids[""] = 0;
  return v;
}

std::unordered_map<std::string, std::int64_t> ParseVocabFile(const std::string& text,
                                                             const std::string& origin) {
  std::unordered_map<std::string, std::int64_t> ids;
  std::istringstream in(text);
  std::string line;
  std::int64_t number = 0;
  int form = 0;  // 1: one token per line, 2: "token id"
  while (std::getline(in, line)) {
    ++number;
    const std::string t = TrimLine(line);
    if (form == 2 && t.empty()) continue;  // blank lines of the "token id" form
    const auto space = t.find_first_of(" \t");
    const int this_form = space == std::string::npos ? 1 : 2;
    if (form != 0 && this_form != form) {
      throw ConfigError(origin + ":" + std::to_string(number) + ": \"" + t +
                        "\" mixes the one-token-per-line and the \"token id\" forms; write "
                        "every line in one form");
    }
    form = this_form;
    std::string token = t;
    std::int64_t id = number - 1;
    if (form == 2) {
      token = t.substr(0, space);
      const std::string id_text = TrimLine(t.substr(space + 1));
      const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
      if (ec != std::errc() || end != id_text.data() + id_text.size() || id < 0) {
        throw ConfigError(origin + ":" + std::to_string(number) + ": id \"" + id_text +
                          "\" of token \"" + token + "\" is not an integer >= 0");
      }
    }
    if (!ids.emplace(token, id).second) {
      throw ConfigError(origin + ":" + std::to_string(number) + ": token \"" + token +
                        "\" appears twice; vocabulary entries must be unique");
    }
  }
  return ids;
}

namespace config_internal {

void LoadVocabFiles(PipelineConfig* config) {
  for (int i = 0; i < config->feature_configs_size(); ++i) {
    if (!config->feature_configs(i).has_id_feature()) continue;
    protos::IdFeature* f = config->mutable_feature_configs(i)->mutable_id_feature();
    if (!f->has_vocab_file()) continue;
    const std::string path = "feature_configs[" + std::to_string(i) + "].id_feature.vocab_file";
    if (!f->has_default_bucketize_value()) {
      throw ConfigError(path + ": '" + f->vocab_file() + "' without default_bucketize_value (" +
                        Where(*f) +
                        "); TorchEasyRec reserves no ids for a vocab_file: set "
                        "default_bucketize_value to the id of unknown values");
    }
    if (f->hash_bucket_size() > 0 || f->num_buckets() > 0 || f->vocab_list_size() > 0 ||
        f->vocab_dict_size() > 0) {
      throw ConfigError(path +
                        ": set together with hash_bucket_size, num_buckets, vocab_list or "
                        "vocab_dict (" +
                        Where(*f) + "); set exactly one of them");
    }
    std::ifstream in(f->vocab_file(), std::ios::binary);
    if (!in) {
      throw ConfigError(path + ": cannot open '" + f->vocab_file() + "' (" +
                        std::make_error_code(static_cast<std::errc>(errno)).message() +
                        "); the path is relative to the working directory");
    }
    std::ostringstream text;
    text << in.rdbuf();
    const auto ids = ParseVocabFile(text.str(), f->vocab_file());
    if (ids.empty()) {
      throw ConfigError(path + ": '" + f->vocab_file() + "' holds no tokens; write one per line");
    }
    std::vector<std::pair<std::int64_t, std::string>> sorted;
    for (const auto& [token, id] : ids) sorted.emplace_back(id, token);
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [id, token] : sorted) {
      protos::VocabDictEntry* entry = f->add_vocab_dict();
      entry->set_key(token);
      entry->set_value(static_cast<std::uint64_t>(id));
    }
    f->clear_vocab_file();
  }
}

}  // namespace config_internal
}  // namespace tzrec
