// Kernels of the loss family: nll_loss_forward and nll_loss_backward,
// binary_cross_entropy and its backward, as torch's CPU kernels compute them
// (a class index out of range, other than ignore_index, is an error, never a
// read past the input; so is a probability outside [0, 1]). Computed in
// float64.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

// Element i of t in row-major order, whatever t's strides.
double At(const Tensor& t, const std::vector<int64_t>& index) {
  const Meta& m = t.meta();
  int64_t pos = m.offset;
  for (size_t d = 0; d < index.size(); ++d) pos += index[d] * m.stride[d];
  return LoadAs<double>(t.storage_data(), m.dtype, pos);
}

// What nll_loss reads of one call: rows of (N, C) scores (N = 1 for a
// single (C) input), each row's class, and the class weights.
struct NllRows {
  int64_t rows;
  int64_t classes;
  bool batched;
  const Tensor* input;
  const Tensor* target;
  const Tensor* weight;  // Undefined: every class weighs 1.
  int64_t ignore_index;

  static NllRows Of(const KernelArgs& k, int self) {
    const Tensor& input = k.tensor(self);
    bool batched = input.meta().dim() == 2;
    return NllRows{batched ? input.shape()[0] : 1,
                   input.shape().back(),
                   batched,
                   &input,
                   &k.tensor(self + 1),
                   &k.tensor(self + 2),
                   k.arg(self + 4).i};
  }

  // Row r's class, or -1 when it is ignore_index; an error when out of range.
  absl::StatusOr<int64_t> Class(int64_t r) const {
    int64_t c =
        static_cast<int64_t>(batched ? At(*target, {r}) : At(*target, {}));
    if (c == ignore_index) return -1;
    if (c < 0 || c >= classes) {
      return absl::InvalidArgumentError(absl::StrCat("nll_loss: target ", c,
                                                     " is out of bounds for ",
                                                     classes, " classes"));
    }
    return c;
  }
  double Weight(int64_t c) const {
    return weight->defined() ? At(*weight, {c}) : 1.0;
  }
  double Score(int64_t r, int64_t c) const {
    return batched ? At(*input, {r, c}) : At(*input, {c});
  }
};

Results NllLossForward(const KernelArgs& k) {
  NllRows in = NllRows::Of(k, 0);
  int64_t reduction = k.arg(3).i;
  Tensor out = k.NewResult(0);
  Tensor total_weight = k.NewResult(1);
  double sum = 0, weights = 0;
  for (int64_t r = 0; r < in.rows; ++r) {
    absl::StatusOr<int64_t> c = in.Class(r);
    if (!c.ok()) return c.status();
    double loss = 0;
    if (*c >= 0) {
      double w = in.Weight(*c);
      loss = -w * in.Score(r, *c);
      weights += w;
    }
    sum += loss;
    if (reduction == 0)
      StoreFrom<double>(out.storage_data(), out.dtype(), r, loss);
  }
  if (reduction != 0) {
    // Mean over no weight is 0/0, NaN, as in torch.
    double v = reduction == 1 ? sum / weights : sum;
    StoreFrom<double>(out.storage_data(), out.dtype(), 0, v);
    StoreFrom<double>(total_weight.storage_data(), total_weight.dtype(), 0,
                      weights);
  }
  return std::vector<Tensor>{out, total_weight};
}

Results NllLossBackward(const KernelArgs& k) {
  const Tensor& grad = k.tensor(0);
  NllRows in = NllRows::Of(k, 1);
  int64_t reduction = k.arg(4).i;
  double total_weight = At(k.tensor(6), {});
  Tensor out = k.NewResult(0);
  for (int64_t r = 0; r < in.rows; ++r) {
    absl::StatusOr<int64_t> c = in.Class(r);
    if (!c.ok()) return c.status();
    if (*c < 0) continue;
    double g = reduction == 0 && in.batched ? At(grad, {r}) : At(grad, {});
    if (reduction == 1) g /= total_weight;
    StoreFrom<double>(out.storage_data(), out.dtype(), r * in.classes + *c,
                      -in.Weight(*c) * g);
  }
  return std::vector<Tensor>{out};
}

