// The model's checkpoint state and the fine_tune_checkpoint path (train_common.hpp,
// include/tzrec/train/train.hpp): the views of a rank's tensors that CheckpointManager saves and
// restores into, and TorchEasyRec's checkpoint path rule (tzrec/utils/checkpoint_util.py
// `latest_checkpoint`: a path naming model.ckpt-N is used as is, else the newest under it).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

#include "train_common.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

namespace fs = std::filesystem;

TrainState ModelState(SparseArch& sparse, const DenseModel& dense) {
  TrainState st;
  for (auto& s : sparse.LocalShards()) {
    ShardState ss;
    ss.table = s.table;
    for (const auto& t : sparse.Tables()) {
      if (t.name == s.table) {
        ss.table_rows = t.rows;
        ss.table_cols = t.dim;
      }
    }
    ss.shard = s.shard;
    ss.weight = s.weight;
    for (auto& [name, tensor] : s.state->StateTensors()) ss.optimizer.push_back({name, tensor});
    st.shards.push_back(std::move(ss));
  }
  for (const auto& p : dense.Parameters()) st.dense.push_back({p.name, p.tensor});
  for (const auto& p : dense.Buffers()) st.dense.push_back({p.name, p.tensor});
  return st;
}

void LoadShardOptimizerStates(SparseArch& sparse, const TrainState& state) {
  auto shards = sparse.LocalShards();
  for (std::size_t i = 0; i < shards.size() && i < state.shards.size(); ++i) {
    std::vector<std::pair<std::string, at::Tensor>> states;
    for (const auto& nt : state.shards[i].optimizer) states.emplace_back(nt.name, nt.tensor);
    shards[i].state->LoadStateTensors(states);
  }
}

std::map<std::string, std::string> LoadParamMap(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) {
    throw ConfigError("fine_tune_ckpt_param_map '" + path +
                      "' cannot be read; pass a text file of '<current name> <saved name>' lines");
  }
  return ParseParamMap(text, path);
}

void ApplyParamMap(const std::map<std::string, std::string>& renames, const std::string& path,
                   const SparseArch& sparse, const DenseModel& dense, TrainState& state) {
  std::set<std::string> names;
  for (const auto& t : sparse.Tables()) names.insert(t.name);
  for (const auto& p : dense.Parameters()) names.insert(p.name);
  for (const auto& p : dense.Buffers()) names.insert(p.name);
  for (const auto& [current, saved] : renames) {
    if (names.count(current) == 0U) {
      throw ConfigError("fine_tune_ckpt_param_map '" + path + "': '" + current +
                        "' is neither an embedding table nor a dense tensor of this model (e.g. '" +
                        *names.begin() + "'); use the names of model.ckpt-N/metadata.json");
    }
  }
  RenameToSaved(renames, state);
}

void RenameToSaved(const std::map<std::string, std::string>& renames, TrainState& state) {
  for (auto& shard : state.shards) {
    const auto it = renames.find(shard.table);
    if (it != renames.end()) shard.table = it->second;
  }
  for (auto& nt : state.dense) {
    const auto it = renames.find(nt.name);
    if (it != renames.end()) nt.name = it->second;
  }
  // A renamed dense parameter's optimizer state ("<name>/<state>", DenseOptimizer::StateTensors)
  // comes from the saved name's, as a renamed table's shards bring their optimizer state.
  for (auto& nt : state.dense_optimizer) {
    const std::size_t slash = nt.name.rfind('/');
    if (slash == std::string::npos) continue;
    const auto it = renames.find(nt.name.substr(0, slash));
    if (it != renames.end()) nt.name = it->second + nt.name.substr(slash);
  }
}

std::string ResolveFineTuneCheckpoint(const std::string& path, std::shared_ptr<Comm> comm) {
  const fs::path p(path);
  const std::string last =
      p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
  if (last.find("model.ckpt-") != std::string::npos) {
    if (!fs::exists(p / "metadata.json")) {
      throw ConfigError("fine_tune_checkpoint '" + path +
                        "' is not a complete checkpoint (no metadata.json); pass a model.ckpt-N "
                        "directory written by tzrec_train, or its model_dir for the newest one");
    }
    return path;
  }
  if (!fs::is_directory(p)) {
    throw ConfigError("fine_tune_checkpoint '" + path +
                      "' does not exist; pass a model.ckpt-N directory or a model_dir");
  }
  const std::optional<std::string> latest = CheckpointManager(path, 0, std::move(comm)).Latest();
  if (!latest) {
    throw ConfigError("fine_tune_checkpoint '" + path +
                      "' holds no valid model.ckpt-N checkpoint; train there first or pass a "
                      "model.ckpt-N directory");
  }
  return *latest;
}

std::map<std::string, std::string> ParseParamMap(const std::string& text, const std::string& path) {
  std::map<std::string, std::string> renames;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream words(line);
    std::vector<std::string> names;
    for (std::string w; words >> w;) names.push_back(w);
    if (names.empty() || names.front().front() == '#') continue;
    const std::string where =
        "fine_tune_ckpt_param_map '" + path + "' line " + std::to_string(number);
    if (names.size() != 2) {
      throw ConfigError(where + ": '" + line + "' has " + std::to_string(names.size()) +
                        " name(s); write '<current name> <saved name>'");
    }
    if (!renames.emplace(names[0], names[1]).second) {
      throw ConfigError(where + ": '" + names[0] + "' is renamed twice; keep one line for it");
    }
  }
  return renames;
}

}  // namespace tzrec
