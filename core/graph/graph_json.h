// The JSON form of graphs and reports: the proto3 JSON mapping, so a Python
// exporter writes plain files the CLI reads.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_GRAPH_JSON_H_
#define AOTCACHE_CORE_GRAPH_GRAPH_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace aotcache {

// Parses `json` into `message`. Returns InvalidArgument with the parser's
// complaint (unknown fields are errors: a typo must not be ignored). The
// JSON our printers and exporter write takes a fast path (json_fast_path.h).
absl::Status ParseJson(absl::string_view json,
                       google::protobuf::Message* message);

// Pretty-printed, fields in declaration order, snake_case names; with
// `print_defaults`, fields at their default (zeros, false) too.
std::string ToJson(const google::protobuf::Message& message,
                   bool print_defaults = false);

// ToJson's mapping without whitespace, written fast: for programs that parse
// it (the Python runtime), not for people.
std::string ToCompactJson(const google::protobuf::Message& message,
                          bool print_defaults = false);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_GRAPH_JSON_H_
