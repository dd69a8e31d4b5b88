#include "tests/testing/value_fixtures.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph_json.h"
#include "tests/testing/fixtures.h"

namespace aotcache::testing {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value& F(const Struct& s, const std::string& name) {
  return s.fields().at(name);
}

std::vector<int64_t> Ints(const Value& v) {
  std::vector<int64_t> out;
  for (const Value& x : v.list_value().values()) {
    out.push_back(static_cast<int64_t>(x.number_value()));
  }
  return out;
}

DType DTypeOf(const Value& v) {
  DType d = v1::DTYPE_UNSPECIFIED;
  v1::DType_Parse(v.string_value(), &d);
  return d;
}

Tensor Decode(std::vector<int64_t> shape, DType dtype, const std::string& b64) {
  std::string bytes;
  absl::Base64Unescape(b64, &bytes);
  Tensor t = Tensor::Contiguous(std::move(shape), dtype);
  std::memcpy(t.storage_data(), bytes.data(),
              std::min<size_t>(bytes.size(), t.numel() * ItemSize(dtype)));
  return t;
}

}  // namespace

Tensor DecodeTensorValue(const Struct& s) {
  return Decode(Ints(F(s, "shape")), DTypeOf(F(s, "dtype")),
                F(s, "data").string_value());
}

Struct LoadJsonFixture(const std::string& relative) {
  Struct s;
  absl::Status st = ParseJson(ReadFileOrDie(FixturePath(relative)), &s);
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", relative.c_str(),
                 std::string(st.message()).c_str());
    std::abort();
  }
  return s;
}

EagerRun LoadEagerRun(const std::string& graph_file) {
  Struct values;
  absl::Status st =
      ParseJson(ReadFileOrDie(FixturePath("values/" + graph_file)), &values);
  EagerRun run;
  if (!st.ok()) return run;
  std::vector<Tensor> storages;
  for (const Value& s : F(values, "storages").list_value().values()) {
    const Struct& st_ = s.struct_value();
    storages.push_back(
        Decode({static_cast<int64_t>(F(st_, "size").number_value())},
               DTypeOf(F(st_, "dtype")), F(st_, "data").string_value()));
  }
  for (const Value& in : F(values, "inputs").list_value().values()) {
    const Struct& s = in.struct_value();
    const Tensor& storage =
        storages[static_cast<int>(F(s, "storage").number_value())];
    Meta meta;
    meta.shape = Ints(F(s, "shape"));
    meta.stride = Ints(F(s, "stride"));
    meta.offset = static_cast<int64_t>(F(s, "storage_offset").number_value());
    meta.dtype = storage.dtype();
    run.inputs.push_back(storage.View(meta));
  }
  for (const Value& v : F(values, "outputs").list_value().values()) {
    run.outputs.push_back(DecodeTensorValue(v.struct_value()));
  }
  for (const Value& v : F(values, "inputs_after").list_value().values()) {
    const Struct& s = v.struct_value();
    run.inputs_after.push_back(DecodeTensorValue(s));
    Meta m;
    m.shape = Ints(F(s, "shape"));
    m.stride = Ints(F(s, "stride"));
    m.offset = static_cast<int64_t>(F(s, "storage_offset").number_value());
    m.dtype = DTypeOf(F(s, "dtype"));
    run.layout_after.push_back(m);
  }
  for (int64_t i : Ints(F(values, "output_aliases_input"))) {
    run.output_aliases_input.push_back(static_cast<int>(i));
  }
  run.uses_rng = F(values, "uses_rng").bool_value();
  return run;
}

std::string CompareValues(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return "shapes differ";
  if (got.dtype() != want.dtype()) return "dtypes differ";
  std::vector<double> g = got.ToDoubles(), e = want.ToDoubles();
  double rtol = got.dtype() == v1::DTYPE_FLOAT64 ? 1e-10 : 1e-5;
  double atol = got.dtype() == v1::DTYPE_FLOAT64 ? 1e-12 : 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(e[i])
            ? !std::isnan(g[i])
            : std::abs(g[i] - e[i]) > atol + rtol * std::abs(e[i])) {
      return absl::StrCat("element ", i, ": ", g[i], " vs ", e[i]);
    }
  }
  return "";
}

}  // namespace aotcache::testing
