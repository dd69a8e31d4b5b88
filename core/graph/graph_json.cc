#include "core/graph/graph_json.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/graph/json_fast_path.h"
#include "google/protobuf/util/json_util.h"

namespace aotcache {

absl::Status ParseJson(absl::string_view json,
                       google::protobuf::Message* message) {
  if (ReadJsonFast(json, message)) return absl::OkStatus();
  message->Clear();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message,
      options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(message->GetDescriptor()->name(),
                     " JSON: ", std::string(status.message())));
  }
  return absl::OkStatus();
}

std::string ToJson(const google::protobuf::Message& message,
                   bool print_defaults) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = print_defaults;
  std::string out;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string ToCompactJson(const google::protobuf::Message& message,
                          bool print_defaults) {
  std::optional<std::string> fast = WriteJsonFast(message, print_defaults);
  if (fast.has_value()) return *std::move(fast);
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = print_defaults;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace aotcache
