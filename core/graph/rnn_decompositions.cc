// nn.LSTM as torch 2.x's make_fx records it on the CPU: one
// mkldnn_rnn_layer per layer and direction, rewritten into the cell's math,
// step by step: the input's part of every gate in one matrix product, then
// per step gates = x_t W_ih^T + b_ih + h W_hh^T + b_hh, split as (input,
// forget, cell, output), c = f c + i g, h = o tanh(c). A reverse layer
// walks the sequence from its end. The results are the hidden states of
// every step (sequence first), the last h and c, and the workspace
// oneDNN's backward would read: zeros of the declared shape, since aotcache
// derives the backward from the ops above.
#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using Results = absl::StatusOr<std::vector<int>>;

constexpr int64_t kLstmMode = 2;  // ATen's RNN modes: relu, tanh, LSTM, GRU.

enum Arg {
  kInput,
  kWeightIh,
  kWeightHh,
  kBiasIh,
  kBiasHh,
  kHx,
  kCx,
  kReverse,
  kBatchSizes,
  kMode,
  kHiddenSize,
  kNumLayers,  // The module's: each call is one layer of them.
  kHasBiases,
};

absl::StatusOr<int> Slice(Decomposer& d, int x, int64_t dim, int64_t start,
                          int64_t end) {
  return d.EmitOne(
      "aten.slice.Tensor",
      {TensorArg(x), IntArg(dim), IntArg(start), IntArg(end), IntArg(1)});
}

absl::StatusOr<int> Unary(Decomposer& d, const char* op, int x) {
  return d.EmitOne(op, {TensorArg(x)});
}

absl::StatusOr<int> Binary(Decomposer& d, const char* op, int a, int b) {
  if (std::string_view(op) == "aten.add.Tensor") {
    return d.EmitOne(op, {TensorArg(a), TensorArg(b), NumberArg(1)});
  }
  return d.EmitOne(op, {TensorArg(a), TensorArg(b)});
}

