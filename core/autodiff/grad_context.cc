#include "core/autodiff/grad_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/factory_inference.h"
#include "core/status_macros.h"

namespace aotcache {

namespace {

int64_t Bytes(const Meta& m) { return m.numel() * ItemSize(m.dtype); }

}  // namespace

bool SavedValues::IsCheap(int local) const {
  const GraphBuilder::Producer& p = forward_->producer(local);
  if (p.op == nullptr || p.op->randomness != Randomness::kDeterministic)
    return false;
  if (p.op->effect == OpEffect::kView || p.op->effect == OpEffect::kDetach ||
      p.op->effect == OpEffect::kUnsafeView) {
    return true;
  }
  if (p.op->effect != OpEffect::kFunctional) return false;
  InferFn f = p.op->infer;
  if (f == infer::Elementwise || f == infer::ElementwiseFloat ||
      f == infer::Comparison || f == infer::Where || f == infer::Factory ||
      f == infer::Full || f == infer::Like) {
    return true;
  }
  const std::string& name = p.op->schema.name;
  return name == "_softmax" || name == "_log_softmax" ||
         name == "native_layer_norm";
}

bool SavedValues::Leaves(int local, int depth, std::vector<int>* leaves) const {
  if (backward_of_.contains(local)) return true;
  if (depth == 0 || !IsCheap(local)) {
    leaves->push_back(local);
    return depth > 0;
  }
  for (const BoundArg& a : forward_->producer(local).args) {
    for (int v : a.values) {
      if (!Leaves(v, depth - 1, leaves)) return false;
    }
  }
  return true;
}

absl::StatusOr<int> SavedValues::Get(int forward_local) {
  auto it = backward_of_.find(forward_local);
  if (it != backward_of_.end()) return it->second;
  if (policy_ == Recompute::kCheapOps && IsCheap(forward_local)) {
    std::vector<int> leaves;
    constexpr int kMaxDepth = 16;
    if (Leaves(forward_local, kMaxDepth, &leaves)) {
      int64_t leaf_bytes = 0;
      absl::flat_hash_map<int, bool> counted;
      for (int l : leaves) {
        if (counted.emplace(l, true).second)
          leaf_bytes += Bytes(forward_->meta(l));
      }
      if (leaf_bytes <= Bytes(forward_->meta(forward_local))) {
        return RecomputeValue(forward_local);
      }
    }
  }
  return Save(forward_local);
}

absl::StatusOr<int> SavedValues::RecomputeValue(int forward_local) {
  const GraphBuilder::Producer& p = forward_->producer(forward_local);
  std::vector<BoundArg> args = p.args;
  for (BoundArg& a : args) {
    for (int& v : a.values) {
      AOTCACHE_ASSIGN_OR_RETURN(v, Get(v));
    }
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      std::vector<int> results,
      backward_->Emit(*p.op, std::move(args), /*grad_enabled=*/false,
                      absl::StrCat(p.op->schema.name, "_recomputed")));
  // Every result of the op is now known: its siblings are the locals next
  // to it (a multi-result op's results are consecutive).
  int first = forward_local - p.result;
  for (size_t r = 0; r < results.size(); ++r) {
    backward_of_[first + static_cast<int>(r)] = results[r];
  }
  return results[p.result];
}

int SavedValues::Save(int forward_local) {
  const Meta& meta = forward_->meta(forward_local);
  v1::Input* in = backward_->graph().add_inputs();
  in->set_name(backward_->FreshName(forward_->name(forward_local)));
  *in->mutable_meta() = MetaToProto(meta);
  in->mutable_meta()->set_is_leaf(true);
  int local = backward_->NewValue(in->name(), meta);
  backward_of_[forward_local] = local;
  order_.push_back(forward_local);
  saved_bytes_ += Bytes(meta);
  return local;
}

GradContext::GradContext(const TapeEntry& entry, const GraphBuilder& forward,
                         GraphBuilder* backward, SavedValues* saved,
                         std::vector<std::optional<int>> grad_outputs,
                         std::vector<bool> needs)
    : entry_(entry),
      forward_(forward),
      backward_(backward),
      saved_(saved),
      grad_outputs_(std::move(grad_outputs)),
      needs_(std::move(needs)) {
  for (const auto& values : entry.arg_values) {
    grads_.emplace_back(std::max<size_t>(values.size(), 1));
  }
}

BoundArg GradContext::Operand(int k) {
  if (IsNumber(k)) return NumberArg(Number(k));
  return TensorArg(Input(k));
}

int GradContext::Saved(int forward_local) {
  if (!status_.ok()) return -1;
  absl::StatusOr<int> v = saved_->Get(forward_local);
  if (!v.ok()) {
    status_ = v.status();
    return -1;
  }
  return *v;
}

bool GradContext::IsTensorElement(int k, int element) const {
  if (k >= 0 && k < static_cast<int>(entry_.arg_values.size()) &&
      element >= 0 && element < static_cast<int>(entry_.arg_values[k].size())) {
    return true;
  }
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("the derivative of ", entry_.node->op->qualified_name,
                     " needs argument ", k, " as a tensor, not a number"));
  }
  return false;
}

