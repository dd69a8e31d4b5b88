#include "core/graph/json_fast_path.h"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace aotcache {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Deeper than any of our messages nest, and below protobuf's limit (100), so
// that the reader never takes what protobuf's parser refuses.
constexpr size_t kMaxDepth = 64;

bool IsWellKnownType(const Descriptor* d) {
  return d->file()->package() == "google.protobuf";
}

// Standard base64 with its padding: what protobuf's printer and Python's
// b64encode write. Other spellings protobuf also takes go to protobuf.
bool StrictBase64(absl::string_view text, std::string* out) {
  if (text.size() % 4 != 0) return false;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return false;
      ++padding;
    } else if (padding > 0 ||
               !(absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                 c == '+' || c == '/')) {
      return false;
    }
  }
  return absl::Base64Unescape(text, out);
}

// The field a key names: by its name, or by its JSON (lowerCamelCase) name,
// as protobuf's parser takes both. Our messages have a few fields each: a
// scan beats a lookup that builds a std::string.
const FieldDescriptor* FieldNamed(const Descriptor* d, absl::string_view key) {
  for (int i = 0; i < d->field_count(); ++i) {
    if (d->field(i)->name() == key) return d->field(i);
  }
  for (int i = 0; i < d->field_count(); ++i) {
    if (d->field(i)->json_name() == key) return d->field(i);
  }
  return nullptr;
}

// One object being read: a message's fields, or a map's entries.
struct Frame {
  explicit Frame(Message* m, const FieldDescriptor* map = nullptr)
      : message(m), field(map), is_map(map != nullptr) {}

  Message* message;
  // The field whose value comes next; in a map frame, the map field.
  const FieldDescriptor* field;
  bool in_array = false;
  bool is_map;
  // Fields seen, a bit per index: a duplicate key gives up.
  uint64_t seen = 0;
  // In a map frame: the entry whose value comes next, and the keys seen.
  Message* entry = nullptr;
  absl::flat_hash_set<std::string> keys;
};

// A SAX handler writing into the message through reflection. Every handler
// returns false to give up (rapidjson then stops).
class Reader : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Reader> {
 public:
  explicit Reader(Message* root) : root_(root) {}

