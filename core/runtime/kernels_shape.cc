// Kernels that move or make data: views, copies and casts, factories, cat,
// scatters, and the random ops (with the executor's own generator: torch's
// RNG stream cannot be reproduced, which is why those ops are not cached).
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/graph/scatter_view.h"
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

// Every view op: the result is its input's storage seen through the meta
// shape inference computed (exact strides and offset).
// Whatever an artifact says (as_strided takes its layout from arguments), a
// view never reaches past its storage (an empty view reaches nothing,
// wherever its offset: eager slices an empty tensor anywhere).
Results ViewOf(const KernelArgs& k) {
  const Tensor& base = k.tensor(0);
  const Meta& view = k.result_meta(0);
  if (view.numel() > 0 && view.StorageExtent() > base.storage_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat(k.node->op->qualified_name, ": the view reaches element ",
                     view.StorageExtent() - 1, " of a storage of ",
                     base.storage_elements(), " elements"));
  }
  return std::vector<Tensor>{base.View(view)};
}

// A fresh result holding self's values (clone, casts, copies).
Results CopyOfSelf(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  CopyInto(k.tensor(0), out);
  return std::vector<Tensor>{out};
}

Results Filled(const KernelArgs& k, double value) {
  Tensor out = k.NewResult(0);
  Tensor v = Tensor::Contiguous({}, v1::DTYPE_FLOAT64);
  *reinterpret_cast<double*>(v.storage_data()) = value;
  CopyInto(v, out);
  return std::vector<Tensor>{out};
}

Results Zeros(const KernelArgs& k) { return Filled(k, 0); }
Results Ones(const KernelArgs& k) { return Filled(k, 1); }
Results Full(const KernelArgs& k) { return Filled(k, k.number(1)); }
Results FillScalar(const KernelArgs& k) { return Filled(k, k.number(1)); }

// resize(self, size): self's first elements in order (self is
// contiguous), zeros past them; what eager's resize_ leaves there is
// uninitialized memory.
Results Resize(const KernelArgs& k) {
  const Tensor& self = k.tensor(0);
  Tensor out = k.NewResult(0);
  auto flat = [](const Tensor& t, int64_t from, int64_t count) {
    Meta m = ContiguousMeta({count}, t.dtype());
    m.offset = t.meta().offset + from;
    return t.View(m);
  };
  int64_t kept = std::min(self.numel(), out.numel());
  CopyInto(flat(self, 0, kept), flat(out, 0, kept));
  Tensor zero = Tensor::Contiguous({}, v1::DTYPE_FLOAT64);
  *reinterpret_cast<double*>(zero.storage_data()) = 0;
  CopyInto(zero, flat(out, kept, out.numel() - kept));
  return std::vector<Tensor>{out};
}

// start + i * step, for the sizes inference gave (arange's three forms).
Results Arange(const KernelArgs& k) {
  bool has_start = k.node->op->schema.args[0].name == "start";
  double start = has_start ? k.number(0) : 0;
  double step =
      has_start && k.node->op->schema.args[2].name == "step" ? k.number(2) : 1;
  Tensor out = k.NewResult(0);
  bool integral = IsIntegral(out.dtype());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (integral) {
      StoreFrom<int64_t>(
          out.storage_data(), out.dtype(), i,
          static_cast<int64_t>(start) + i * static_cast<int64_t>(step));
    } else {
      StoreFrom<double>(out.storage_data(), out.dtype(), i, start + i * step);
    }
  }
  return std::vector<Tensor>{out};
}

// aten.copy(self, src): self's shape and dtype, src's values.
Results Copy(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  CopyInto(k.tensor(1), out);
  return std::vector<Tensor>{out};
}

// copy_ in place: src into self, which is returned.
Results CopyInPlace(const KernelArgs& k) {
  CopyInto(k.tensor(1), k.tensor(0));
  return std::vector<Tensor>{k.tensor(0)};
}

Results Cat(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  const Meta& m = out.meta();
  if (m.dim() == 1 && m.shape[0] == 0) return std::vector<Tensor>{out};
  int64_t dim = k.arg(1).i;
  if (dim < 0) dim += m.dim();
  int64_t at = 0;
  for (const Tensor& part : k.lists[0]) {
    if (part.meta().dim() == 1 && part.shape()[0] == 0) continue;
    Meta slot = m;
    slot.shape[dim] = part.shape()[dim];
    slot.offset += at * m.stride[dim];
    CopyInto(part, out.View(slot));
    at += part.shape()[dim];
  }
  return std::vector<Tensor>{out};
}

// The scatters: a contiguous copy of self with src written into the view
// the matching view op would take of it (core/graph/scatter_view.h).
Results Scatter(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  CopyInto(k.tensor(0), out);
  const std::string& op = k.node->op->qualified_name;
  std::optional<Meta> view = ScatterView(op, k.node->args, out.meta());
  if (!view.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the view does not fit the result's memory"));
  }
  CopyInto(k.tensor(1), out.View(*view));
  return std::vector<Tensor>{out};
}

