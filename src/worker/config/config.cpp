// Pipeline config: parse (schema-driven normalisation: unknown keys, types, oneofs, defaults),
// edit_config_json overrides, reading into the structs, cross-field validation, ToJson and the
// markdown reference. See include/tzrec/config/config.hpp.
#include "tzrec/config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "schema.hpp"

namespace tzrec {
namespace {

using config_schema::Closest;
using config_schema::FieldSpec;
using config_schema::FieldType;
using config_schema::Json;
using config_schema::MessageSpec;

// ---------------------------------------------------------------------------------------------
// Small helpers

std::string Short(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

std::string JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string Where(const std::string& path) {
  return path.empty() ? "the top level" : path;
}

std::string JoinList(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string Quoted(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back("'" + item + "'");
  return JoinList(quoted);
}

[[noreturn]] void UnknownKey(const std::string& key, const MessageSpec& message,
                             const std::string& path, const std::string& prefix = "") {
  std::vector<std::string> keys;  // suggest only keys that are accepted
  for (const FieldSpec& field : message.fields) {
    if (!field.unsupported) keys.push_back(field.key);
  }
  throw ConfigError(prefix + JoinPath(path, key) + ": unknown key '" + key + "' in " + Where(path) +
                    "; did you mean '" + Closest(key, keys) + "'? Valid keys of " + message.name +
                    ": " + JoinList(keys));
}

std::vector<std::string> SupportedMembers(const MessageSpec& message, const std::string& oneof) {
  std::vector<std::string> members;
  for (const FieldSpec& field : message.fields) {
    if (field.oneof == oneof && !field.unsupported) members.push_back(field.key);
  }
  return members;
}

[[noreturn]] void UnsupportedKey(const FieldSpec& field, const MessageSpec& message,
                                 const std::string& path, const std::string& prefix = "") {
  std::string fix = "remove it";
  if (!field.oneof.empty()) {
    fix = "use one of " + JoinList(SupportedMembers(message, field.oneof));
  }
  throw ConfigError(prefix + JoinPath(path, field.key) + ": '" + field.key +
                    "' is not supported by tzrec_train (" + field.doc + "); " + fix);
}

// ---------------------------------------------------------------------------------------------
// Normalisation: check every key and type against the schema, canonicalise accepted spellings
// (numeric strings, integral floats, "true"/"false"), fill defaults. After this the readers can
// use at() for every key that has a default.

std::int64_t ToInt(const Json& value, const std::string& path, bool is_unsigned) {
  const std::string expected =
      is_unsigned ? "a non-negative integer (uint64)" : "an integer (int64)";
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw ConfigError(path + ": " + Short(value) + " is out of range; expected " + expected);
    }
    return static_cast<std::int64_t>(v);
  }
  if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if (is_unsigned && v < 0) {
      throw ConfigError(path + ": expected " + expected + ", got " + Short(value));
    }
    return v;
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 9.0e18 &&
        !(is_unsigned && v < 0)) {
      return static_cast<std::int64_t>(v);
    }
    throw ConfigError(path + ": expected " + expected + ", got " + Short(value) +
                      " (not a whole number)");
  }
  if (value.is_string()) {  // protobuf-JSON writes int64 as a decimal string
    const std::string& text = value.get_ref<const std::string&>();
    std::int64_t v = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (error == std::errc() && end == text.data() + text.size() && !text.empty() &&
        !(is_unsigned && v < 0)) {
      return v;
    }
  }
  throw ConfigError(path + ": expected " + expected + ", got " + Short(value) + " (" +
                    value.type_name() + ")");
}

double ToDouble(const Json& value, const std::string& path) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    double v = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (error == std::errc() && end == text.data() + text.size() && !text.empty() &&
        std::isfinite(v)) {
      return v;
    }
  }
  throw ConfigError(path + ": expected a number (double), got " + Short(value) + " (" +
                    value.type_name() + ")");
}

bool ToBool(const Json& value, const std::string& path) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_string()) {
    if (value == "true") return true;
    if (value == "false") return false;
  }
  throw ConfigError(path + ": expected true or false (bool), got " + Short(value) + " (" +
                    value.type_name() + ")");
}

void CheckChoice(const std::string& text, const FieldSpec& field, const std::string& path) {
  if (field.choices.empty()) return;
  if (std::find(field.choices.begin(), field.choices.end(), text) != field.choices.end()) return;
  std::vector<std::string> quoted;
  for (const std::string& choice : field.choices) quoted.push_back("\"" + choice + "\"");
  std::string hint;
  for (const std::string& choice : field.choices) {
    std::string a = text, b = choice;
    std::transform(a.begin(), a.end(), a.begin(), ::tolower);
    std::transform(b.begin(), b.end(), b.begin(), ::tolower);
    if (a == b) hint = " (did you mean \"" + choice + "\"? values are case-sensitive)";
  }
  throw ConfigError(path + ": \"" + text + "\" is not a valid " + field.key + "; use one of " +
                    JoinList(quoted) + hint);
}

Json NormalizeScalar(const Json& value, FieldType type, const FieldSpec& field,
                     const std::string& path) {
  switch (type) {
    case FieldType::kInt:
      return ToInt(value, path, false);
    case FieldType::kUInt:
      return static_cast<std::uint64_t>(ToInt(value, path, true));
    case FieldType::kDouble:
      return ToDouble(value, path);
    case FieldType::kDoubleOrInf: {
      if (value.is_string()) {
        std::string text = value.get<std::string>();
        std::transform(text.begin(), text.end(), text.begin(), ::tolower);
        if (text == "inf" || text == "infinity" || text == "+inf") return "inf";
      }
      return ToDouble(value, path);
    }
    case FieldType::kBool:
      return ToBool(value, path);
    case FieldType::kString: {
      if (!value.is_string()) {
        throw ConfigError(path + ": expected a string, got " + Short(value) + " (" +
                          value.type_name() + "); quote it");
      }
      CheckChoice(value.get<std::string>(), field, path);
      return value;
    }
    default:
      break;
  }
  throw ConfigError(path + ": internal error: not a scalar type");
}

void NormalizeMessage(Json& node, const MessageSpec& message, const std::string& path);

void NormalizeField(Json& value, const FieldSpec& field, const std::string& path) {
  auto element_type = [&]() {
    switch (field.type) {
      case FieldType::kStringList:
        return FieldType::kString;
      case FieldType::kIntList:
        return FieldType::kInt;
      default:
        return FieldType::kDouble;
    }
  };
  switch (field.type) {
    case FieldType::kMessage:
      NormalizeMessage(value, *field.message, path);
      return;
    case FieldType::kMessageList:
    case FieldType::kStringList:
    case FieldType::kIntList:
    case FieldType::kDoubleList: {
      if (!value.is_array()) {
        throw ConfigError(
            path + ": expected a list (JSON array) of " +
            (field.type == FieldType::kMessageList ? field.message->name + " objects"
                                                   : config_schema::TypeName(field).substr(8)) +
            ", got " + Short(value) + " (" + value.type_name() + "); wrap a single value in [ ]");
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string item_path = path + "[" + std::to_string(i) + "]";
        if (field.type == FieldType::kMessageList) {
          NormalizeMessage(value[i], *field.message, item_path);
        } else {
          value[i] = NormalizeScalar(value[i], element_type(), field, item_path);
        }
      }
      return;
    }
    default:
      value = NormalizeScalar(value, field.type, field, path);
  }
}

