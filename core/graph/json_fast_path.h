// A fast path for the proto3 JSON mapping, over message reflection: graphs
// arrive from Python as JSON on every first call of a signature, and
// protobuf's own converter spends milliseconds on each.
//
// The reader takes a strict subset of what protobuf's parser takes: the
// JSON it writes, and fx_export's. Anything else (a lowerCamelCase name, a
// null, an enum by number, a quoted double, a duplicate key, deep nesting, a
// well-known type) makes it give up, and the caller asks protobuf's parser,
// whose answer (the message or the error) stands. What it accepts, it reads
// to the message protobuf's parser reads.
// The writer writes the mapping protobuf's printer writes, without
// whitespace; for programs that parse it (numbers may be spelled otherwise).
// The reader is json_fast_reader.cc, the writer json_fast_writer.cc.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_JSON_FAST_PATH_H_
#define AOTCACHE_CORE_GRAPH_JSON_FAST_PATH_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace aotcache {

// Messages of package google.protobuf (Struct, Any, ...), whose JSON forms
// are their own: both directions leave them to protobuf.
inline bool IsWellKnownType(const google::protobuf::Descriptor* d) {
  return d->file()->package() == "google.protobuf";
}

// Reads `json` into `message` (cleared first). False: it gave up, and
// `message` holds anything.
bool ReadJsonFast(absl::string_view json, google::protobuf::Message* message);

// The JSON of `message`, snake_case names, fields in declaration order; with
// `print_defaults`, also singular fields at their default and empty repeated
// fields and maps (not unset messages, oneof members or optional fields).
// nullopt for a message holding a well-known type (google.protobuf.*).
std::optional<std::string> WriteJsonFast(
    const google::protobuf::Message& message, bool print_defaults);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_JSON_FAST_PATH_H_
