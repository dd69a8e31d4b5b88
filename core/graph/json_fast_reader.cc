// ReadJsonFast (json_fast_path.h): rapidjson's SAX events, written into the
// message through reflection.
#include <rapidjson/reader.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/graph/json_fast_path.h"
#include "core/graph/json_fast_scalars.h"
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
    return Scalar([&](Message* m, const FieldDescriptor* fd, bool add) {
      return SetScalarFromBool(m, fd, add, b);
    });
  }

  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    return Scalar([&](Message* m, const FieldDescriptor* fd, bool add) {
      return SetScalarFromNumber(m, fd, add, absl::string_view(text, length));
    });
  }

  bool String(const char* text, rapidjson::SizeType length, bool) {
    return Scalar([&](Message* m, const FieldDescriptor* fd, bool add) {
      return SetScalarFromString(m, fd, add, absl::string_view(text, length));
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

  // Sets (or, in an array, adds) the pending field, a scalar, through
  // `set`, which checks the field's type.
  template <typename Set>
  bool Scalar(Set set) {
    if (frames_.empty()) return false;
    Frame& f = frames_.back();
    const FieldDescriptor* field = Pending(f);
    if (field == nullptr ||
        field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
        field->is_repeated() != f.in_array ||
        !set(Target(f), field, f.in_array)) {
      return false;
    }
    ValueDone(f);
    return true;
  }

  Message* root_;
  bool started_ = false;
  std::vector<Frame> frames_;
};

}  // namespace

bool ReadJsonFast(absl::string_view json, Message* message) {
  message->Clear();
  if (IsWellKnownType(message->GetDescriptor())) return false;
  // rapidjson's streams end at a NUL: "{}\0junk" would read as "{}".
  if (json.find('\0') != absl::string_view::npos) return false;
  // In situ (strings and numbers read in a copy of the text) and
  // recursive: rapidjson 1.1.0's own stack, which the other modes use,
  // offsets a null pointer on its first push (undefined behaviour; the
  // sanitizer build aborted on every input). The recursion is bounded: the
  // handler refuses nesting past kMaxDepth and arrays in arrays.
  // An in-situ stream has no end but a NUL, and UTF-8 validation takes a
  // sequence's bytes before it looks at them: NULs past the text keep a
  // truncated sequence or escape at its end inside the copy (the
  // differential fuzzer read past it).
  std::string text(json);
  text.append(8, '\0');
  Reader handler(message);
  rapidjson::Reader reader;
  rapidjson::InsituStringStream stream(&text[0]);
  constexpr unsigned kFlags = rapidjson::kParseInsituFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag;
  return !reader.Parse<kFlags>(stream, handler).IsError() && handler.done();
}

}  // namespace aotcache