int GradContext::Input(int k, int element) {
  if (!IsTensorElement(k, element)) return -1;
  return Saved(entry_.arg_values[k][element]);
}

int GradContext::Result(int r) { return Saved(entry_.result_values[r]); }

const Meta& GradContext::InputMeta(int k, int element) const {
  static const Meta* const kNoMeta = new Meta();
  if (!IsTensorElement(k, element)) return *kNoMeta;
  return forward_.meta(entry_.arg_values[k][element]);
}

const Meta& GradContext::ResultMeta(int r) const {
  return forward_.meta(entry_.result_values[r]);
}

std::vector<int> GradContext::OpN(absl::string_view op,
                                  std::vector<BoundArg> args) {
  if (!status_.ok()) return {-1, -1, -1};
  const OpInfo* info = OpRegistry::Get().Find(op);
  if (info == nullptr) {
    status_ =
        absl::InternalError(absl::StrCat("derivative uses unknown op ", op));
    return {-1, -1, -1};
  }
  for (const BoundArg& a : args) {
    for (int v : a.values) {
      if (v < 0) return {-1, -1, -1};  // An earlier step failed.
    }
  }
  // Kwarg-only arguments left out take their defaults.
  while (args.size() < info->schema.args.size()) args.push_back(NoneArg());
  absl::StatusOr<std::vector<int>> r =
      backward_->Emit(*info, std::move(args), /*grad_enabled=*/false,
                      absl::StrCat(info->schema.name, "_grad"));
  if (!r.ok()) {
    status_ = absl::InternalError(absl::StrCat("derivative of ",
                                               entry_.node->op->qualified_name,
                                               ": ", r.status().message()));
    return {-1, -1, -1};
  }
  return *std::move(r);
}

int GradContext::Op(absl::string_view op, std::vector<BoundArg> args) {
  return OpN(op, std::move(args))[0];
}

int GradContext::Zeros(const Meta& like) {
  return Op("aten.zeros.default", {IntsArg(like.shape), DTypeArg(like.dtype)});
}

int GradContext::Contiguous(int x) {
  if (x < 0 || meta(x).IsContiguous()) return x;
  return Op("aten.clone.default",
            {TensorArg(x), StringArg("torch.contiguous_format")});
}

int GradContext::SumToSize(int g, const std::vector<int64_t>& shape) {
  if (g < 0 || meta(g).shape == shape) return g;
  const std::vector<int64_t>& from = meta(g).shape;
  int64_t lead =
      static_cast<int64_t>(from.size()) - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(from.size()); ++d) {
    if (d < lead || (shape[d - lead] == 1 && from[d] != 1)) dims.push_back(d);
  }
  int summed = g;
  if (!dims.empty()) {
    summed = Op("aten.sum.dim_IntList",
                {TensorArg(g), IntsArg(dims), BoolArg(true), NoneArg()});
  }
  if (summed >= 0 && meta(summed).shape != shape) {
    summed = Op("aten.view.default",
                {TensorArg(Contiguous(summed)), IntsArg(shape)});
  }
  return summed;
}

void GradContext::SetGrad(int k, int value, int element) {
  if (value < 0 || !needs_[k]) return;
  const Meta& target = InputMeta(k, element);
  int g = SumToSize(value, target.shape);
  if (g >= 0 && meta(g).dtype != target.dtype) {
    g = Op("aten._to_copy.default", {TensorArg(g), DTypeArg(target.dtype)});
  }
  if (g >= 0) grads_[k][element] = g;
}

void GradContext::Unsupported(absl::string_view why) {
  if (status_.ok()) {
    status_ = absl::UnimplementedError(absl::StrCat(
        "derivative of ", entry_.node->op->qualified_name, ": ", why));
  }
}

}  // namespace aotcache