void NormalizeMessage(Json& node, const MessageSpec& message, const std::string& path) {
  if (!node.is_object()) {
    throw ConfigError(Where(path) + ": expected a JSON object (" + message.name + "), got " +
                      Short(node) + " (" + node.type_name() + ")");
  }
  for (auto& item : node.items()) {
    const FieldSpec* field = message.Find(item.key());
    if (field == nullptr) UnknownKey(item.key(), message, path);
    if (field->unsupported) UnsupportedKey(*field, message, path);
    NormalizeField(item.value(), *field, JoinPath(path, item.key()));
  }
  for (const config_schema::OneofSpec& oneof : message.oneofs) {
    std::vector<std::string> present;
    for (const FieldSpec& field : message.fields) {
      if (field.oneof == oneof.name && node.contains(field.key)) present.push_back(field.key);
    }
    const std::vector<std::string> members = SupportedMembers(message, oneof.name);
    if (present.size() > 1) {
      throw ConfigError(Where(path) + ": " + Quoted(present) + " are all set but they are " +
                        "alternatives (" + oneof.name + "); keep exactly one of " +
                        JoinList(members));
    }
    if (present.empty() && oneof.required) {
      throw ConfigError(Where(path) + ": no " + oneof.name + " set; add exactly one of " +
                        JoinList(members));
    }
  }
  for (const FieldSpec& field : message.fields) {
    if (node.contains(field.key)) continue;
    if (field.required) {
      throw ConfigError(JoinPath(path, field.key) + ": missing; " + message.name + " requires '" +
                        field.key + "' (" + field.doc + ")");
    }
    if (field.default_value.is_null()) continue;
    Json value = field.default_value;
    NormalizeField(value, field, JoinPath(path, field.key));
    node[field.key] = std::move(value);
  }
}

// ---------------------------------------------------------------------------------------------
// edit_config_json

struct PathSegment {
  std::string key;
  std::vector<std::string> selectors;  // "[...]" contents, in order
};

std::vector<PathSegment> SplitPath(const std::string& path, const std::string& prefix) {
  std::vector<PathSegment> segments;
  std::size_t i = 0;
  while (i <= path.size()) {
    PathSegment segment;
    while (i < path.size() && path[i] != '.' && path[i] != '[') segment.key += path[i++];
    while (i < path.size() && path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string::npos) {
        throw ConfigError(prefix + "unbalanced '[' in the path; write name[index] or " +
                          "name[key=value]");
      }
      segment.selectors.push_back(path.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    if (segment.key.empty()) {
      throw ConfigError(prefix + "empty key in the path; write dotted keys such as " +
                        "\"train_config.num_steps\"");
    }
    segments.push_back(std::move(segment));
    if (i == path.size()) break;
    if (path[i] != '.') {
      throw ConfigError(prefix + "expected '.' or '[' after '" + segments.back().key + "'");
    }
    ++i;
  }
  return segments;
}

bool SelectorMatches(const Json& element, const std::string& key, const std::string& value) {
  auto equal = [&](const Json& field) {
    return field.is_string() ? field.get<std::string>() == value : field.dump() == value;
  };
  if (!element.is_object()) return false;
  if (element.contains(key)) return equal(element.at(key));
  for (const auto& item : element.items()) {  // through a oneof wrapper ({"id_feature": {...}})
    if (item.value().is_object() && item.value().contains(key) && equal(item.value().at(key))) {
      return true;
    }
  }
  return false;
}

void ApplyOverride(Json& node, const MessageSpec& message, const std::vector<PathSegment>& segments,
                   std::size_t index, const std::string& walked, const Json& value,
                   const std::string& prefix);

// Applies the remaining selectors of segments[index] to `list`, then continues the path.
void ApplySelectors(Json& list, const FieldSpec& field, const std::vector<PathSegment>& segments,
                    std::size_t index, std::size_t selector, const std::string& walked,
                    const Json& value, const std::string& prefix) {
  const PathSegment& segment = segments[index];
  const bool last_segment = index + 1 == segments.size();
  if (selector == segment.selectors.size()) {
    if (last_segment) {
      list = value;
      return;
    }
    throw ConfigError(prefix + walked + " is a list; select an element with [index] or " +
                      "[key=value] before '." + segments[index + 1].key + "'");
  }
  if (!list.is_array()) {
    throw ConfigError(prefix + walked + " does not exist or is not a list (got " + Short(list) +
                      ")");
  }
  const std::string& text = segment.selectors[selector];
  std::vector<std::size_t> matches;
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos) {
    std::size_t position = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), position);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
      throw ConfigError(prefix + walked + "[" + text + "]: a selector is [index] or [key=value]");
    }
    if (position >= list.size()) {
      throw ConfigError(prefix + walked + "[" + text + "] does not exist: " + walked + " has " +
                        std::to_string(list.size()) + " element(s)");
    }
    matches.push_back(position);
  } else {
    const std::string key = text.substr(0, eq);
    const std::string wanted = text.substr(eq + 1);
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (SelectorMatches(list[i], key, wanted)) matches.push_back(i);
    }
    if (matches.empty()) {
      for (const Json& element : list) {
        if (!element.is_object()) continue;
        for (const auto& item : element.items()) {
          if (item.key() == key) seen.push_back(Short(item.value()));
          if (item.value().is_object() && item.value().contains(key)) {
            seen.push_back(Short(item.value().at(key)));
          }
        }
      }
      throw ConfigError(prefix + walked + "[" + text + "] does not exist: no element of " + walked +
                        " has " + key + " = " + wanted +
                        (seen.empty() ? std::string(" (no element has the key '" + key + "')")
                                      : " (values present: " + JoinList(seen) + ")"));
    }
  }
  const bool last_selector = selector + 1 == segment.selectors.size();
  for (std::size_t position : matches) {
    Json& element = list[position];
    const std::string element_path = walked + "[" + std::to_string(position) + "]";
    if (!last_selector) {
      ApplySelectors(element, field, segments, index, selector + 1, element_path, value, prefix);
    } else if (last_segment) {
      element = value;
    } else if (field.type == FieldType::kMessageList) {
      ApplyOverride(element, *field.message, segments, index + 1, element_path, value, prefix);
    } else {
      throw ConfigError(prefix + element_path + " is a " +
                        config_schema::TypeName(field).substr(8) +
                        ", not a message; it has no key '" + segments[index + 1].key + "'");
    }
  }
}

void ApplyOverride(Json& node, const MessageSpec& message, const std::vector<PathSegment>& segments,
                   std::size_t index, const std::string& walked, const Json& value,
                   const std::string& prefix) {
  const PathSegment& segment = segments[index];
  const FieldSpec* field = message.Find(segment.key);
  if (field == nullptr) UnknownKey(segment.key, message, walked, prefix);
  if (field->unsupported) UnsupportedKey(*field, message, walked, prefix);
  if (!node.is_object()) {
    throw ConfigError(prefix + Where(walked) + " is not a JSON object (got " + Short(node) + ")");
  }
  const std::string here = JoinPath(walked, segment.key);
  const bool is_list = field->type == FieldType::kMessageList ||
                       field->type == FieldType::kStringList ||
                       field->type == FieldType::kIntList || field->type == FieldType::kDoubleList;
  if (!segment.selectors.empty()) {
    if (!is_list) {
      throw ConfigError(prefix + here + " is a " + config_schema::TypeName(*field) +
                        ", not a list; remove the [" + segment.selectors.front() + "] selector");
    }
    if (!node.contains(segment.key)) {
      throw ConfigError(prefix + here + "[" + segment.selectors.front() +
                        "] does not exist: " + here + " is not set in the config");
    }
    ApplySelectors(node[segment.key], *field, segments, index, 0, here, value, prefix);
    return;
  }
  if (index + 1 == segments.size()) {
    node[segment.key] = value;
    return;
  }
  if (field->type != FieldType::kMessage) {
    throw ConfigError(prefix + here + " is a " + config_schema::TypeName(*field) +
                      (is_list ? "; select an element with [index] or [key=value] before '."
                               : ", not a message; it has no key '") +
                      segments[index + 1].key + "'");
  }
  if (!node.contains(segment.key)) node[segment.key] = Json::object();
  ApplyOverride(node[segment.key], *field->message, segments, index + 1, here, value, prefix);
}

