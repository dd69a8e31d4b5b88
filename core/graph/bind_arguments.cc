#include "core/graph/bind_arguments.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using Kind = BoundArg::Kind;

absl::Status Invalid(absl::string_view where, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", detail));
}

}  // namespace

std::string Quoted(absl::string_view text) {
  constexpr size_t kShown = 64;
  if (text.size() <= kShown)
    return absl::StrCat("'", absl::CHexEscape(text), "'");
  return absl::StrCat("'", absl::CHexEscape(text.substr(0, kShown)), "...' (",
                      text.size(), " bytes)");
}

absl::StatusOr<BoundArg> BindArgument(const ArgSchema& s, const v1::Argument& a,
                                      ResolveName lookup, Where where) {
  BoundArg b;
  auto here = [&] { return absl::StrCat(where(), " argument '", s.name, "'"); };
  auto type_error = [&](absl::string_view got) {
    return Invalid(
        here(), absl::StrCat("expected ", ArgTypeName(s.type), ", got ", got));
  };
  switch (a.value_case()) {
    case v1::Argument::kNone:
      if (!a.none()) return Invalid(here(), "'none' must be true");
      b.kind = Kind::kNone;
      break;
    case v1::Argument::kNode: {
      AOTCACHE_ASSIGN_OR_RETURN(int id, lookup(a.node(), here));
      b.kind = Kind::kTensor;
      b.values.push_back(id);
      break;
    }
    case v1::Argument::kNodes:
      b.kind = Kind::kTensorList;
      for (const std::string& name : a.nodes().names()) {
        AOTCACHE_ASSIGN_OR_RETURN(int id, lookup(name, here));
        b.values.push_back(id);
      }
      break;
    case v1::Argument::kInt:
      b.kind = Kind::kInt;
      b.i = a.int_();
      break;
    case v1::Argument::kFloat:
      b.kind = Kind::kFloat;
      b.f = a.float_();
      break;
    case v1::Argument::kBool:
      b.kind = Kind::kBool;
      b.b = a.bool_();
      break;
    case v1::Argument::kString:
      b.kind = Kind::kString;
      b.s = a.string();
      break;
    case v1::Argument::kDevice:
      if (a.device() != "cpu") return Invalid(here(), "only cpu is supported");
      b.kind = Kind::kDevice;
      b.s = a.device();
      break;
    case v1::Argument::kInts:
      b.kind = Kind::kInts;
      b.ints.assign(a.ints().values().begin(), a.ints().values().end());
      break;
    case v1::Argument::kDtype:
      if (DTypeRank(a.dtype()) < 0) return Invalid(here(), "unsupported dtype");
      b.kind = Kind::kDType;
      b.dtype = a.dtype();
      break;
    case v1::Argument::VALUE_NOT_SET:
      return Invalid(here(), "argument has no value");
  }
  bool optional = false;
  bool ok = false;
  switch (s.type) {
    case ArgType::kTensor:
      // Python numbers stand in for tensors in make_fx traces (x * 2).
      ok = b.kind == Kind::kTensor || b.is_number();
      break;
    case ArgType::kOptionalTensor:
      ok = b.kind == Kind::kTensor || b.is_none();
      break;
    case ArgType::kTensorList:
      ok = b.kind == Kind::kTensorList;
      break;
    case ArgType::kOptionalInt:
      optional = true;
      [[fallthrough]];
    case ArgType::kInt:
      ok = b.kind == Kind::kInt;
      break;
    case ArgType::kOptionalIntList:
      optional = true;
      [[fallthrough]];
    case ArgType::kIntList:
      if (b.kind == Kind::kInt) {  // int[1] accepts a bare int.
        b.kind = Kind::kInts;
        b.ints = {b.i};
      }
      ok = b.kind == Kind::kInts;
      break;
    case ArgType::kOptionalFloat:
      optional = true;
      [[fallthrough]];
    case ArgType::kFloat:
      if (b.kind == Kind::kInt) {
        b.kind = Kind::kFloat;
        b.f = static_cast<double>(b.i);
      }
      ok = b.kind == Kind::kFloat;
      break;
    case ArgType::kOptionalScalar:
      optional = true;
      [[fallthrough]];
    case ArgType::kScalar:
      ok = b.is_number();
      break;
    case ArgType::kOptionalBool:
      optional = true;
      [[fallthrough]];
    case ArgType::kBool:
      ok = b.kind == Kind::kBool;
      break;
    case ArgType::kString:
      ok = b.kind == Kind::kString;
      break;
    case ArgType::kOptionalScalarType:
      optional = true;
      ok = b.kind == Kind::kDType;
      break;
    case ArgType::kOptionalDevice:
      optional = true;
      ok = b.kind == Kind::kDevice;
      break;
    case ArgType::kOptionalLayout:
    case ArgType::kOptionalMemoryFormat:
      optional = true;
      ok = b.kind == Kind::kString;
      break;
    case ArgType::kOptionalGenerator:
      optional = true;  // Only None: generators do not cross the wire.
      break;
    case ArgType::kBoolList:
      ok = b.kind == Kind::kInts;
      break;
    case ArgType::kScalarType:
      ok = b.kind == Kind::kDType;
      break;
  }
  if (!ok && !(optional && b.is_none())) {
    return type_error(Quoted(a.ShortDebugString()));
  }
  return b;
}

BoundArg DefaultArgument(const ArgSchema& s) {
  BoundArg b;
  const v1::Argument& d = *s.default_value;
  switch (d.value_case()) {
    case v1::Argument::kInt:
      if (s.type == ArgType::kFloat || s.type == ArgType::kOptionalFloat) {
        b.kind = Kind::kFloat;
        b.f = static_cast<double>(d.int_());
      } else {
        b.kind = Kind::kInt;
        b.i = d.int_();
      }
      break;
    case v1::Argument::kFloat:
      b.kind = Kind::kFloat;
      b.f = d.float_();
      break;
    case v1::Argument::kBool:
      b.kind = Kind::kBool;
      b.b = d.bool_();
      break;
    case v1::Argument::kString:
      b.kind = Kind::kString;
      b.s = d.string();
      break;
    case v1::Argument::kInts:
      b.kind = Kind::kInts;
      b.ints.assign(d.ints().values().begin(), d.ints().values().end());
      break;
    default:
      b.kind = Kind::kNone;
  }
  return b;
}

}  // namespace aotcache
