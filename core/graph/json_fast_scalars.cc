#include "core/graph/json_fast_scalars.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "google/protobuf/descriptor.h"

namespace aotcache {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

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

// Sets field `fd` of `m` to `v`, or adds `v` to it; true.
bool Store(Message* m, const FieldDescriptor* fd, bool add, int32_t v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddInt32(m, fd, v) : r->SetInt32(m, fd, v);
  return true;
}
bool Store(Message* m, const FieldDescriptor* fd, bool add, int64_t v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddInt64(m, fd, v) : r->SetInt64(m, fd, v);
  return true;
}
bool Store(Message* m, const FieldDescriptor* fd, bool add, uint32_t v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddUInt32(m, fd, v) : r->SetUInt32(m, fd, v);
  return true;
}
bool Store(Message* m, const FieldDescriptor* fd, bool add, uint64_t v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddUInt64(m, fd, v) : r->SetUInt64(m, fd, v);
  return true;
}
bool Store(Message* m, const FieldDescriptor* fd, bool add, double v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddDouble(m, fd, v) : r->SetDouble(m, fd, v);
  return true;
}
bool Store(Message* m, const FieldDescriptor* fd, bool add, float v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddFloat(m, fd, v) : r->SetFloat(m, fd, v);
  return true;
}
bool Store(Message* m, const FieldDescriptor* fd, bool add, bool v) {
  const Reflection* r = m->GetReflection();
  add ? r->AddBool(m, fd, v) : r->SetBool(m, fd, v);
  return true;
}

// A double or float field takes v; a float only within its range.
bool StoreFloating(Message* m, const FieldDescriptor* fd, bool add, double v) {
  if (fd->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
    return Store(m, fd, add, v);
  }
  return !(std::fabs(v) > std::numeric_limits<float>::max() &&
           std::isfinite(v)) &&
         Store(m, fd, add, static_cast<float>(v));
}

// Digits, after a '-' for signed types, without leading zeros (absl
// would also take spaces and a '+').
template <typename T>
bool Integer(absl::string_view text, T* out) {
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
bool Floating(absl::string_view text, double* out) {
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

template <typename T>
bool StoreInteger(Message* m, const FieldDescriptor* fd, bool add,
                  absl::string_view text) {
  T v;
  return Integer(text, &v) && Store(m, fd, add, v);
}

}  // namespace

bool SetScalarFromNumber(Message* m, const FieldDescriptor* fd, bool add,
                         absl::string_view text) {
  switch (fd->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return StoreInteger<int32_t>(m, fd, add, text);
    case FieldDescriptor::CPPTYPE_INT64:
      return StoreInteger<int64_t>(m, fd, add, text);
    case FieldDescriptor::CPPTYPE_UINT32:
      return StoreInteger<uint32_t>(m, fd, add, text);
    case FieldDescriptor::CPPTYPE_UINT64:
      return StoreInteger<uint64_t>(m, fd, add, text);
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v;
      return Floating(text, &v) && StoreFloating(m, fd, add, v);
    }
    default:
      return false;
  }
}

bool SetScalarFromString(Message* m, const FieldDescriptor* fd, bool add,
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
      return SetScalarFromNumber(m, fd, add, s);  // int64s are quoted
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      if (s == "NaN") {
        return StoreFloating(m, fd, add,
                             std::numeric_limits<double>::quiet_NaN());
      }
      if (s == "Infinity" || s == "-Infinity") {
        const double inf = std::numeric_limits<double>::infinity();
        return StoreFloating(m, fd, add, s == "Infinity" ? inf : -inf);
      }
      return false;
    default:
      return false;
  }
}

bool SetScalarFromBool(Message* m, const FieldDescriptor* fd, bool add,
                       bool b) {
  return fd->cpp_type() == FieldDescriptor::CPPTYPE_BOOL &&
         Store(m, fd, add, b);
}

}  // namespace aotcache