// Element i of the result (row-major) is draw(i): a pure function of the
// run's seed, the node and i.
template <typename Draw>
Results Random(const KernelArgs& k, Draw draw) {
  Tensor out = k.NewResult(0);
  const Meta& m = out.meta();
  int64_t i = 0;
  ForEachIndex(m.shape, {m.stride}, {m.offset}, [&](const int64_t* pos) {
    StoreFrom<double>(out.storage_data(), m.dtype, pos[0], draw(i++));
  });
  return std::vector<Tensor>{out};
}

Results RandLike(const KernelArgs& k) {
  return Random(k, [&](int64_t i) { return k.Uniform(i); });
}

Results RandnLike(const KernelArgs& k) {
  return Random(k, [&](int64_t i) { return k.Normal(i); });
}

// bernoulli(self): each element 1 with probability self's element.
Results Bernoulli(const KernelArgs& k) {
  const Tensor& p = k.tensor(0);
  Tensor out = k.NewResult(0);
  const Meta& m = out.meta();
  int64_t i = 0;
  ForEachIndex(m.shape, {m.stride, p.meta().stride},
               {m.offset, p.meta().offset}, [&](const int64_t* pos) {
                 double prob =
                     LoadAs<double>(p.storage_data(), p.dtype(), pos[1]);
                 StoreFrom<double>(out.storage_data(), m.dtype, pos[0],
                                   k.Uniform(i++) < prob ? 1.0 : 0.0);
               });
  return std::vector<Tensor>{out};
}

Results BernoulliP(const KernelArgs& k) {
  double p = k.number(1);
  return Random(k, [&](int64_t i) { return k.Uniform(i) < p ? 1.0 : 0.0; });
}

// native_dropout(input, p, train): mask keeps each element with 1 - p;
// kept elements are scaled by 1 / (1 - p).
Results NativeDropout(const KernelArgs& k) {
  const Tensor& in = k.tensor(0);
  double p = k.number(1);
  bool train = k.arg(2).is_none() || k.arg(2).b;
  Tensor out = k.NewResult(0);
  Tensor mask = k.NewResult(1);
  double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const Meta& m = out.meta();
  int64_t i = 0;
  ForEachIndex(
      m.shape, {m.stride, mask.meta().stride, in.meta().stride},
      {m.offset, mask.meta().offset, in.meta().offset},
      [&](const int64_t* pos) {
        bool keep = !train || k.Uniform(i++) >= p;
        double x = LoadAs<double>(in.storage_data(), in.dtype(), pos[2]);
        StoreFrom<double>(out.storage_data(), m.dtype, pos[0],
                          keep ? (train ? x * scale : x) : 0.0);
        StoreFrom<bool>(mask.storage_data(), v1::DTYPE_BOOL, pos[1], keep);
      });
  return std::vector<Tensor>{out, mask};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& ShapeKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.view.default", ViewOf},
      {"aten._reshape_alias.default", ViewOf},
      {"aten._unsafe_view.default", ViewOf},
      {"aten.t.default", ViewOf},
      {"aten.transpose.int", ViewOf},
      {"aten.permute.default", ViewOf},
      {"aten.expand.default", ViewOf},
      {"aten.unsqueeze.default", ViewOf},
      {"aten.squeeze.dim", ViewOf},
      {"aten.slice.Tensor", ViewOf},
      {"aten.select.int", ViewOf},
      {"aten.detach.default", ViewOf},
      {"aten.alias.default", ViewOf},
      {"aten.as_strided.default", ViewOf},
      {"aten.clone.default", CopyOfSelf},
      {"aten.lift_fresh_copy.default", CopyOfSelf},
      {"aten._to_copy.default", CopyOfSelf},
      {"aten.copy.default", Copy},
      {"aten.resize.default", Resize},
      {"aten.copy_.default", CopyInPlace},
      {"aten.fill.Scalar", FillScalar},
      {"aten.zeros.default", Zeros},
      {"aten.ones.default", Ones},
      {"aten.empty.memory_format", Zeros},
      {"aten.arange.default", Arange},
      {"aten.arange.start", Arange},
      {"aten.arange.start_step", Arange},
      {"aten.full.default", Full},
      {"aten.zeros_like.default", Zeros},
      {"aten.ones_like.default", Ones},
      {"aten.empty_like.default", Zeros},
      {"aten.cat.default", Cat},
      {"aten.select_scatter.default", Scatter},
      {"aten.slice_scatter.default", Scatter},
      {"aten.as_strided_scatter.default", Scatter},
      {"aten.rand_like.default", RandLike},
      {"aten.randn_like.default", RandnLike},
      {"aten.bernoulli.default", Bernoulli},
      {"aten.bernoulli.p", BernoulliP},
      {"aten.native_dropout.default", NativeDropout},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