// mkldnn_rnn_layer(input, weight0..3, hx_, cx_, reverse, batch_sizes, mode,
// hidden_size, num_layers, has_biases, bidirectional, batch_first, train).
Results MkldnnRnnLayer(Decomposer& d) {
  const Meta x = d.tensor(kInput), w_ih = d.tensor(kWeightIh),
             w_hh = d.tensor(kWeightHh), hx = d.tensor(kHx);
  int64_t hidden = d.arg(kHiddenSize).i;
  if (d.arg(kMode).i != kLstmMode) {
    return ArgError("mode", "only the LSTM (mode 2) is supported");
  }
  if (!d.arg(kBatchSizes).ints.empty()) {
    return ArgError("batch_sizes", "packed sequences are not supported");
  }
  if (x.dim() != 3 || x.shape[0] < 1 || hidden < 1) {
    return ArgError("input",
                    "must be (sequence, batch, features), "
                    "sequence at least 1");
  }
  int64_t steps = x.shape[0], batch = x.shape[1];
  if (w_ih.shape != std::vector<int64_t>{4 * hidden, x.shape[2]} ||
      w_hh.shape != std::vector<int64_t>{4 * hidden, hidden} ||
      hx.shape != std::vector<int64_t>{batch, hidden} ||
      d.tensor(kCx).shape != hx.shape) {
    return ArgError("weight0",
                    "the weights and states do not fit the input "
                    "and hidden_size");
  }
  bool biases = d.arg(kHasBiases).b;
  if (biases && (d.tensor(kBiasIh).shape != std::vector<int64_t>{4 * hidden} ||
                 d.tensor(kBiasHh).shape != d.tensor(kBiasIh).shape)) {
    return ArgError("weight2", "the biases must be (4 * hidden_size)");
  }
  // The input's part of every gate at every step: one product.
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {d.arg(kInput), StringArg("torch.contiguous_format")}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int rows,
      d.EmitOne("aten.view.default",
                {TensorArg(dense), IntsArg({steps * batch, x.shape[2]})}));
  AOTCACHE_ASSIGN_OR_RETURN(int w_ih_t,
                            d.EmitOne("aten.t.default", {d.arg(kWeightIh)}));
  AOTCACHE_ASSIGN_OR_RETURN(int w_hh_t,
                            d.EmitOne("aten.t.default", {d.arg(kWeightHh)}));
  AOTCACHE_ASSIGN_OR_RETURN(int from_input,
                            Binary(d, "aten.mm.default", rows, w_ih_t));
  if (biases) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int bias, Binary(d, "aten.add.Tensor", d.arg(kBiasIh).values[0],
                         d.arg(kBiasHh).values[0]));
    AOTCACHE_ASSIGN_OR_RETURN(from_input,
                              Binary(d, "aten.add.Tensor", from_input, bias));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      from_input,
      d.EmitOne("aten.view.default",
                {TensorArg(from_input), IntsArg({steps, batch, 4 * hidden})}));
  int h = d.arg(kHx).values[0], c = d.arg(kCx).values[0];
  std::vector<int> outputs(steps);
  bool reverse = d.arg(kReverse).b;
  for (int64_t k = 0; k < steps; ++k) {
    int64_t t = reverse ? steps - 1 - k : k;
    AOTCACHE_ASSIGN_OR_RETURN(
        int step_input, d.EmitOne("aten.select.int", {TensorArg(from_input),
                                                      IntArg(0), IntArg(t)}));
    AOTCACHE_ASSIGN_OR_RETURN(int recurrent,
                              Binary(d, "aten.mm.default", h, w_hh_t));
    AOTCACHE_ASSIGN_OR_RETURN(
        int gates, Binary(d, "aten.add.Tensor", step_input, recurrent));
    int gate[4];
    const char* activation[4] = {"aten.sigmoid.default", "aten.sigmoid.default",
                                 "aten.tanh.default", "aten.sigmoid.default"};
    for (int q = 0; q < 4; ++q) {
      AOTCACHE_ASSIGN_OR_RETURN(
          int part, Slice(d, gates, 1, q * hidden, (q + 1) * hidden));
      AOTCACHE_ASSIGN_OR_RETURN(gate[q], Unary(d, activation[q], part));
    }
    AOTCACHE_ASSIGN_OR_RETURN(int kept,
                              Binary(d, "aten.mul.Tensor", gate[1], c));
    AOTCACHE_ASSIGN_OR_RETURN(int added,
                              Binary(d, "aten.mul.Tensor", gate[0], gate[2]));
    AOTCACHE_ASSIGN_OR_RETURN(c, Binary(d, "aten.add.Tensor", kept, added));
    AOTCACHE_ASSIGN_OR_RETURN(int squashed, Unary(d, "aten.tanh.default", c));
    AOTCACHE_ASSIGN_OR_RETURN(h,
                              Binary(d, "aten.mul.Tensor", gate[3], squashed));
    AOTCACHE_ASSIGN_OR_RETURN(outputs[t], d.EmitOne("aten.unsqueeze.default",
                                                    {TensorArg(h), IntArg(0)}));
  }
  BoundArg all;
  all.kind = BoundArg::Kind::kTensorList;
  all.values = outputs;
  AOTCACHE_ASSIGN_OR_RETURN(int output,
                            d.EmitOne("aten.cat.default", {all, IntArg(0)}));
  std::optional<Meta> declared = d.declared(3);
  std::vector<int64_t> workspace_shape =
      declared.has_value() ? declared->shape : std::vector<int64_t>{0};
  AOTCACHE_ASSIGN_OR_RETURN(
      int workspace,
      d.EmitOne("aten.zeros.default",
                {IntsArg(workspace_shape),
                 DTypeArg(declared.has_value() ? declared->dtype : x.dtype),
                 NoneArg(), NoneArg(), NoneArg()}));
  return std::vector<int>{output, h, c, workspace};
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& RnnDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"mkldnn_rnn_layer(Tensor input, Tensor weight0, Tensor weight1, Tensor "
       "weight2, Tensor weight3, Tensor hx_, Tensor cx_, bool reverse, int[] "
       "batch_sizes, int mode, int hidden_size, int num_layers, bool "
       "has_biases, bool bidirectional, bool batch_first, bool train) -> "
       "(Tensor, Tensor, Tensor, Tensor)",
       MkldnnRnnLayer},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