void ApplyOverrides(Json& root, const std::string& edit_config_json) {
  if (edit_config_json.find_first_not_of(" \t\r\n") == std::string::npos) return;
  Json edits;
  try {
    edits = Json::parse(edit_config_json);
  } catch (const Json::parse_error& error) {
    throw ConfigError(std::string("edit_config_json: not valid JSON (") + error.what() +
                      "); pass an object such as {\"train_config.num_steps\": 100}");
  }
  if (!edits.is_object()) {
    throw ConfigError("edit_config_json: expected a JSON object of {\"dotted.path\": value}, got " +
                      Short(edits));
  }
  for (const auto& item : edits.items()) {
    const std::string prefix = "edit_config_json '" + item.key() + "': ";
    ApplyOverride(root, config_schema::Root(), SplitPath(item.key(), prefix), 0, "", item.value(),
                  prefix);
  }
}

// ---------------------------------------------------------------------------------------------
// Reading the normalised JSON into the structs.

std::vector<std::string> Strings(const Json& list) {
  return list.get<std::vector<std::string>>();
}

std::vector<ShardingType> ShardingTypes(const Json& constraints) {
  std::vector<ShardingType> types;
  for (const Json& name : constraints.at("sharding_types")) {
    types.push_back(ParseShardingType(name.get<std::string>()));  // the schema checked the name
  }
  return types;
}

struct OptimizerName {
  const char* type;
  const char* key;
};
constexpr OptimizerName kOptimizers[] = {{"sgd", "sgd_optimizer"},
                                         {"adagrad", "adagrad_optimizer"},
                                         {"adam", "adam_optimizer"},
                                         {"rowwise_adagrad", "rowwise_adagrad_optimizer"}};

OptimizerConfig ReadOptimizer(const Json& node) {
  OptimizerConfig optimizer;
  for (const OptimizerName& name : kOptimizers) {
    if (!node.contains(name.key)) continue;
    const Json& m = node.at(name.key);
    optimizer.type = name.type;
    optimizer.lr = m.at("lr").get<double>();
    optimizer.weight_decay = m.at("weight_decay").get<double>();
    optimizer.beta1 = m.value("beta1", optimizer.beta1);
    optimizer.beta2 = m.value("beta2", optimizer.beta2);
    optimizer.eps = m.value("eps", optimizer.eps);
    optimizer.initial_accumulator_value =
        m.value("initial_accumulator_value", optimizer.initial_accumulator_value);
  }
  return optimizer;
}

MlpConfig ReadMlp(const Json& node) {
  MlpConfig mlp;
  mlp.hidden_units = node.at("hidden_units").get<std::vector<std::int64_t>>();
  mlp.activation = node.at("activation").get<std::string>();
  mlp.use_bn = node.at("use_bn").get<bool>();
  mlp.dropout_ratio = node.at("dropout_ratio").get<double>();
  return mlp;
}

FeatureConfig ReadFeature(const Json& wrapper) {
  FeatureConfig feature;
  const bool is_id = wrapper.contains("id_feature");
  const Json& node = is_id ? wrapper.at("id_feature") : wrapper.at("raw_feature");
  feature.kind = is_id ? FeatureKind::kId : FeatureKind::kRaw;
  feature.feature_name = node.at("feature_name").get<std::string>();
  feature.expression = node.at("expression").get<std::string>();
  feature.embedding_dim = node.at("embedding_dim").get<std::int64_t>();
  feature.embedding_name = node.at("embedding_name").get<std::string>();
  feature.pooling = node.at("pooling").get<std::string>();
  feature.separator = node.at("separator").get<std::string>();
  feature.sharding_types = ShardingTypes(node.at("embedding_constraints"));
  if (is_id) {
    feature.hash_bucket_size = node.at("hash_bucket_size").get<std::int64_t>();
    feature.num_buckets = node.at("num_buckets").get<std::int64_t>();
    feature.vocab_list = Strings(node.at("vocab_list"));
  } else {
    feature.boundaries = node.at("boundaries").get<std::vector<double>>();
    feature.normalizer = node.at("normalizer").get<std::string>();
    feature.value_dim = node.at("value_dim").get<std::int64_t>();
    feature.default_value = node.at("default_value").get<double>();
  }
  return feature;
}

