#include "core/graph/op_registry.h"

#include <cstdio>
#include <cstdlib>

#include "absl/algorithm/container.h"
#include "core/graph/conv_inference.h"
#include "core/graph/factory_inference.h"
#include "core/graph/indexing_inference.h"
#include "core/graph/loss_inference.h"
#include "core/graph/norm_inference.h"
#include "core/graph/pooling_inference.h"
#include "core/graph/scan_inference.h"

namespace aotcache {
namespace {

// Flags of a registry row.
enum Flag : unsigned {
  kNone = 0,
  kNotDifferentiable = 1u << 0,
  kUsesRng = 1u << 1,
  kMetadataMutation = 1u << 2,
  kDetachFlag = 1u << 3,
  kUnsafeViewFlag = 1u << 4,
  kFirstResultOnly = 1u << 5,  // Only result 0 is differentiable.
  kResizesSelf = 1u << 6,      // resize_ (OpInfo::resizes_self).
};

struct Row {
  const char* schema;
  InferFn infer;
  unsigned flags = kNone;
  const char* functional = "";        // For in-place ops.
  const char* nondiff_arg = nullptr;  // One tensor argument without gradient.
};

// Schemas as torch 1.13's native_functions.yaml spells them.
const Row kRows[] = {
    // Pointwise arithmetic.
    {"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     infer::Elementwise},
    {"add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
     infer::Elementwise},
    {"sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     infer::Elementwise},
    {"sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
     infer::Elementwise},
    {"mul.Tensor(Tensor self, Tensor other) -> Tensor", infer::Elementwise},
    {"mul.Scalar(Tensor self, Scalar other) -> Tensor", infer::Elementwise},
    {"div.Tensor(Tensor self, Tensor other) -> Tensor",
     infer::ElementwiseFloat},
    {"div.Scalar(Tensor self, Scalar other) -> Tensor",
     infer::ElementwiseFloat},
    {"neg(Tensor self) -> Tensor", infer::Elementwise},
    {"exp(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"expm1(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"log1p(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"log(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"sin(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"cos(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"tanh(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"sigmoid(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"relu(Tensor self) -> Tensor", infer::Elementwise},
    {"gelu(Tensor self, *, str approximate='none') -> Tensor",
     infer::ElementwiseFloat},
    {"sqrt(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"rsqrt(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"abs(Tensor self) -> Tensor", infer::Elementwise},
    {"pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
     infer::Elementwise},
    {"pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
     infer::Elementwise},
    {"maximum(Tensor self, Tensor other) -> Tensor", infer::Elementwise},
    {"atan2(Tensor self, Tensor other) -> Tensor", infer::ElementwiseFloat},
    {"acos(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"asin(Tensor self) -> Tensor", infer::ElementwiseFloat},
    {"atan(Tensor self) -> Tensor", infer::ElementwiseFloat},
    // Rounding: integral dtypes unchanged; a zero gradient.
    {"floor(Tensor self) -> Tensor", infer::Elementwise},
    {"ceil(Tensor self) -> Tensor", infer::Elementwise},
    {"round(Tensor self) -> Tensor", infer::Elementwise},
    {"trunc(Tensor self) -> Tensor", infer::Elementwise},
    {"minimum(Tensor self, Tensor other) -> Tensor", infer::Elementwise},
    {"where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
     infer::Where, kNone, "", "condition"},
    {"clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
     infer::Clone},
    {"copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
     infer::InPlace},
    {"fill.Scalar(Tensor self, Scalar value) -> Tensor", infer::Fresh,
     kNotDifferentiable},
    // Comparisons.
    {"isnan(Tensor self) -> Tensor", infer::Comparison, kNotDifferentiable},
    {"eq.Tensor(Tensor self, Tensor other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"eq.Scalar(Tensor self, Scalar other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"ne.Tensor(Tensor self, Tensor other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"ne.Scalar(Tensor self, Scalar other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"lt.Tensor(Tensor self, Tensor other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"lt.Scalar(Tensor self, Scalar other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"le.Tensor(Tensor self, Tensor other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"le.Scalar(Tensor self, Scalar other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"gt.Tensor(Tensor self, Tensor other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"gt.Scalar(Tensor self, Scalar other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"ge.Tensor(Tensor self, Tensor other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    {"ge.Scalar(Tensor self, Scalar other) -> Tensor", infer::Comparison,
     kNotDifferentiable},
    // Factories.
    {"ones(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
     "device=None, bool? pin_memory=None) -> Tensor",
     infer::Factory, kNotDifferentiable},
    {"zeros(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor",
     infer::Factory, kNotDifferentiable},
    {"full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? "
     "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
     infer::Full, kNotDifferentiable},
    {"arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor",
     infer::Arange, kNotDifferentiable},
    {"arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, "
     "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> "
     "Tensor",
     infer::Arange, kNotDifferentiable},
    {"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
     "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? "
     "pin_memory=None) -> Tensor",
     infer::Arange, kNotDifferentiable},
    {"empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? "
     "layout=None, Device? device=None, bool? pin_memory=None, "
     "MemoryFormat? memory_format=None) -> Tensor",
     infer::Factory, kNotDifferentiable},
    {"ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? "
     "memory_format=None) -> Tensor",
     infer::Like, kNotDifferentiable},
    {"zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? "
     "memory_format=None) -> Tensor",
     infer::Like, kNotDifferentiable},
    {"empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? "
     "memory_format=None) -> Tensor",
     infer::Like, kNotDifferentiable},
    {"lift_fresh_copy(Tensor self) -> Tensor", infer::Fresh},
    {"_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
     "MemoryFormat? memory_format=None) -> Tensor",
     infer::ToCopy},
    // Reductions and normalizations.
    {"sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", infer::SumAll},
    {"sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
     "ScalarType? dtype=None) -> Tensor",
     infer::SumDim},
    {"mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", infer::MeanAll},
    {"mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
     "dtype=None) -> Tensor",
     infer::MeanDim},
    {"var.correction(Tensor self, int[1]? dim=None, *, int? correction=None, "
     "bool keepdim=False) -> Tensor",
     infer::VarCorrection},
    {"amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
     infer::Amax},
    {"max(Tensor self) -> Tensor", infer::MaxAll},
    {"_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
     infer::Softmax},
    {"cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
     infer::Cumsum},
    {"sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor, "
     "Tensor)",
     infer::Sort, kFirstResultOnly},
    {"topk(Tensor self, int k, int dim=-1, bool largest=True, bool "
     "sorted=True) -> (Tensor, Tensor)",
     infer::Topk, kFirstResultOnly},
    {"_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
     infer::Softmax},
    {"native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? "
     "weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
     infer::LayerNorm, kFirstResultOnly},
    {"mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
     infer::MseLoss},
    // Convolution (conv_inference.h).
    {"convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, "
     "SymInt[] padding, int[] dilation, bool transposed, SymInt[] "
     "output_padding, int groups) -> Tensor",
     infer::Convolution},
    // Batch norm (norm_inference.h).
    {"_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, "
     "Tensor? bias, bool training, float momentum, float eps) -> (Tensor, "
     "Tensor, Tensor)",
     infer::BatchNorm, kFirstResultOnly},
    {"_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, "
     "Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, "
     "float eps) -> (Tensor, Tensor, Tensor)",
     infer::BatchNorm, kFirstResultOnly},
    // Pooling (pooling_inference.h).
    {"max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] "
     "stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) "
     "-> (Tensor, Tensor)",
     infer::MaxPool2d, kFirstResultOnly},
    {"avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
     "padding=0, bool ceil_mode=False, bool count_include_pad=True, int? "
     "divisor_override=None) -> Tensor",
     infer::AvgPool2d},
    {"_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
     infer::AdaptiveAvgPool2d},
    {"adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, "
     "Tensor)",
     infer::AdaptiveMaxPool2d, kFirstResultOnly},
    // Indexing (indexing_inference.h).
    {"embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
     "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
     infer::Embedding, kNone, "", "indices"},
    {"gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) "
     "-> Tensor",
     infer::Gather, kNone, "", "index"},
    {"scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
     infer::ScatterAdd, kNone, "", "index"},
    {"scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str "
     "reduce, *, bool include_self=True) -> Tensor",
     infer::ScatterReduce, kNone, "", "index"},
    {"index_select(Tensor self, int dim, Tensor index) -> Tensor",
     infer::IndexSelect, kNone, "", "index"},
    {"index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar "
     "alpha=1) -> Tensor",
     infer::IndexAdd, kNone, "", "index"},
    {"argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     infer::ArgReduce, kNotDifferentiable},
    {"argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     infer::ArgReduce, kNotDifferentiable},
    // Losses (loss_inference.h).
    {"nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int "
     "reduction, SymInt ignore_index) -> (Tensor, Tensor)",
     infer::NllLoss, kFirstResultOnly, "", "target"},
    {"binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, "
     "int reduction=Mean) -> Tensor",
     infer::BinaryCrossEntropy},
    // Linear algebra.
    {"mm(Tensor self, Tensor mat2) -> Tensor", infer::Mm},
    {"addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar "
     "alpha=1) -> Tensor",
     infer::Addmm},
    {"bmm(Tensor self, Tensor mat2) -> Tensor", infer::Bmm},
    {"dot(Tensor self, Tensor tensor) -> Tensor", infer::Dot},
    {"cat(Tensor[] tensors, int dim=0) -> Tensor", infer::Cat},
    // Views.
    {"view(Tensor(a) self, SymInt[] size) -> Tensor(a)", infer::View},
    {"_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> "
     "Tensor(a)",
     infer::ReshapeAlias},
    {"_unsafe_view(Tensor self, SymInt[] size) -> Tensor", infer::UnsafeView,
     kUnsafeViewFlag},
    {"t(Tensor(a) self) -> Tensor(a)", infer::T},
    {"transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
     infer::Transpose},
    {"permute(Tensor(a) self, int[] dims) -> Tensor(a)", infer::Permute},
    {"expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> "
     "Tensor(a)",
     infer::Expand},
    {"unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", infer::Unsqueeze},
    {"squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", infer::SqueezeDim},
    {"slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? "
     "end=None, SymInt step=1) -> Tensor(a)",
     infer::Slice},
    {"select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
     infer::Select},
    {"detach(Tensor(a) self) -> Tensor(a)", infer::SameAsSelf, kDetachFlag},
    {"alias(Tensor(a) self) -> Tensor(a)", infer::SameAsSelf},
    {"as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? "
     "storage_offset=None) -> Tensor(a)",
     infer::AsStrided},
    // Scatters: the functional inverses of views.
    {"select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
     infer::SelectScatter},
    {"slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
     "SymInt? end=None, SymInt step=1) -> Tensor",
     infer::SliceScatter},
    {"as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] "
     "stride, SymInt? storage_offset=None) -> Tensor",
     infer::AsStridedScatter},
    // In place.
    {"add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
     "Tensor(a!)",
     infer::InPlace, kNone, "aten.add.Tensor"},
    {"add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
     infer::InPlace, kNone, "aten.add.Scalar"},
    {"sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
     "Tensor(a!)",
     infer::InPlace, kNone, "aten.sub.Tensor"},
    {"sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
     infer::InPlace, kNone, "aten.sub.Scalar"},
    {"mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", infer::InPlace,
     kNone, "aten.mul.Tensor"},
    {"mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", infer::InPlace,
     kNone, "aten.mul.Scalar"},
    {"div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", infer::InPlace,
     kNone, "aten.div.Tensor"},
    {"div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", infer::InPlace,
     kNone, "aten.div.Scalar"},
    {"scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> "
     "Tensor(a!)",
     infer::ScatterAddInPlace, kNone, "aten.scatter_add.default", "index"},
    {"scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, "
     "str reduce, *, bool include_self=True) -> Tensor(a!)",
     infer::ScatterReduceInPlace, kNone, "aten.scatter_reduce.two", "index"},
    {"copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> "
     "Tensor(a!)",
     infer::InPlace, kNone, "aten.copy.default"},
    {"zero_(Tensor(a!) self) -> Tensor(a!)", infer::SameAsSelf, kNone,
     "aten.zeros_like.default"},
    {"fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
     infer::SameAsSelf, kNone, "aten.fill.Scalar"},
    {"relu_(Tensor(a!) self) -> Tensor(a!)", infer::SameAsSelf, kNone,
     "aten.relu.default"},
    {"sigmoid_(Tensor(a!) self) -> Tensor(a!)", infer::SameAsSelf, kNone,
     "aten.sigmoid.default"},
    {"tanh_(Tensor(a!) self) -> Tensor(a!)", infer::SameAsSelf, kNone,
     "aten.tanh.default"},
    {"sqrt_(Tensor(a!) self) -> Tensor(a!)", infer::SameAsSelf, kNone,
     "aten.sqrt.default"},
    {"t_(Tensor(a!) self) -> Tensor(a!)", infer::T, kMetadataMutation,
     "aten.t.default"},
    {"transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)",
     infer::Transpose, kMetadataMutation, "aten.transpose.int"},
    {"unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)", infer::Unsqueeze,
     kMetadataMutation, "aten.unsqueeze.default"},
    // torch 2.x's mean over a channels-last tensor restrides its result.
    {"as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? "
     "storage_offset=None) -> Tensor(a!)",
     infer::AsStrided, kMetadataMutation, "aten.as_strided.default"},
    {"resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? "
     "memory_format=None) -> Tensor(a!)",
     infer::ResizeInPlace, kResizesSelf | kNotDifferentiable,
     "aten.resize.default"},
    {"resize(Tensor self, SymInt[] size, *, MemoryFormat? memory_format=None) "
     "-> Tensor",
     infer::Resize, kNotDifferentiable},
    // Backward ops: what autograd's formulas decompose into (they also appear
    // in make_fx traces that include a backward).
    {"sign(Tensor self) -> Tensor", infer::Elementwise},
    {"gelu_backward(Tensor grad_output, Tensor self, *, str "
     "approximate='none') -> Tensor",
     infer::Elementwise, kNotDifferentiable},
    {"_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
     "ScalarType input_dtype) -> Tensor",
     infer::SameAsFirstFresh, kNotDifferentiable},
    {"_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
     "ScalarType input_dtype) -> Tensor",
     infer::SameAsFirstFresh, kNotDifferentiable},
    {"native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
     "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? "
     "bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
     infer::LayerNormBackward, kNotDifferentiable},
    {"convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
     "SymInt[]? bias_sizes, int[] stride, SymInt[] padding, int[] dilation, "
     "bool transposed, SymInt[] output_padding, int groups, bool[3] "
     "output_mask) -> (Tensor, Tensor, Tensor)",
     infer::ConvolutionBackward, kNotDifferentiable},
    {"native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? "
     "weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
     "Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> "
     "(Tensor, Tensor, Tensor)",
     infer::BatchNormBackward, kNotDifferentiable},
    {"max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, "
     "int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, "
     "bool ceil_mode, Tensor indices) -> Tensor",
     infer::PoolBackward, kNotDifferentiable},
    {"avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] "
     "kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool "
     "count_include_pad, int? divisor_override) -> Tensor",
     infer::PoolBackward, kNotDifferentiable},
    {"_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> "
     "Tensor",
     infer::PoolBackward, kNotDifferentiable},
    {"adaptive_max_pool2d_backward(Tensor grad_output, Tensor self, Tensor "
     "indices) -> Tensor",
     infer::PoolBackward, kNotDifferentiable},
    {"embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt "
     "num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
     infer::EmbeddingDenseBackward, kNotDifferentiable},
    {"nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
     "Tensor? weight, int reduction, SymInt ignore_index, Tensor "
     "total_weight) -> Tensor",
     infer::NllLossBackward, kNotDifferentiable},
    {"binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor "
     "target, Tensor? weight=None, int reduction=Mean) -> Tensor",
     infer::BinaryCrossEntropyBackward, kNotDifferentiable},
    {"mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int "
     "reduction) -> Tensor",
     infer::MseLossBackward, kNotDifferentiable},
    // Random: results depend on torch's RNG state, which no artifact captures.
    {"native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
     infer::Dropout, kUsesRng | kFirstResultOnly},
    {"rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? "
     "memory_format=None) -> Tensor",
     infer::Like, kUsesRng | kNotDifferentiable},
    {"randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? "
     "memory_format=None) -> Tensor",
     infer::Like, kUsesRng | kNotDifferentiable},
    // Differentiable with a zero gradient, as eager records it (its result
    // requires grad when self does). bernoulli.p is not, as in torch 1.13
    // (2.x made it differentiable too: there a compiled torch.bernoulli(x,
    // p) does not require grad where eager's does).
    {"bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
     infer::Fresh, kUsesRng},
    {"bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> "
     "Tensor",
     infer::Fresh, kUsesRng | kNotDifferentiable},
    {"bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? "
     "generator=None) -> Tensor(a!)",
     infer::SameAsSelf, kUsesRng, "aten.bernoulli.p"},
};

OpEffect EffectOf(const OpSchema& schema, unsigned flags) {
  if (flags & kDetachFlag) return OpEffect::kDetach;
  if (flags & kUnsafeViewFlag) return OpEffect::kUnsafeView;
  const AliasAnnotation& ret = schema.returns[0].alias;
  if (ret.set == 0) return OpEffect::kFunctional;
  if (!ret.is_write) return OpEffect::kView;
  return (flags & kMetadataMutation) ? OpEffect::kInPlaceMetadata
                                     : OpEffect::kInPlace;
}

// Rows are part of the program: a typo in one is a build defect.
OpSchema ParseRow(const char* text) {
  absl::StatusOr<OpSchema> schema = ParseOpSchema(text);
  if (!schema.ok()) {
    std::fprintf(stderr, "aotcache: bad registry schema: %s\n",
                 std::string(schema.status().message()).c_str());
    std::abort();
  }
  return *std::move(schema);
}

}  // namespace

bool OpInfo::IsArgDifferentiable(int arg) const {
  const ArgSchema& a = schema.args[arg];
  return differentiable && IsTensorType(a.type) &&
         !absl::c_linear_search(nondifferentiable_args, a.name);
}

OpRegistry::OpRegistry() {
  for (const Row& row : kRows) {
    OpInfo info;
    info.schema = ParseRow(row.schema);
    info.qualified_name = info.schema.QualifiedName();
    info.infer = row.infer;
    info.effect = EffectOf(info.schema, row.flags);
    info.randomness = (row.flags & kUsesRng) ? Randomness::kRandom
                                             : Randomness::kDeterministic;
    info.differentiable = !(row.flags & kNotDifferentiable);
    if (row.nondiff_arg != nullptr) {
      info.nondifferentiable_args.push_back(row.nondiff_arg);
    }
    info.differentiable_results.assign(info.schema.returns.size(),
                                       info.differentiable);
    if (row.flags & kFirstResultOnly) {
      for (size_t i = 1; i < info.differentiable_results.size(); ++i) {
        info.differentiable_results[i] = false;
      }
    }
    info.functional_counterpart = row.functional;
    info.resizes_self = (row.flags & kResizesSelf) != 0;
    Add(std::move(info));
  }
  for (const Decomposition& d : Decompositions()) {
    OpInfo info;
    info.schema = ParseRow(d.schema);
    info.qualified_name = info.schema.QualifiedName();
    info.infer = nullptr;
    info.effect = OpEffect::kFunctional;
    info.randomness = Randomness::kDeterministic;
    info.differentiable = true;
    info.decompose = d.decompose;
    Add(std::move(info));
  }
}

void OpRegistry::Add(OpInfo info) {
  by_name_[info.qualified_name] = static_cast<int>(ops_.size());
  ops_.push_back(std::move(info));
}

const OpRegistry& OpRegistry::Get() {
  static const OpRegistry* registry = new OpRegistry();
  return *registry;
}

const OpInfo* OpRegistry::Find(absl::string_view qualified_name) const {
  auto it = by_name_.find(qualified_name);
  return it == by_name_.end() ? nullptr : &ops_[it->second];
}

bool IsGetItem(absl::string_view op) {
  return op == "getitem" || op == "_operator.getitem";
}

}  // namespace aotcache