  bool StartObject() {
    if (frames_.empty()) {
      if (started_) return false;
      started_ = true;
      return Push(root_);
    }
    if (frames_.size() >= kMaxDepth) return false;
    Frame& f = frames_.back();
    const FieldDescriptor* field = Pending(f);
    if (field == nullptr) return false;
    if (field->is_map() && !f.in_array && !f.is_map) {
      const Descriptor* entry = field->message_type();
      if (entry->map_key()->type() != FieldDescriptor::TYPE_STRING) {
        return false;
      }
      Message* owner = f.message;  // f dies if frames_ grows
      frames_.emplace_back(owner, field);
      return true;
    }
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE ||
        IsWellKnownType(field->message_type()) ||
        field->is_repeated() != f.in_array) {
      return false;
    }
    Message* owner = Target(f);
    const Reflection* r = owner->GetReflection();
    Message* child = f.in_array ? r->AddMessage(owner, field)
                                : r->MutableMessage(owner, field);
    return Push(child);
  }

  bool Key(const char* text, rapidjson::SizeType length, bool) {
    Frame& f = frames_.back();
    absl::string_view name(text, length);
    if (f.is_map) {
      if (!f.keys.emplace(name).second) return false;
      const Reflection* r = f.message->GetReflection();
      f.entry = r->AddMessage(f.message, f.field);
      const Descriptor* d = f.entry->GetDescriptor();
      f.entry->GetReflection()->SetString(f.entry, d->map_key(),
                                          std::string(name));
      return true;
    }
    const FieldDescriptor* field = FieldNamed(f.message->GetDescriptor(), name);
    if (field == nullptr || field->index() >= 64) return false;
    const uint64_t bit = uint64_t{1} << field->index();
    if (f.seen & bit) return false;
    f.seen |= bit;
    const google::protobuf::OneofDescriptor* oneof =
        field->real_containing_oneof();
    if (oneof != nullptr &&
        f.message->GetReflection()->HasOneof(*f.message, oneof)) {
      return false;
    }
    f.field = field;
    return true;
  }

  bool EndObject(rapidjson::SizeType) {
    frames_.pop_back();
    if (!frames_.empty()) ValueDone(frames_.back());
    return true;
  }

  bool StartArray() {
    if (frames_.empty()) return false;
    Frame& f = frames_.back();
    if (f.is_map || f.field == nullptr || f.in_array ||
        !f.field->is_repeated() || f.field->is_map()) {
      return false;
    }
    f.in_array = true;
    return true;
  }

  bool EndArray(rapidjson::SizeType) {
    Frame& f = frames_.back();
    f.in_array = false;
    f.field = nullptr;
    return true;
  }

  bool Null() { return false; }

  bool Bool(bool b) {
    return Scalar(FieldDescriptor::CPPTYPE_BOOL,
                  [&](Message* m, const FieldDescriptor* fd, bool add) {
                    const Reflection* r = m->GetReflection();
                    add ? r->AddBool(m, fd, b) : r->SetBool(m, fd, b);
                    return true;
                  });
  }

  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    absl::string_view number(text, length);
    const FieldDescriptor* field =
        frames_.empty() ? nullptr : Pending(frames_.back());
    if (field == nullptr) return false;
    return Scalar(field->cpp_type(),
                  [&](Message* m, const FieldDescriptor* fd, bool add) {
                    return SetNumber(m, fd, add, number);
                  });
  }

  bool String(const char* text, rapidjson::SizeType length, bool) {
    absl::string_view s(text, length);
    const FieldDescriptor* field =
        frames_.empty() ? nullptr : Pending(frames_.back());
    if (field == nullptr) return false;
    return Scalar(field->cpp_type(),
                  [&](Message* m, const FieldDescriptor* fd, bool add) {
                    return SetFromString(m, fd, add, s);
                  });
  }

  bool done() const { return started_ && frames_.empty(); }

 private:
  bool Push(Message* message) {
    frames_.emplace_back(message);
    return true;
  }

  // The field the next value is for, if any.
  static const FieldDescriptor* Pending(const Frame& f) {
    if (f.is_map) {
      return f.entry == nullptr ? nullptr
                                : f.entry->GetDescriptor()->map_value();
    }
    return f.field;
  }

  // The message the next value goes into.
  static Message* Target(const Frame& f) {
    return f.is_map ? f.entry : f.message;
  }

  // After a value outside an array, no field is pending.
  static void ValueDone(Frame& f) {
    if (f.is_map) {
      f.entry = nullptr;
    } else if (!f.in_array) {
      f.field = nullptr;
    }
  }

  // Sets (or, in an array, adds) a scalar of the pending field through
  // `set`, if the field's type is `type` or `set` checks it.
  template <typename Set>
  bool Scalar(FieldDescriptor::CppType type, Set set) {
    if (frames_.empty()) return false;
    Frame& f = frames_.back();
    const FieldDescriptor* field = Pending(f);
    if (field == nullptr || field->cpp_type() != type ||
        field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
        field->is_repeated() != f.in_array) {
      return false;
    }
    if (!set(Target(f), field, f.in_array)) return false;
    ValueDone(f);
    return true;
  }

  // Digits, after a '-' for signed types, without leading zeros (absl
  // would also take spaces and a '+').
  template <typename T>
  static bool Integer(absl::string_view text, T* out) {
    absl::string_view digits = text;
    if (std::is_signed<T>::value && !digits.empty() && digits[0] == '-') {
      digits.remove_prefix(1);
    }
    if (digits.empty() || (digits[0] == '0' && digits.size() > 1)) {
      return false;
    }
    for (char c : digits) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    return absl::SimpleAtoi(text, out);
  }

  // A JSON number (its grammar checked by rapidjson) that a double holds
  // without overflow or underflow to zero.
  // protobuf reads "-0" (an integer) as +0.
  static bool Floating(absl::string_view text, double* out) {
    if (text == "-0") {
      *out = 0;
      return true;
    }
    if (!absl::SimpleAtod(text, out) || !std::isfinite(*out)) return false;
    if (*out == 0) {
      absl::string_view mantissa = text.substr(0, text.find_first_of("eE"));
      if (mantissa.find_first_of("123456789") != absl::string_view::npos) {
        return false;
      }
    }
    return true;
  }

  static bool SetNumber(Message* m, const FieldDescriptor* fd, bool add,
                        absl::string_view text) {
    const Reflection* r = m->GetReflection();
    switch (fd->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v;
        if (!Integer(text, &v)) return false;
        add ? r->AddInt32(m, fd, v) : r->SetInt32(m, fd, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v;
        if (!Integer(text, &v)) return false;
        add ? r->AddInt64(m, fd, v) : r->SetInt64(m, fd, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t v;
        if (!Integer(text, &v)) return false;
        add ? r->AddUInt32(m, fd, v) : r->SetUInt32(m, fd, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v;
        if (!Integer(text, &v)) return false;
        add ? r->AddUInt64(m, fd, v) : r->SetUInt64(m, fd, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double v;
        if (!Floating(text, &v)) return false;
        add ? r->AddDouble(m, fd, v) : r->SetDouble(m, fd, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v;
        if (!Floating(text, &v) ||
            std::fabs(v) > std::numeric_limits<float>::max()) {
          return false;
        }
        float f = static_cast<float>(v);
        add ? r->AddFloat(m, fd, f) : r->SetFloat(m, fd, f);
        return true;
      }
      default:
        return false;
    }
  }

  static bool SetFromString(Message* m, const FieldDescriptor* fd, bool add,
                            absl::string_view s) {
    const Reflection* r = m->GetReflection();
    switch (fd->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string value;
        if (fd->type() == FieldDescriptor::TYPE_BYTES) {
          if (!StrictBase64(s, &value)) return false;
        } else {
          value.assign(s.data(), s.size());
        }
        add ? r->AddString(m, fd, std::move(value))
            : r->SetString(m, fd, std::move(value));
        return true;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const google::protobuf::EnumValueDescriptor* v =
            fd->enum_type()->FindValueByName(std::string(s));
        if (v == nullptr) return false;
        add ? r->AddEnum(m, fd, v) : r->SetEnum(m, fd, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
        return SetNumber(m, fd, add, s);  // int64s are quoted
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v;
        if (s == "NaN") {
          v = std::numeric_limits<double>::quiet_NaN();
        } else if (s == "Infinity") {
          v = std::numeric_limits<double>::infinity();
        } else if (s == "-Infinity") {
          v = -std::numeric_limits<double>::infinity();
        } else {
          return false;
        }
        if (fd->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
          add ? r->AddDouble(m, fd, v) : r->SetDouble(m, fd, v);
        } else {
          float f = static_cast<float>(v);
          add ? r->AddFloat(m, fd, f) : r->SetFloat(m, fd, f);
        }
        return true;
      }
      default:
        return false;
    }
  }

  Message* root_;
  bool started_ = false;
  std::vector<Frame> frames_;
};

// -- writing ---------------------------------------------------------------

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

bool ReadJsonFast(absl::string_view json, Message* message) {
  message->Clear();
  if (IsWellKnownType(message->GetDescriptor())) return false;
  // rapidjson's streams end at a NUL: "{}\0junk" would read as "{}".
  if (json.find('\0') != absl::string_view::npos) return false;
  Reader handler(message);
  rapidjson::Reader reader;
  rapidjson::MemoryStream stream(json.data(), json.size());
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag;
  return !reader.Parse<kFlags>(stream, handler).IsError() && handler.done();
}

std::optional<std::string> WriteJsonFast(const Message& message,
                                         bool print_defaults) {
  std::string out;
  if (!WriteMessage(message, print_defaults, &out)) return std::nullopt;
  return out;
}

}  // namespace aotcache