PipelineConfig Read(const Json& root) {
  PipelineConfig config;
  config.train_input_path = root.at("train_input_path").get<std::string>();
  config.eval_input_path = root.at("eval_input_path").get<std::string>();
  config.model_dir = root.at("model_dir").get<std::string>();

  const Json& t = root.at("train_config");
  TrainConfig& train = config.train_config;
  train.sparse_optimizer = ReadOptimizer(t.at("sparse_optimizer"));
  train.dense_optimizer = ReadOptimizer(t.at("dense_optimizer"));
  train.num_steps = t.at("num_steps").get<std::int64_t>();
  train.num_epochs = t.at("num_epochs").get<std::int64_t>();
  train.log_step_count_steps = t.at("log_step_count_steps").get<std::int64_t>();
  train.save_checkpoints_steps = t.at("save_checkpoints_steps").get<std::int64_t>();
  train.keep_checkpoint_max = t.at("keep_checkpoint_max").get<std::int64_t>();
  train.gradient_accumulation_steps = t.at("gradient_accumulation_steps").get<std::int64_t>();
  const Json& clip = t.at("grad_clipping");
  train.grad_clipping.clipping_type = clip.at("clipping_type").get<std::string>();
  train.grad_clipping.max_gradient = clip.at("max_gradient").get<double>();
  train.grad_clipping.norm_type = clip.at("norm_type").is_string()
                                      ? std::numeric_limits<double>::infinity()
                                      : clip.at("norm_type").get<double>();
  train.grad_clipping.enable_global_grad_clip = clip.at("enable_global_grad_clip").get<bool>();
  train.mixed_precision = t.at("mixed_precision").get<std::string>();
  if (t.contains("grad_scaler")) {
    const Json& s = t.at("grad_scaler");
    GradScalerConfig scaler;
    scaler.init_scale = s.at("init_scale").get<double>();
    scaler.growth_factor = s.at("growth_factor").get<double>();
    scaler.backoff_factor = s.at("backoff_factor").get<double>();
    scaler.growth_interval = s.at("growth_interval").get<std::int64_t>();
    train.grad_scaler = scaler;
  }
  train.seed = t.at("seed").get<std::uint64_t>();
  train.global_sharding_types = ShardingTypes(t.at("global_embedding_constraints"));

  const Json& e = root.at("eval_config");
  config.eval_config.num_steps = e.at("num_steps").get<std::int64_t>();
  config.eval_config.log_step_count_steps = e.at("log_step_count_steps").get<std::int64_t>();

  const Json& d = root.at("data_config");
  DataConfig& data = config.data_config;
  data.batch_size = d.at("batch_size").get<std::int64_t>();
  data.eval_batch_size = d.at("eval_batch_size").get<std::int64_t>();
  data.dataset_type = d.at("dataset_type").get<std::string>();
  data.label_fields = Strings(d.at("label_fields"));
  data.num_workers = d.at("num_workers").get<std::int64_t>();
  data.delimiter = d.at("delimiter").get<std::string>();
  data.with_header = d.at("with_header").get<bool>();
  data.input_fields = Strings(d.at("input_fields"));
  data.drop_remainder = d.at("drop_remainder").get<bool>();

  for (const Json& feature : root.at("feature_configs")) {
    config.feature_configs.push_back(ReadFeature(feature));
  }

  const Json& m = root.at("model_config");
  ModelConfig& model = config.model_config;
  for (const Json& g : m.at("feature_groups")) {
    FeatureGroupConfig group;
    group.group_name = g.at("group_name").get<std::string>();
    group.feature_names = Strings(g.at("feature_names"));
    group.group_type = g.at("group_type").get<std::string>();
    model.feature_groups.push_back(std::move(group));
  }
  if (m.contains("dlrm")) {
    const Json& x = m.at("dlrm");
    model.model_type = "dlrm";
    model.dense_mlp = ReadMlp(x.at("dense_mlp"));
    model.final_mlp = ReadMlp(x.at("final"));
    model.arch_with_sparse = x.at("arch_with_sparse").get<bool>();
  } else if (m.contains("deep_fm")) {
    const Json& x = m.at("deep_fm");
    model.model_type = "deep_fm";
    model.deep_mlp = ReadMlp(x.at("deep"));
    model.final_mlp = ReadMlp(x.at("final"));
    model.wide_embedding_dim = x.at("wide_embedding_dim").get<std::int64_t>();
  } else {
    const Json& x = m.at("multi_tower");
    model.model_type = "multi_tower";
    for (const Json& tower_json : x.at("towers")) {
      TowerConfig tower;
      tower.input = tower_json.at("input").get<std::string>();
      tower.mlp = ReadMlp(tower_json.at("mlp"));
      model.towers.push_back(std::move(tower));
    }
    model.final_mlp = ReadMlp(x.at("final"));
  }
  model.metric_auc = false;
  bool seen_grouped = false;
  for (std::size_t i = 0; i < m.at("metrics").size(); ++i) {
    const Json& metric = m.at("metrics")[i];
    const std::string path = "model_config.metrics[" + std::to_string(i) + "]";
    if (metric.contains("auc")) {
      if (model.metric_auc) throw ConfigError(path + ": auc listed twice; keep one");
      model.metric_auc = true;
    } else {
      if (seen_grouped) throw ConfigError(path + ": grouped_auc listed twice; keep one");
      seen_grouped = true;
      model.grouped_auc_key = metric.at("grouped_auc").at("grouping_key").get<std::string>();
      if (model.grouped_auc_key.empty()) {
        throw ConfigError(path + ".grouped_auc.grouping_key: empty; name the input column that " +
                          "defines the groups (e.g. \"user_id\")");
      }
    }
  }
  if (m.at("losses").size() != 1) {
    throw ConfigError(
        "model_config.losses: " + std::to_string(m.at("losses").size()) +
        " losses given; tzrec_train trains exactly one: [{\"binary_cross_entropy\": {}}]");
  }
  model.loss = "binary_cross_entropy";
  return config;
}

// ---------------------------------------------------------------------------------------------
// Validation of values and cross references.

void Require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

void CheckPositive(std::int64_t value, const std::string& path, const std::string& fix = "") {
  Require(value > 0,
          path + ": must be > 0, got " + std::to_string(value) + (fix.empty() ? "" : "; " + fix));
}

void CheckNonNegative(std::int64_t value, const std::string& path, const std::string& meaning) {
  Require(value >= 0, path + ": must be >= 0, got " + std::to_string(value) + " (" + meaning + ")");
}

