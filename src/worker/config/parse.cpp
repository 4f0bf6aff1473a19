// Reading a pipeline config: protobuf text or JSON into tzrec::protos::EasyRecConfig, unknown
// names classified (a left-out TorchEasyRec field or a typo), TorchEasyRec's edit_config_json
// applied, then validation (include/tzrec/config/config.hpp).

#include <cerrno>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "internal.hpp"
#include "protobuf.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

namespace pb = google::protobuf;
using Json = nlohmann::ordered_json;

// One position protobuf's text parser reported (0-based line and column), described at origin.
struct TextDiagnostic {
  int line = 0;
  int column = 0;
  std::string message;

  std::string Describe(const std::string& origin) const {
    const std::string where =
        origin + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
    if (const pb::Descriptor* type = NoFieldType(); type != nullptr) {
      return config_internal::UnknownFieldMessage(*type, NoFieldName(), where);
    }
    return where + ": " + message + " (protobuf text format, TorchEasyRec's .config syntax)";
  }
  // The message type of a "has no field named" diagnostic, or null.
  const pb::Descriptor* NoFieldType() const {
    std::smatch match;
    if (!std::regex_search(message, match, NoField())) return nullptr;
    return pb::DescriptorPool::generated_pool()->FindMessageTypeByName(match[1].str());
  }
  std::string NoFieldName() const {
    std::smatch match;
    return std::regex_search(message, match, NoField()) ? match[2].str() : std::string();
  }
  static const std::regex& NoField() {
    static const std::regex kNoField(R"re(Message type "([^"]+)" has no field named "([^"]+)")re");
    return kNoField;
  }
};

// Keeps the first error, and every unknown field the parser skips as a warning when it is told
// to allow them.
class Diagnostics : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!first_error_) first_error_ = TextDiagnostic{line, column, message};
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    warnings_.push_back(TextDiagnostic{line, column, message});
  }
  const std::optional<TextDiagnostic>& FirstError() const { return first_error_; }
  const std::vector<TextDiagnostic>& Warnings() const { return warnings_; }

 private:
  std::optional<TextDiagnostic> first_error_;
  std::vector<TextDiagnostic> warnings_;
};

// The model decides what every other section means, so an unsupported ModelConfig field (the model
// itself, e.g. `dssm`, whose negative_sampler comes first in TorchEasyRec's own config, or a
// model-wide option such as `kernel`) is named before any other unsupported field.
bool IsModelChoice(const pb::Descriptor* type) {
  return type != nullptr && type->full_name() == protos::ModelConfig::descriptor()->full_name();
}

// After a failed parse: parse again skipping unknown fields, and name an unknown model if there
// is one; otherwise the first error.
std::string DescribeFailure(const std::string& text, const std::string& origin,
                            const Diagnostics& strict) {
  PipelineConfig lenient_config;
  Diagnostics lenient;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&lenient);
  parser.AllowPartialMessage(true);
  parser.AllowUnknownField(true);
  parser.ParseFromString(text, &lenient_config);
  for (const TextDiagnostic& warning : lenient.Warnings()) {
    if (IsModelChoice(warning.NoFieldType())) return warning.Describe(origin);
  }
  return strict.FirstError() ? strict.FirstError()->Describe(origin)
                             : origin + ": not a valid protobuf text config";
}

PipelineConfig ParseText(const std::string& text, const std::string& origin) {
  PipelineConfig config;
  Diagnostics errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowPartialMessage(true);  // required fields are checked by the validation
  if (!parser.ParseFromString(text, &config)) {
    throw ConfigError(DescribeFailure(text, origin, errors));
  }
  return config;
}

// Unknown keys of a JSON config, with their paths, before protobuf's JSON parser (which names
// neither the path nor TorchEasyRec's left-out fields).
struct JsonUnknown {
  const pb::Descriptor* type;
  std::string key;
  std::string where;
};

void FindJsonUnknowns(const Json& node, const pb::Descriptor& type, const std::string& path,
                      const std::string& origin, std::vector<JsonUnknown>* found) {
  if (!node.is_object()) return;  // protobuf's parser reports the type error
  for (const auto& item : node.items()) {
    const pb::FieldDescriptor* field = type.FindFieldByName(item.key());
    for (int i = 0; field == nullptr && i < type.field_count(); ++i) {
      if (type.field(i)->json_name() == item.key()) field = type.field(i);
    }
    const std::string here = config_internal::JoinPath(path, item.key());
    if (field == nullptr) {
      found->push_back(JsonUnknown{&type, item.key(), origin + ": " + here});
      continue;
    }
    if (field->type() != pb::FieldDescriptor::TYPE_MESSAGE) continue;
    if (field->is_repeated() && item.value().is_array()) {
      for (std::size_t i = 0; i < item.value().size(); ++i) {
        FindJsonUnknowns(item.value()[i], *field->message_type(),
                         here + "[" + std::to_string(i) + "]", origin, found);
      }
    } else {
      FindJsonUnknowns(item.value(), *field->message_type(), here, origin, found);
    }
  }
}

// The first unknown key, or an unknown model ahead of everything else (as for text configs).
void CheckJsonKeys(const Json& root, const pb::Descriptor& type, const std::string& origin) {
  std::vector<JsonUnknown> found;
  FindJsonUnknowns(root, type, "", origin, &found);
  if (found.empty()) return;
  const JsonUnknown* chosen = &found.front();
  for (const JsonUnknown& unknown : found) {
    if (IsModelChoice(unknown.type)) {
      chosen = &unknown;
      break;
    }
  }
  throw ConfigError(
      config_internal::UnknownFieldMessage(*chosen->type, chosen->key, chosen->where));
}

