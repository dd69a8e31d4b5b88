#include "core/graph/graph_json.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace aotcache {

absl::Status ParseJson(absl::string_view json,
                       google::protobuf::Message* message) {
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

}  // namespace aotcache