std::string Num(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void ValidateOptimizer(const OptimizerConfig& optimizer, const std::string& path) {
  const std::string where = path + "." + optimizer.type + "_optimizer";
  Require(optimizer.lr > 0, where + ".lr: must be > 0, got " + Num(optimizer.lr));
  Require(optimizer.weight_decay >= 0,
          where + ".weight_decay: must be >= 0, got " + Num(optimizer.weight_decay));
  Require(optimizer.eps > 0, where + ".eps: must be > 0, got " + Num(optimizer.eps));
  Require(optimizer.initial_accumulator_value >= 0,
          where + ".initial_accumulator_value: must be >= 0, got " +
              Num(optimizer.initial_accumulator_value));
  Require(optimizer.beta1 >= 0 && optimizer.beta1 < 1,
          where + ".beta1: must be in [0, 1), got " + Num(optimizer.beta1));
  Require(optimizer.beta2 >= 0 && optimizer.beta2 < 1,
          where + ".beta2: must be in [0, 1), got " + Num(optimizer.beta2));
}

void ValidateMlp(const MlpConfig& mlp, const std::string& path, bool need_units) {
  Require(!need_units || !mlp.hidden_units.empty(),
          path + ".hidden_units: empty; give at least one layer width, e.g. [64, 32]");
  for (std::size_t i = 0; i < mlp.hidden_units.size(); ++i) {
    CheckPositive(mlp.hidden_units[i], path + ".hidden_units[" + std::to_string(i) + "]",
                  "a layer width");
  }
  Require(mlp.dropout_ratio >= 0 && mlp.dropout_ratio < 1,
          path + ".dropout_ratio: must be in [0, 1), got " + Num(mlp.dropout_ratio));
}

std::string FeaturePath(std::size_t index, const FeatureConfig& feature) {
  return "feature_configs[" + std::to_string(index) + "]." +
         (feature.kind == FeatureKind::kId ? "id_feature" : "raw_feature");
}

void ValidateFeature(const FeatureConfig& f, const std::string& path) {
  Require(!f.feature_name.empty(), path + ".feature_name: empty; every feature needs a name");
  if (f.kind == FeatureKind::kId) {
    CheckPositive(f.embedding_dim, path + ".embedding_dim", "set the embedding width, e.g. 16");
    CheckNonNegative(f.hash_bucket_size, path + ".hash_bucket_size", "table rows");
    CheckNonNegative(f.num_buckets, path + ".num_buckets", "table rows");
    std::vector<std::string> set;
    if (f.hash_bucket_size > 0) set.push_back("hash_bucket_size");
    if (f.num_buckets > 0) set.push_back("num_buckets");
    if (!f.vocab_list.empty()) set.push_back("vocab_list");
    Require(set.size() == 1,
            path + ": " +
                (set.empty() ? std::string("no table size")
                             : "both " + JoinList(set, " and ") + " are set") +
                " (feature '" + f.feature_name +
                "'); set exactly one of hash_bucket_size, num_buckets, vocab_list");
    std::set<std::string> vocab;
    for (const std::string& word : f.vocab_list) {
      Require(vocab.insert(word).second, path + ".vocab_list: \"" + word +
                                             "\" appears twice; vocabulary entries must be unique");
    }
  } else {
    for (std::size_t i = 1; i < f.boundaries.size(); ++i) {
      Require(f.boundaries[i] > f.boundaries[i - 1],
              path + ".boundaries: must be strictly increasing, but [" + std::to_string(i - 1) +
                  "] = " + Num(f.boundaries[i - 1]) + " and [" + std::to_string(i) +
                  "] = " + Num(f.boundaries[i]));
    }
    CheckPositive(f.value_dim, path + ".value_dim", "the number of values per row");
    if (f.boundaries.empty()) {
      Require(f.embedding_dim == 0,
              path + ".embedding_dim: " + std::to_string(f.embedding_dim) +
                  " without boundaries; a dense raw feature has no table: add boundaries or "
                  "remove embedding_dim");
      try {
        ParseNormalizer(f.normalizer);
      } catch (const ConfigError& error) {
        throw ConfigError(path + ".normalizer: " + error.what());
      }
    } else {
      CheckPositive(f.embedding_dim, path + ".embedding_dim",
                    "a bucketized raw feature (with boundaries) needs the embedding width");
      Require(f.normalizer.empty(),
              path + ".normalizer: \"" + f.normalizer + "\" is set together with boundaries; " +
                  "a bucketized feature uses the raw value: remove one of them");
      Require(f.value_dim == 1,
              path + ".value_dim: must be 1 with boundaries, got " + std::to_string(f.value_dim));
    }
  }
  if (!f.sharding_types.empty() && !f.is_sparse()) {
    throw ConfigError(path + ".embedding_constraints: set on a dense raw feature, which has no " +
                      "table; remove it");
  }
}

std::string SuggestName(const std::string& name, const std::vector<std::string>& names) {
  if (names.empty()) return "";
  return " (did you mean '" + Closest(name, names) + "'?)";
}

void Validate(PipelineConfig& config) {
  TrainConfig& train = config.train_config;
  ValidateOptimizer(train.sparse_optimizer, "train_config.sparse_optimizer");
  ValidateOptimizer(train.dense_optimizer, "train_config.dense_optimizer");
  CheckNonNegative(train.num_steps, "train_config.num_steps", "0: unset");
  CheckNonNegative(train.num_epochs, "train_config.num_epochs", "0: unset");
  Require(!(train.num_steps > 0 && train.num_epochs > 0),
          "train_config: both num_steps (" + std::to_string(train.num_steps) +
              ") and num_epochs (" + std::to_string(train.num_epochs) +
              ") are set; keep exactly one");
  if (train.num_steps == 0 && train.num_epochs == 0) train.num_epochs = 1;
  CheckPositive(train.log_step_count_steps, "train_config.log_step_count_steps");
  CheckNonNegative(train.save_checkpoints_steps, "train_config.save_checkpoints_steps",
                   "0: only at the end");
  CheckNonNegative(train.keep_checkpoint_max, "train_config.keep_checkpoint_max", "0: keep all");
  CheckNonNegative(train.gradient_accumulation_steps, "train_config.gradient_accumulation_steps",
                   "0 or 1: off");
  const GradClippingConfig& clip = train.grad_clipping;
  if (clip.clipping_type != "none") {
    Require(clip.max_gradient > 0, "train_config.grad_clipping.max_gradient: must be > 0 with " +
                                       clip.clipping_type + " clipping, got " +
                                       Num(clip.max_gradient));
  }
  Require(clip.norm_type > 0, "train_config.grad_clipping.norm_type: must be > 0 or \"inf\", got " +
                                  Num(clip.norm_type));
  if (train.grad_scaler) {
    const GradScalerConfig& s = *train.grad_scaler;
    const std::string p = "train_config.grad_scaler";
    Require(s.init_scale > 0, p + ".init_scale: must be > 0, got " + Num(s.init_scale));
    Require(s.growth_factor > 1, p + ".growth_factor: must be > 1, got " + Num(s.growth_factor));
    Require(s.backoff_factor > 0 && s.backoff_factor < 1,
            p + ".backoff_factor: must be in (0, 1), got " + Num(s.backoff_factor));
    CheckPositive(s.growth_interval, p + ".growth_interval");
  }

  CheckNonNegative(config.eval_config.num_steps, "eval_config.num_steps",
                   "0: the whole eval input");
  CheckPositive(config.eval_config.log_step_count_steps, "eval_config.log_step_count_steps");

  const DataConfig& data = config.data_config;
  CheckPositive(data.batch_size, "data_config.batch_size", "the per-rank batch size, e.g. 1024");
  CheckNonNegative(data.eval_batch_size, "data_config.eval_batch_size", "0: batch_size");
  Require(!data.label_fields.empty(),
          "data_config.label_fields: empty; name the label column, e.g. [\"label\"]");
  CheckPositive(data.num_workers, "data_config.num_workers", "reader threads per rank (>= 1)");
  if (data.dataset_type == "CsvDataset") {
    Require(!data.delimiter.empty(),
            "data_config.delimiter: empty; CsvDataset needs a delimiter such as \",\" or \"\\t\"");
    Require(data.with_header || !data.input_fields.empty(),
            "data_config.input_fields: empty with with_header = false; CsvDataset needs the column "
            "names in file order (or a header line: with_header = true)");
  }
  if (!data.input_fields.empty()) {
    std::set<std::string> columns;
    for (const std::string& column : data.input_fields) {
      Require(columns.insert(column).second,
              "data_config.input_fields: column '" + column + "' appears twice");
    }
    for (const std::string& label : data.label_fields) {
      Require(columns.count(label) == 1, "data_config.label_fields: '" + label +
                                             "' is not one of data_config.input_fields" +
                                             SuggestName(label, data.input_fields));
    }
  }

  // Features.
  std::map<std::string, std::size_t> feature_index;
  std::vector<std::string> feature_names;
  for (std::size_t i = 0; i < config.feature_configs.size(); ++i) {
    const FeatureConfig& f = config.feature_configs[i];
    const std::string path = FeaturePath(i, f);
    ValidateFeature(f, path);
    const auto [it, inserted] = feature_index.emplace(f.feature_name, i);
    Require(inserted, path + ".feature_name: '" + f.feature_name + "' is already used by " +
                          FeaturePath(it->second, config.feature_configs[it->second]) +
                          "; feature names must be unique");
    feature_names.push_back(f.feature_name);
    if (!data.input_fields.empty()) {
      const std::string column = f.input_column();
      Require(std::find(data.input_fields.begin(), data.input_fields.end(), column) !=
                  data.input_fields.end(),
              path + ".expression: input column '" + column + "' is not one of " +
                  "data_config.input_fields" + SuggestName(column, data.input_fields));
    }
  }
  // Shared tables agree on dim, size and pooling.
  std::map<std::string, std::size_t> table_owner;
  for (std::size_t i = 0; i < config.feature_configs.size(); ++i) {
    const FeatureConfig& f = config.feature_configs[i];
    if (!f.is_sparse()) continue;
    const auto [it, inserted] = table_owner.emplace(f.table_name(), i);
    if (inserted) continue;
    const FeatureConfig& first = config.feature_configs[it->second];
    const std::string lead = FeaturePath(i, f) + ": feature '" + f.feature_name +
                             "' shares table '" + f.table_name() + "' with feature '" +
                             first.feature_name + "' (" + FeaturePath(it->second, first) + ") but ";
    const std::string tail = "; features with the same embedding_name must agree on it";
    Require(f.embedding_dim == first.embedding_dim,
            lead + "embedding_dim " + std::to_string(f.embedding_dim) +
                " != " + std::to_string(first.embedding_dim) + tail);
    Require(f.num_embeddings() == first.num_embeddings(),
            lead + "its table size " + std::to_string(f.num_embeddings()) +
                " != " + std::to_string(first.num_embeddings()) + tail);
    Require(f.pooling == first.pooling,
            lead + "pooling \"" + f.pooling + "\" != \"" + first.pooling + "\"" + tail);
    Require(f.sharding_types.empty() || first.sharding_types.empty() ||
                f.sharding_types == first.sharding_types,
            lead + "its embedding_constraints.sharding_types differ" + tail);
  }

  // Feature groups.
  ModelConfig& model = config.model_config;
  Require(!model.feature_groups.empty(),
          "model_config.feature_groups: empty; define the groups the model reads (e.g. \"dense\" "
          "and \"sparse\" for dlrm)");
  std::map<std::string, std::size_t> group_index;
  std::vector<std::string> group_names;
  for (std::size_t g = 0; g < model.feature_groups.size(); ++g) {
    const FeatureGroupConfig& group = model.feature_groups[g];
    const std::string path = "model_config.feature_groups[" + std::to_string(g) + "]";
    Require(!group.group_name.empty(), path + ".group_name: empty; every group needs a name");
    Require(
        group_index.emplace(group.group_name, g).second,
        path + ".group_name: '" + group.group_name + "' is defined twice; names must be unique");
    group_names.push_back(group.group_name);
    Require(!group.feature_names.empty(),
            path + ".feature_names: empty (group '" + group.group_name + "'); list its features");
    std::set<std::string> seen;
    for (std::size_t k = 0; k < group.feature_names.size(); ++k) {
      const std::string& name = group.feature_names[k];
      const std::string item = path + ".feature_names[" + std::to_string(k) + "]";
      Require(feature_index.count(name) == 1,
              item + ": unknown feature '" + name + "' in group '" + group.group_name +
                  "'; define it in feature_configs" + SuggestName(name, feature_names));
      Require(seen.insert(name).second,
              item + ": feature '" + name + "' listed twice in group '" + group.group_name + "'");
    }
  }
  auto group_of = [&](const std::string& name,
                      const std::string& path) -> const FeatureGroupConfig& {
    const auto it = group_index.find(name);
    Require(it != group_index.end(),
            path + ": feature group '" + name + "' is not defined in model_config.feature_groups" +
                SuggestName(name, group_names) + "; defined groups: " + JoinList(group_names));
    return model.feature_groups[it->second];
  };
  auto feature = [&](const std::string& name) -> const FeatureConfig& {
    return config.feature_configs[feature_index.at(name)];
  };
  // All sparse features of a group share one dim; returns it (0 when the group has none).
  auto shared_dim = [&](const FeatureGroupConfig& group, const std::string& path,
                        const std::string& why) {
    std::int64_t dim = 0;
    std::string first;
    for (const std::string& name : group.feature_names) {
      const FeatureConfig& f = feature(name);
      if (!f.is_sparse()) continue;
      if (dim == 0) {
        dim = f.embedding_dim;
        first = name;
      }
      Require(f.embedding_dim == dim,
              path + ": sparse features of group '" + group.group_name + "' must share one " +
                  "embedding_dim (" + why + "), but '" + first + "' has " + std::to_string(dim) +
                  " and '" + name + "' has " + std::to_string(f.embedding_dim) +
                  "; set every embedding_dim of the group to the same value");
    }
    return dim;
  };

  if (model.model_type == "dlrm") {
    const std::string path = "model_config.dlrm";
    const FeatureGroupConfig& dense = group_of("dense", path + " (group \"dense\")");
    const FeatureGroupConfig& sparse = group_of("sparse", path + " (group \"sparse\")");
    for (const std::string& name : dense.feature_names) {
      Require(!feature(name).is_sparse(),
              path + ": group \"dense\" holds '" + name +
                  "', a sparse feature (an id feature or a "
                  "raw feature with boundaries); move it to group \"sparse\"");
    }
    for (const std::string& name : sparse.feature_names) {
      Require(feature(name).is_sparse(),
              path + ": group \"sparse\" holds '" + name +
                  "', a dense raw feature; move it to "
                  "group \"dense\" (or give it boundaries and an embedding_dim)");
    }
    const std::int64_t dim = shared_dim(sparse, path, "DLRM's interaction takes dot products");
    ValidateMlp(model.dense_mlp, path + ".dense_mlp", true);
    ValidateMlp(model.final_mlp, path + ".final", false);
    if (model.arch_with_sparse) {
      const std::int64_t last = model.dense_mlp.hidden_units.back();
      Require(last == dim,
              path + ".dense_mlp.hidden_units: the last unit " + std::to_string(last) +
                  " must equal the sparse embedding_dim " + std::to_string(dim) +
                  " (the dense output joins the dot interaction with the embeddings); set the "
                  "last unit to " +
                  std::to_string(dim));
    }
  } else if (model.model_type == "deep_fm") {
    const std::string path = "model_config.deep_fm";
    const FeatureGroupConfig& wide = group_of("wide", path + " (group \"wide\")");
    const FeatureGroupConfig& deep = group_of("deep", path + " (group \"deep\")");
    for (const std::string& name : wide.feature_names) {
      Require(feature(name).is_sparse(),
              path + ": group \"wide\" holds '" + name +
                  "', a dense raw feature; the wide part "
                  "embeds sparse features only: remove it from \"wide\"");
    }
    shared_dim(deep, path, "the FM part takes dot products of the deep group's embeddings");
    CheckPositive(model.wide_embedding_dim, path + ".wide_embedding_dim");
    ValidateMlp(model.deep_mlp, path + ".deep", true);
    ValidateMlp(model.final_mlp, path + ".final", false);
  } else {
    const std::string path = "model_config.multi_tower";
    Require(!model.towers.empty(), path + ".towers: empty; add one tower per feature group");
    std::set<std::string> used;
    for (std::size_t i = 0; i < model.towers.size(); ++i) {
      const std::string tower_path = path + ".towers[" + std::to_string(i) + "]";
      group_of(model.towers[i].input, tower_path + ".input");
      Require(used.insert(model.towers[i].input).second,
              tower_path + ".input: group '" + model.towers[i].input + "' already feeds another " +
                  "tower; each group feeds one tower");
      ValidateMlp(model.towers[i].mlp, tower_path + ".mlp", true);
    }
    ValidateMlp(model.final_mlp, path + ".final", false);
  }
}

// ---------------------------------------------------------------------------------------------
// ToJson

Json OptimizerJson(const OptimizerConfig& o) {
  Json body;
  body["lr"] = o.lr;
  if (o.type == "adam") {
    body["beta1"] = o.beta1;
    body["beta2"] = o.beta2;
    body["eps"] = o.eps;
  }
  body["weight_decay"] = o.weight_decay;
  if (o.type == "adagrad" || o.type == "rowwise_adagrad") {
    body["initial_accumulator_value"] = o.initial_accumulator_value;
    body["eps"] = o.eps;
  }
  Json out;
  out[o.type + "_optimizer"] = body;
  out["constant_learning_rate"] = Json::object();
  return out;
}

Json MlpJson(const MlpConfig& mlp) {
  return Json{{"hidden_units", mlp.hidden_units},
              {"activation", mlp.activation},
              {"use_bn", mlp.use_bn},
              {"dropout_ratio", mlp.dropout_ratio}};
}

Json ConstraintsJson(const std::vector<ShardingType>& types) {
  Json names = Json::array();
  for (ShardingType type : types) names.push_back(std::string(ToString(type)));
  return Json{{"sharding_types", names}};
}

Json FeatureJson(const FeatureConfig& f) {
  Json body;
  body["feature_name"] = f.feature_name;
  body["expression"] = f.expression;
  body["embedding_dim"] = f.embedding_dim;
  if (f.kind == FeatureKind::kId) {
    if (f.hash_bucket_size > 0) body["hash_bucket_size"] = f.hash_bucket_size;
    if (f.num_buckets > 0) body["num_buckets"] = f.num_buckets;
    if (!f.vocab_list.empty()) body["vocab_list"] = f.vocab_list;
  } else {
    body["boundaries"] = f.boundaries;
    body["normalizer"] = f.normalizer;
    body["value_dim"] = f.value_dim;
    body["default_value"] = f.default_value;
  }
  body["embedding_name"] = f.embedding_name;
  body["pooling"] = f.pooling;
  body["separator"] = f.separator;
  body["embedding_constraints"] = ConstraintsJson(f.sharding_types);
  Json out;
  out[f.kind == FeatureKind::kId ? "id_feature" : "raw_feature"] = body;
  return out;
}

std::string MarkdownCell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// Where each message is used (the JSON paths of its uses), for the reference headings.
void CollectPaths(const MessageSpec& message, const std::string& path,
                  std::map<const MessageSpec*, std::vector<std::string>>& out) {
  out[&message].push_back(path);
  for (const FieldSpec& field : message.fields) {
    if (field.message == nullptr) continue;  // the schema has no cycles
    const std::string child =
        JoinPath(path, field.key) + (field.type == FieldType::kMessageList ? "[]" : "");
    CollectPaths(*field.message, child, out);
  }
}

std::string Anchor(const std::string& name) {
  std::string out;
  for (char c : name) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Public API

std::int64_t FeatureConfig::num_embeddings() const {
  if (kind == FeatureKind::kId) {
    if (hash_bucket_size > 0) return hash_bucket_size;
    if (num_buckets > 0) return num_buckets;
    if (!vocab_list.empty()) return static_cast<std::int64_t>(vocab_list.size()) + 2;
    return 0;
  }
  return boundaries.empty() ? 0 : static_cast<std::int64_t>(boundaries.size()) + 1;
}

std::string FeatureConfig::input_column() const {
  if (expression.empty()) return feature_name;
  const std::size_t colon = expression.rfind(':');
  return colon == std::string::npos ? expression : expression.substr(colon + 1);
}

std::string FeatureConfig::table_name() const {
  return embedding_name.empty() ? feature_name + "_emb" : embedding_name;
}

const FeatureConfig& PipelineConfig::Feature(const std::string& name) const {
  std::vector<std::string> names;
  for (const FeatureConfig& feature : feature_configs) {
    if (feature.feature_name == name) return feature;
    names.push_back(feature.feature_name);
  }
  throw ConfigError("no feature '" + name + "' in feature_configs" + SuggestName(name, names) +
                    "; defined features: " + (names.empty() ? "(none)" : JoinList(names)));
}

double Normalizer::Apply(double x) const {
  if (method == "log1p") return x > -1.0 ? std::log1p(x) : 0.0;
  if (method == "expression") {
    if (!expression_is_log) return x;
    return x + offset > 0.0 ? std::log(x + offset) : 0.0;
  }
  if (method == "minmax") return (x - min) / (max - min);
  if (method == "zscore") return (x - mean) / std;
  return x;
}

Normalizer ParseNormalizer(const std::string& text) {
  Normalizer normalizer;
  const std::string forms =
      "accepted forms: \"method=log1p\", \"method=expression,expr=log(x+C)\", "
      "\"method=expression,expr=x\", \"method=minmax,min=A,max=B\", \"method=zscore,mean=A,std=B\"";
  if (text.empty()) return normalizer;
  std::map<std::string, std::string> params;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    // expr=log(x+3) has no comma inside, but keep everything after "expr=" to the end anyway.
    if (text.compare(start, 5, "expr=") == 0) comma = std::string::npos;
    const std::string part = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("normalizer \"" + text + "\": '" + part + "' is not key=value; " + forms);
    }
    params[part.substr(0, eq)] = part.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto number = [&](const std::string& key) {
    const auto it = params.find(key);
    if (it == params.end()) {
      throw ConfigError("normalizer \"" + text + "\": method " + normalizer.method + " needs " +
                        key + "=<number>; " + forms);
    }
    double value = 0;
    const std::string& s = it->second;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (error != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(value)) {
      throw ConfigError("normalizer \"" + text + "\": " + key + "=" + s + " is not a number; " +
                        forms);
    }
    return value;
  };
  auto allow_only = [&](const std::vector<std::string>& keys) {
    for (const auto& [key, value] : params) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        throw ConfigError("normalizer \"" + text + "\": unknown parameter '" + key +
                          "' for method " + normalizer.method + "; " + forms);
      }
    }
  };
  const auto method = params.find("method");
  if (method == params.end()) {
    throw ConfigError("normalizer \"" + text + "\": no method=...; " + forms);
  }
  normalizer.method = method->second;
  if (normalizer.method == "log1p") {
    allow_only({"method"});
  } else if (normalizer.method == "expression") {
    allow_only({"method", "expr"});
    const auto expr = params.find("expr");
    if (expr == params.end()) {
      throw ConfigError("normalizer \"" + text + "\": method expression needs expr=...; " + forms);
    }
    std::string e;
    for (char c : expr->second) {
      if (c != ' ') e += c;
    }
    if (e == "x") {
      normalizer.expression_is_log = false;
    } else if (e == "log(x)") {
      normalizer.expression_is_log = true;
      normalizer.offset = 0.0;
    } else if (e.size() > 7 && e.compare(0, 6, "log(x+") == 0 && e.back() == ')') {
      const std::string c = e.substr(6, e.size() - 7);
      double value = 0;
      const auto [end, error] = std::from_chars(c.data(), c.data() + c.size(), value);
      if (error != std::errc() || end != c.data() + c.size() || !std::isfinite(value)) {
        throw ConfigError("normalizer \"" + text + "\": C in log(x+C) is not a number ('" + c +
                          "'); " + forms);
      }
      normalizer.expression_is_log = true;
      normalizer.offset = value;
    } else {
      throw ConfigError("normalizer \"" + text + "\": expression '" + expr->second +
                        "' is not supported (only x, log(x) and log(x+C)); " + forms);
    }
  } else if (normalizer.method == "minmax") {
    allow_only({"method", "min", "max"});
    normalizer.min = number("min");
    normalizer.max = number("max");
    if (!(normalizer.max > normalizer.min)) {
      throw ConfigError("normalizer \"" + text + "\": max (" + Num(normalizer.max) +
                        ") must be > min (" + Num(normalizer.min) + ")");
    }
  } else if (normalizer.method == "zscore") {
    allow_only({"method", "mean", "std"});
    normalizer.mean = number("mean");
    normalizer.std = number("std");
    if (!(normalizer.std > 0)) {
      throw ConfigError("normalizer \"" + text + "\": std must be > 0, got " + Num(normalizer.std));
    }
  } else {
    throw ConfigError("normalizer \"" + text + "\": unknown method '" + normalizer.method + "'; " +
                      forms);
  }
  return normalizer;
}