bool LooksLikeJson(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

}  // namespace

void config_internal::ParseJsonInto(const std::string& text, const std::string& origin,
                                    pb::Message* message) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& error) {
    throw ConfigError(origin + ": not valid JSON (" + error.what() +
                      "); a .config file is protobuf text, a .json file protobuf JSON");
  }
  CheckJsonKeys(root, *message->GetDescriptor(), origin);
  static const std::unique_ptr<pb::util::TypeResolver> kResolver(
      pb::util::NewTypeResolverForDescriptorPool("type.googleapis.com",
                                                 pb::DescriptorPool::generated_pool()));
  std::string binary;
  const auto status = pb::util::JsonToBinaryString(
      kResolver.get(), "type.googleapis.com/" + message->GetDescriptor()->full_name(), text,
      &binary);
  if (!status.ok()) {
    throw ConfigError(origin + ": " + std::string(status.message()) + " (protobuf JSON)");
  }
  message->Clear();
  if (!message->ParsePartialFromString(binary)) {
    throw ConfigError(origin + ": protobuf could not read the JSON; check the value types");
  }
}

std::string config_internal::JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

LoadedConfig ParsePipelineConfig(const std::string& text, const std::string& edit_config_json,
                                 const std::string& origin) {
  LoadedConfig loaded;
  if (LooksLikeJson(text)) {
    config_internal::ParseJsonInto(text, origin, &loaded.config);
  } else {
    loaded.config = ParseText(text, origin);
  }
  if (edit_config_json.find_first_not_of(" \t\r\n") != std::string::npos) {
    config_internal::ApplyEdits(&loaded.config, edit_config_json);
  }
  std::vector<std::string> sequence_warnings;
  try {
    config_internal::ExpandGroupedSequences(&loaded.config, &sequence_warnings);
    config_internal::LoadVocabFiles(&loaded.config);
    loaded.warnings = ValidatePipelineConfig(loaded.config);
  } catch (const ConfigError& error) {
    throw ConfigError(origin + ": " + error.what());
  }
  loaded.warnings.insert(loaded.warnings.begin(), sequence_warnings.begin(),
                         sequence_warnings.end());
  return loaded;
}

LoadedConfig LoadPipelineConfig(const std::string& path, const std::string& edit_config_json) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("pipeline config '" + path + "': cannot open it (" +
                      std::make_error_code(static_cast<std::errc>(errno)).message() +
                      "); check --pipeline_config_path");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParsePipelineConfig(text.str(), edit_config_json, path);
}

std::vector<std::string> ValidatePipelineConfig(const PipelineConfig& config) {
  std::vector<std::string> warnings;
  config_internal::CollectWarnings(config, "", &warnings);
  config_internal::Validate(config);
  if (!RunsFeatureGeneration(config)) {
    for (int i = 0; i < config.feature_configs_size(); ++i) {
      const std::string path = "feature_configs[" + std::to_string(i) + "]";
      if (config.feature_configs(i).id_feature().has_value_dim()) {
        warnings.push_back(path +
                           ".id_feature.value_dim: not applied with fg_mode FG_NONE (the input "
                           "is already feature-generated), as in TorchEasyRec");
      }
      const auto& seq_id = config.feature_configs(i).sequence_id_feature();
      const auto& seq_raw = config.feature_configs(i).sequence_raw_feature();
      if (seq_id.has_default_value() || seq_id.has_separator() || seq_raw.has_default_value()) {
        warnings.push_back(path +
                           ": the sequence's default_value / separator are not applied with "
                           "fg_mode FG_NONE (fg_encoded_default_value fills empty cells), as in "
                           "TorchEasyRec");
      }
      if (config.feature_configs(i).raw_feature().normalizer().empty()) continue;
      warnings.push_back(path +
                         ".raw_feature.normalizer: not applied with fg_mode FG_NONE (the input "
                         "is already feature-generated), as in TorchEasyRec");
    }
  }
  return warnings;
}

void ResolveInputs(PipelineConfig* config, std::vector<std::string>* warnings) {
  const std::pair<const std::string*, const char*> inputs[] = {
      {&config->train_input_path(), "train_input_path"},
      {&config->eval_input_path(), "eval_input_path"}};
  for (const auto& [path, field] : inputs) {
    if (path->rfind("odps://", 0) == 0) {
      throw ConfigError(std::string(field) + " '" + *path +
                        "' is a MaxCompute (ODPS) table, which tzrec_train cannot read; export the "
                        "table to Parquet and pass --" +
                        field);
    }
  }
  const protos::DatasetType type = config->data_config().dataset_type();
  if (type == protos::OdpsDataset || type == protos::OdpsDatasetV1) {
    config->mutable_data_config()->set_dataset_type(protos::ParquetDataset);
    warnings->push_back("data_config.dataset_type: " + protos::DatasetType_Name(type) +
                        " with local input paths; reading them as ParquetDataset (the table "
                        "exported to Parquet has the same columns)");
  }
}

std::string ToText(const PipelineConfig& config) {
  std::string text;
  pb::TextFormat::Printer printer;
  printer.PrintToString(config, &text);
  return text;
}

}  // namespace tzrec
