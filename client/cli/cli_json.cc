#include "client/cli/cli_json.h"

#include "absl/strings/escaping.h"
#include "core/graph/graph_json.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace aotcache {
namespace {

constexpr size_t kKeyBytes = 32;

void HexKeys(google::protobuf::Value* value) {
  if (value->has_list_value()) {
    for (google::protobuf::Value& item :
         *value->mutable_list_value()->mutable_values()) {
      HexKeys(&item);
    }
    return;
  }
  if (!value->has_struct_value()) return;
  for (auto& [name, field] : *value->mutable_struct_value()->mutable_fields()) {
    std::string bytes;
    if (name == "key" && field.has_string_value() &&
        absl::Base64Unescape(field.string_value(), &bytes) &&
        bytes.size() == kKeyBytes) {
      field.set_string_value(absl::BytesToHexString(bytes));
    } else {
      HexKeys(&field);
    }
  }
}

}  // namespace

std::string CliJson(const google::protobuf::Message& message) {
  const std::string json = ToJson(message, /*print_defaults=*/true);
  google::protobuf::Value value;
  if (!google::protobuf::util::JsonStringToMessage(json, &value).ok()) {
    return json;  // Cannot happen: the printer's own output.
  }
  HexKeys(&value);
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(value, &out, options);
  return out;
}

}  // namespace aotcache