PipelineConfig ParsePipelineConfig(const std::string& json_text,
                                   const std::string& edit_config_json) {
  Json root;
  try {
    root = Json::parse(json_text, nullptr, true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& error) {
    throw ConfigError(std::string("pipeline config: not valid JSON: ") + error.what() + " (byte " +
                      std::to_string(error.byte) + ")");
  }
  if (!root.is_object()) {
    throw ConfigError("pipeline config: the top level must be a JSON object, got " + Short(root));
  }
  ApplyOverrides(root, edit_config_json);
  NormalizeMessage(root, config_schema::Root(), "");
  PipelineConfig config = Read(root);
  Validate(config);
  return config;
}

PipelineConfig LoadPipelineConfig(const std::string& path, const std::string& edit_config_json) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("pipeline config '" + path + "': cannot open it (" +
                      std::make_error_code(static_cast<std::errc>(errno)).message() +
                      "); check --pipeline_config_path");
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return ParsePipelineConfig(text.str(), edit_config_json);
  } catch (const ConfigError& error) {
    throw ConfigError(path + ": " + error.what());
  }
}

std::string ToJson(const PipelineConfig& config) {
  Json root;
  root["train_input_path"] = config.train_input_path;
  root["eval_input_path"] = config.eval_input_path;
  root["model_dir"] = config.model_dir;

  const TrainConfig& t = config.train_config;
  Json train;
  train["sparse_optimizer"] = OptimizerJson(t.sparse_optimizer);
  train["dense_optimizer"] = OptimizerJson(t.dense_optimizer);
  train["num_steps"] = t.num_steps;
  train["num_epochs"] = t.num_epochs;
  train["log_step_count_steps"] = t.log_step_count_steps;
  train["save_checkpoints_steps"] = t.save_checkpoints_steps;
  train["keep_checkpoint_max"] = t.keep_checkpoint_max;
  train["gradient_accumulation_steps"] = t.gradient_accumulation_steps;
  Json clip;
  clip["clipping_type"] = t.grad_clipping.clipping_type;
  clip["max_gradient"] = t.grad_clipping.max_gradient;
  if (std::isinf(t.grad_clipping.norm_type)) {
    clip["norm_type"] = "inf";
  } else {
    clip["norm_type"] = t.grad_clipping.norm_type;
  }
  clip["enable_global_grad_clip"] = t.grad_clipping.enable_global_grad_clip;
  train["grad_clipping"] = clip;
  train["mixed_precision"] = t.mixed_precision;
  if (t.grad_scaler) {
    train["grad_scaler"] = Json{{"init_scale", t.grad_scaler->init_scale},
                                {"growth_factor", t.grad_scaler->growth_factor},
                                {"backoff_factor", t.grad_scaler->backoff_factor},
                                {"growth_interval", t.grad_scaler->growth_interval}};
  }
  train["seed"] = t.seed;
  train["global_embedding_constraints"] = ConstraintsJson(t.global_sharding_types);
  root["train_config"] = train;

  root["eval_config"] = Json{{"num_steps", config.eval_config.num_steps},
                             {"log_step_count_steps", config.eval_config.log_step_count_steps}};

  const DataConfig& d = config.data_config;
  root["data_config"] =
      Json{{"batch_size", d.batch_size},        {"eval_batch_size", d.eval_batch_size},
           {"dataset_type", d.dataset_type},    {"label_fields", d.label_fields},
           {"num_workers", d.num_workers},      {"delimiter", d.delimiter},
           {"with_header", d.with_header},      {"input_fields", d.input_fields},
           {"drop_remainder", d.drop_remainder}};

  Json features = Json::array();
  for (const FeatureConfig& feature : config.feature_configs)
    features.push_back(FeatureJson(feature));
  root["feature_configs"] = features;

  const ModelConfig& m = config.model_config;
  Json model;
  Json groups = Json::array();
  for (const FeatureGroupConfig& group : m.feature_groups) {
    groups.push_back(Json{{"group_name", group.group_name},
                          {"feature_names", group.feature_names},
                          {"group_type", group.group_type}});
  }
  model["feature_groups"] = groups;
  if (m.model_type == "dlrm") {
    model["dlrm"] = Json{{"dense_mlp", MlpJson(m.dense_mlp)},
                         {"final", MlpJson(m.final_mlp)},
                         {"arch_with_sparse", m.arch_with_sparse}};
  } else if (m.model_type == "deep_fm") {
    model["deep_fm"] = Json{{"deep", MlpJson(m.deep_mlp)},
                            {"final", MlpJson(m.final_mlp)},
                            {"wide_embedding_dim", m.wide_embedding_dim}};
  } else if (m.model_type == "multi_tower") {
    Json towers = Json::array();
    for (const TowerConfig& tower : m.towers) {
      towers.push_back(Json{{"input", tower.input}, {"mlp", MlpJson(tower.mlp)}});
    }
    model["multi_tower"] = Json{{"towers", towers}, {"final", MlpJson(m.final_mlp)}};
  }
  Json metrics = Json::array();
  if (m.metric_auc) metrics.push_back(Json{{"auc", Json::object()}});
  if (!m.grouped_auc_key.empty()) {
    metrics.push_back(Json{{"grouped_auc", Json{{"grouping_key", m.grouped_auc_key}}}});
  }
  model["metrics"] = metrics;
  model["losses"] = Json::array({Json{{m.loss, Json::object()}}});
  root["model_config"] = model;
  return root.dump(2);
}

