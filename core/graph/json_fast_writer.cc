// WriteJsonFast (json_fast_path.h): a message through reflection, as compact
// JSON.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/graph/json_fast_path.h"
#include "google/protobuf/descriptor.h"

namespace aotcache {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void WriteString(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char kHex[] = "0123456789abcdef";
          out->append("\\u00");
          out->push_back(kHex[(c >> 4) & 0xf]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

template <typename T>
void WriteFloating(T v, std::string* out) {
  if (std::isnan(v)) {
    out->append("\"NaN\"");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buffer[64];
    // The shortest spelling that reads back to v; "-0" would read as +0.
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
    out->append(buffer, end);
    if (v == 0 && std::signbit(v)) out->append(".0");
  }
}

bool WriteMessage(const Message& m, bool print_defaults, std::string* out);

bool WriteValue(const Message& m, const FieldDescriptor* fd, int index,
                bool print_defaults, std::string* out) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (fd->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(
          out, rep ? r->GetRepeatedInt32(m, fd, index) : r->GetInt32(m, fd));
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(
          out, rep ? r->GetRepeatedUInt32(m, fd, index) : r->GetUInt32(m, fd));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(
          out, "\"",
          rep ? r->GetRepeatedInt64(m, fd, index) : r->GetInt64(m, fd), "\"");
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(
          out, "\"",
          rep ? r->GetRepeatedUInt64(m, fd, index) : r->GetUInt64(m, fd), "\"");
      return true;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      WriteFloating(
          rep ? r->GetRepeatedDouble(m, fd, index) : r->GetDouble(m, fd), out);
      return true;
    case FieldDescriptor::CPPTYPE_FLOAT:
      WriteFloating(
          rep ? r->GetRepeatedFloat(m, fd, index) : r->GetFloat(m, fd), out);
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((rep ? r->GetRepeatedBool(m, fd, index) : r->GetBool(m, fd))
                      ? "true"
                      : "false");
      return true;
    case FieldDescriptor::CPPTYPE_ENUM: {
      int number =
          rep ? r->GetRepeatedEnumValue(m, fd, index) : r->GetEnumValue(m, fd);
      const google::protobuf::EnumValueDescriptor* v =
          fd->enum_type()->FindValueByNumber(number);
      if (v != nullptr) {
        WriteString(v->name(), out);
      } else {
        absl::StrAppend(out, number);
      }
      return true;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& s =
          rep ? r->GetRepeatedStringReference(m, fd, index, &scratch)
              : r->GetStringReference(m, fd, &scratch);
      if (fd->type() == FieldDescriptor::TYPE_BYTES) {
        WriteString(absl::Base64Escape(s), out);
      } else {
        WriteString(s, out);
      }
      return true;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return WriteMessage(
          rep ? r->GetRepeatedMessage(m, fd, index) : r->GetMessage(m, fd),
          print_defaults, out);
  }
  return false;
}

// A map's entries as an object, in key order (reflection's order is the
// map's, which varies).
bool WriteMap(const Message& m, const FieldDescriptor* fd, bool print_defaults,
              std::string* out) {
  const Reflection* r = m.GetReflection();
  const Descriptor* entry = fd->message_type();
  if (entry->map_key()->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
    return false;
  }
  int n = r->FieldSize(m, fd);
  std::vector<std::pair<std::string, const Message*>> entries;
  entries.reserve(n);
  for (int i = 0; i < n; ++i) {
    const Message& e = r->GetRepeatedMessage(m, fd, i);
    entries.emplace_back(e.GetReflection()->GetString(e, entry->map_key()), &e);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->push_back('{');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out->push_back(',');
    WriteString(entries[i].first, out);
    out->push_back(':');
    if (!WriteValue(*entries[i].second, entry->map_value(), -1, print_defaults,
                    out)) {
      return false;
    }
  }
  out->push_back('}');
  return true;
}

bool WriteMessage(const Message& m, bool print_defaults, std::string* out) {
  const Descriptor* d = m.GetDescriptor();
  if (IsWellKnownType(d)) return false;
  const Reflection* r = m.GetReflection();
  out->push_back('{');
  bool first = true;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* fd = d->field(i);
    if (fd->is_repeated()) {
      if (r->FieldSize(m, fd) == 0 && !print_defaults) continue;
    } else if (!r->HasField(m, fd) && (!print_defaults || fd->has_presence())) {
      // Unset messages, oneof members and optional fields stay out.
      continue;
    }
    if (!first) out->push_back(',');
    first = false;
    WriteString(fd->name(), out);
    out->push_back(':');
    if (fd->is_map()) {
      if (!WriteMap(m, fd, print_defaults, out)) return false;
    } else if (fd->is_repeated()) {
      out->push_back('[');
      for (int k = 0, n = r->FieldSize(m, fd); k < n; ++k) {
        if (k > 0) out->push_back(',');
        if (!WriteValue(m, fd, k, print_defaults, out)) return false;
      }
      out->push_back(']');
    } else if (!WriteValue(m, fd, -1, print_defaults, out)) {
      return false;
    }
  }
  out->push_back('}');
  return true;
}

}  // namespace

std::optional<std::string> WriteJsonFast(const Message& message,
                                         bool print_defaults) {
  std::string out;
  if (!WriteMessage(message, print_defaults, &out)) return std::nullopt;
  return out;
}

}  // namespace aotcache
