// TorchEasyRec's edit_config_json on the config message: the message is turned into protobuf
// JSON, the dotted paths are applied with the descriptors as the schema, and the result is read
// back (so an edit that names an unknown field gets the same message as the file would).

#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "internal.hpp"
#include "protobuf.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec::config_internal {
namespace {

namespace pb = google::protobuf;
using Json = nlohmann::ordered_json;

struct PathSegment {
  std::string key;
  std::vector<std::string> selectors;  // "[...]" contents, in order
};

std::string Short(const Json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

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

struct Edit {
  const std::vector<PathSegment>& segments;
  const Json& value;
  const std::string& prefix;
};

void ApplyAt(Json& node, const pb::Descriptor& type, const Edit& edit, std::size_t index,
             const std::string& walked);

std::vector<std::size_t> Select(const Json& list, const std::string& text,
                                const std::string& walked, const std::string& prefix) {
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
    return {position};
  }
  const std::string key = text.substr(0, eq);
  const std::string wanted = text.substr(eq + 1);
  std::vector<std::size_t> matches;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (SelectorMatches(list[i], key, wanted)) matches.push_back(i);
  }
  if (matches.empty()) {
    throw ConfigError(prefix + walked + "[" + text + "] does not exist: no element of " + walked +
                      " has " + key + " = " + wanted);
  }
  return matches;
}

// Applies the selectors of segments[index] from `selector` on to `list`, then the rest.
void ApplySelectors(Json& list, const pb::FieldDescriptor& field, const Edit& edit,
                    std::size_t index, std::size_t selector, const std::string& walked) {
  const PathSegment& segment = edit.segments[index];
  const bool last_segment = index + 1 == edit.segments.size();
  if (!list.is_array()) {
    throw ConfigError(edit.prefix + walked + " is not set or not a list (got " + Short(list) + ")");
  }
  const bool last_selector = selector + 1 == segment.selectors.size();
  for (std::size_t position : Select(list, segment.selectors[selector], walked, edit.prefix)) {
    Json& element = list[position];
    const std::string element_path = walked + "[" + std::to_string(position) + "]";
    if (!last_selector) {
      ApplySelectors(element, field, edit, index, selector + 1, element_path);
    } else if (last_segment) {
      element = edit.value;
    } else if (field.type() == pb::FieldDescriptor::TYPE_MESSAGE) {
      ApplyAt(element, *field.message_type(), edit, index + 1, element_path);
    } else {
      throw ConfigError(edit.prefix + element_path + " is a " + field.type_name() +
                        ", not a message; it has no field '" + edit.segments[index + 1].key + "'");
    }
  }
}

void ApplyAt(Json& node, const pb::Descriptor& type, const Edit& edit, std::size_t index,
             const std::string& walked) {
  const PathSegment& segment = edit.segments[index];
  const pb::FieldDescriptor* field = type.FindFieldByName(segment.key);
  const std::string here = JoinPath(walked, segment.key);
  if (field == nullptr) {
    throw ConfigError(UnknownFieldMessage(type, segment.key, "edit_config_json " + here));
  }
  if (!segment.selectors.empty()) {
    if (!field->is_repeated()) {
      throw ConfigError(edit.prefix + here + " is not a list; remove the [" +
                        segment.selectors.front() + "] selector");
    }
    ApplySelectors(node[segment.key], *field, edit, index, 0, here);
    return;
  }
  if (index + 1 == edit.segments.size()) {
    node[segment.key] = edit.value;
    return;
  }
  if (field->type() != pb::FieldDescriptor::TYPE_MESSAGE || field->is_repeated()) {
    throw ConfigError(edit.prefix + here +
                      (field->is_repeated()
                           ? " is a list; select an element with [index] or [key=value] before '."
                           : " is not a message; it has no field '") +
                      edit.segments[index + 1].key + "'");
  }
  if (!node.contains(segment.key)) node[segment.key] = Json::object();
  ApplyAt(node[segment.key], *field->message_type(), edit, index + 1, here);
}

}  // namespace

void ApplyEdits(pb::Message* config, const std::string& edit_config_json) {
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
  // Through the binary form: MessageToJsonString refuses messages with unset required fields,
  // which TorchEasyRec configs have (e.g. no expression with fg_mode FG_NONE).
  pb::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  std::string text;
  static const std::unique_ptr<pb::util::TypeResolver> kResolver(
      pb::util::NewTypeResolverForDescriptorPool("type.googleapis.com",
                                                 pb::DescriptorPool::generated_pool()));
  if (!pb::util::BinaryToJsonString(kResolver.get(),
                                    "type.googleapis.com/" + config->GetDescriptor()->full_name(),
                                    config->SerializePartialAsString(), &text, print)
           .ok()) {
    throw InternalError("edit_config_json: the config could not be written as JSON");
  }
  Json root = Json::parse(text);
  for (const auto& item : edits.items()) {
    const std::string prefix = "edit_config_json '" + item.key() + "': ";
    const std::vector<PathSegment> segments = SplitPath(item.key(), prefix);
    ApplyAt(root, *config->GetDescriptor(), Edit{segments, item.value(), prefix}, 0, "");
  }
  // Read again as JSON: an edit naming an unknown field gets the same message as the file.
  ParseJsonInto(root.dump(), "edit_config_json", config);
}

}  // namespace tzrec::config_internal