std::string ConfigReferenceMarkdown() {
  std::map<const MessageSpec*, std::vector<std::string>> paths;
  CollectPaths(config_schema::Root(), "", paths);
  std::ostringstream out;
  out << "# Pipeline config reference\n\n"
      << "Generated from the schema tzrec_train parses with (`tzrec_train config-reference`). "
      << "The file is JSON shaped like protobuf-JSON of TorchEasyRec's pipeline_config: a oneof "
      << "is an object with a single key (`\"sparse_optimizer\": {\"adagrad_optimizer\": "
      << "{\"lr\": 0.05}}`). Unknown keys are errors (with the closest valid key). Integers may be "
      << "written as decimal strings and booleans as \"true\"/\"false\", as protobuf-JSON allows. "
      << "`--edit_config_json` overrides keys by dotted path before validation: "
      << "`{\"train_config.num_steps\": 100, \"feature_configs[feature_name=cat_0].id_feature."
      << "embedding_dim\": 8, \"model_config.feature_groups[0].feature_names\": [\"a\"]}`.\n";
  for (const MessageSpec* message : config_schema::AllMessages()) {
    std::vector<std::string> where;
    for (const std::string& path : paths[message]) {
      where.push_back("`" + (path.empty() ? std::string("(top level)") : path) + "`");
    }
    out << "\n## " << message->name << "\n\n";
    out << (where.size() == 1 ? "Path: " : "Paths: ") << JoinList(where) << ". "
        << MarkdownCell(message->doc) << "\n\n";
    if (message->fields.empty()) {
      out << "An empty object: `{}`.\n";
      continue;
    }
    for (const config_schema::OneofSpec& oneof : message->oneofs) {
      out << "Oneof `" << oneof.name << "`" << (oneof.required ? " (exactly one required)" : "")
          << ": " << JoinList(SupportedMembers(*message, oneof.name)) << ".\n\n";
    }
    out << "| key | type | default | description |\n| --- | --- | --- | --- |\n";
    for (const FieldSpec& field : message->fields) {
      std::string type = config_schema::TypeName(field);
      if (field.message != nullptr) {
        type = (field.type == FieldType::kMessageList ? "list of " : "") + std::string("[") +
               field.message->name + "](#" + Anchor(field.message->name) + ")";
      }
      if (field.unsupported) type = "—";
      std::string def = field.required                  ? "required"
                        : field.default_value.is_null() ? "—"
                                                        : "`" + field.default_value.dump() + "`";
      std::string doc = field.doc;
      if (!field.choices.empty()) {
        std::vector<std::string> quoted;
        for (const std::string& choice : field.choices) quoted.push_back("`\"" + choice + "\"`");
        doc += ". One of: " + JoinList(quoted);
      }
      if (!field.oneof.empty() && !field.unsupported) doc += " (oneof `" + field.oneof + "`)";
      out << "| `" << field.key << "` | " << MarkdownCell(type) << " | " << MarkdownCell(def)
          << " | " << MarkdownCell(doc) << " |\n";
    }
  }
  return out.str();
}

}  // namespace tzrec