// What binary_cross_entropy and its backward read, element by element in
// row-major order: input x, target y, weight w and the backward's grad g,
// each broadcast to x's shape (w and g are 1 when undefined).
struct BceElements {
  const Tensor& x;
  const Tensor& y;
  const Tensor& w;
  const Tensor& g;

  // fn(i, x, y, w, g) per element i; an error (as torch's) when x or y is
  // outside [0, 1] or NaN.
  template <typename Fn>
  absl::Status ForEach(Fn fn) const {
    const std::vector<int64_t>& shape = x.shape();
    std::vector<std::vector<int64_t>> strides = {
        ContiguousMeta(shape, x.dtype()).stride, x.meta().stride,
        y.meta().stride};
    std::vector<int64_t> offsets = {0, x.meta().offset, y.meta().offset};
    for (const Tensor* t : {&w, &g}) {
      strides.push_back(t->defined() ? BroadcastStrides(t->meta(), shape)
                                     : std::vector<int64_t>(shape.size()));
      offsets.push_back(t->defined() ? t->meta().offset : 0);
    }
    auto load = [](const Tensor& t, int64_t pos) {
      return t.defined() ? LoadAs<double>(t.storage_data(), t.dtype(), pos)
                         : 1.0;
    };
    absl::Status status;
    ForEachIndex(shape, strides, offsets, [&](const int64_t* pos) {
      if (!status.ok()) return;
      double xv = load(x, pos[1]), yv = load(y, pos[2]);
      if (!(xv >= 0 && xv <= 1) || !(yv >= 0 && yv <= 1)) {
        status = absl::InvalidArgumentError(
            absl::StrCat("binary_cross_entropy: all elements of ",
                         xv >= 0 && xv <= 1 ? "target" : "input",
                         " should be between 0 and 1"));
        return;
      }
      fn(pos[0], xv, yv, load(w, pos[3]), load(g, pos[4]));
    });
    return status;
  }
};

// -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100)), then reduced.
Results BinaryCrossEntropy(const KernelArgs& k) {
  const Tensor none;
  BceElements in{k.tensor(0), k.tensor(1), k.tensor(2), none};
  int64_t reduction = k.arg(3).i;
  Tensor out = k.NewResult(0);
  double sum = 0;
  absl::Status status =
      in.ForEach([&](int64_t i, double x, double y, double w, double) {
        double loss = ((y - 1) * std::max(std::log1p(-x), -100.0) -
                       y * std::max(std::log(x), -100.0)) *
                      w;
        sum += loss;
        if (reduction == 0)
          StoreFrom<double>(out.storage_data(), out.dtype(), i, loss);
      });
  if (!status.ok()) return status;
  if (reduction != 0) {
    double n = static_cast<double>(in.x.numel());  // Mean of none: NaN.
    StoreFrom<double>(out.storage_data(), out.dtype(), 0,
                      reduction == 1 ? sum / n : sum);
  }
  return std::vector<Tensor>{out};
}

// g (x - y) / max((1 - x) x, 1e-12) w, over the element count for mean.
Results BinaryCrossEntropyBackward(const KernelArgs& k) {
  BceElements in{k.tensor(1), k.tensor(2), k.tensor(3), k.tensor(0)};
  bool mean = k.arg(4).i == 1;
  double n = static_cast<double>(in.x.numel());
  Tensor out = k.NewResult(0);
  absl::Status status =
      in.ForEach([&](int64_t i, double x, double y, double w, double g) {
        double v = g * (x - y) / std::max((1 - x) * x, 1e-12) * w;
        StoreFrom<double>(out.storage_data(), out.dtype(), i, mean ? v / n : v);
      });
  if (!status.ok()) return status;
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& LossKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.nll_loss_forward.default", NllLossForward},
      {"aten.nll_loss_backward.default", NllLossBackward},
      {"aten.binary_cross_entropy.default", BinaryCrossEntropy},
      {"aten.binary_cross_entropy_backward.default",
       BinaryCrossEntropyBackward},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
