#include "core/analysis/view_chain.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

const OpInfo& Op(absl::string_view name) {
  return *OpRegistry::Get().Find(name);
}

BoundArg ContiguousFormat() { return StringArg("torch.contiguous_format"); }

bool IsReshape(const std::string& name) {
  return name == "view" || name == "_reshape_alias" || name == "_unsafe_view";
}

absl::StatusOr<int> Contiguous(GraphBuilder& b, int local, bool grad_enabled) {
  if (b.meta(local).IsContiguous()) return local;
  return b.EmitOne(Op("aten.clone.default"),
                   {TensorArg(local), ContiguousFormat()}, grad_enabled,
                   "contiguous");
}

// The functional inverse of `step`: writes `updated` (the view's new value)
// into `base` (the value the view was taken of).
absl::StatusOr<int> Scatter(GraphBuilder& b, const ViewStep& step, int base,
                            int updated, bool grad_enabled) {
  const std::string& name = step.op->schema.name;
  auto with = [&](absl::string_view op, std::vector<BoundArg> args) {
    return b.EmitOne(Op(op), std::move(args), grad_enabled,
                     absl::StrCat(name, "_inverse"));
  };
  if (name == "select") {
    return with(
        "aten.select_scatter.default",
        {TensorArg(base), TensorArg(updated), step.args[1], step.args[2]});
  }
  if (name == "slice") {
    return with("aten.slice_scatter.default",
                {TensorArg(base), TensorArg(updated), step.args[1],
                 step.args[2], step.args[3], step.args[4]});
  }
  if (name == "as_strided") {
    return with("aten.as_strided_scatter.default",
                {TensorArg(base), TensorArg(updated), step.args[1],
                 step.args[2], step.args[3]});
  }
  if (name == "detach" || name == "alias") return updated;
  if (name == "t") return with("aten.t.default", {TensorArg(updated)});
  if (name == "transpose") {
    return with("aten.transpose.int",
                {TensorArg(updated), step.args[1], step.args[2]});
  }
  if (name == "permute") {
    std::vector<int64_t> inverse(step.args[1].ints.size());
    int64_t rank = static_cast<int64_t>(inverse.size());
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = step.args[1].ints[i];
      inverse[d < 0 ? d + rank : d] = i;
    }
    return with("aten.permute.default", {TensorArg(updated), IntsArg(inverse)});
  }
  if (name == "unsqueeze") {
    int64_t d = step.args[1].i;
    if (d < 0) d += b.meta(updated).dim();
    return with("aten.squeeze.dim", {TensorArg(updated), IntArg(d)});
  }
  if (name == "squeeze") {
    if (b.meta(base).dim() == b.meta(updated).dim()) return updated;
    int64_t d = step.args[1].i;
    if (d < 0) d += b.meta(base).dim();
    return with("aten.unsqueeze.default", {TensorArg(updated), IntArg(d)});
  }
  if (IsReshape(name)) {
    AOTCACHE_ASSIGN_OR_RETURN(int source, Contiguous(b, updated, grad_enabled));
    return with("aten.view.default",
                {TensorArg(source), IntsArg(b.meta(base).shape)});
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot write through a view made by aten.", name,
      " (eager refuses writes where several elements share memory)"));
}

}  // namespace

absl::StatusOr<int> ApplyViewStep(GraphBuilder& b, const ViewStep& step,
                                  int local, bool grad_enabled) {
  std::string hint = absl::StrCat(step.op->schema.name, "_regen");
  std::vector<BoundArg> args = step.args;
  args[0] = TensorArg(local);
  if (IsReshape(step.op->schema.name)) {
    AOTCACHE_ASSIGN_OR_RETURN(int source, Contiguous(b, local, grad_enabled));
    args[0] = TensorArg(source);
    if (step.op->schema.name == "_reshape_alias") {
      // Its strides were the original layout's; a contiguous value takes a
      // plain view of the same size.
      return b.EmitOne(Op("aten.view.default"), {args[0], args[1]},
                       grad_enabled, hint);
    }
  }
  return b.EmitOne(*step.op, std::move(args), grad_enabled, hint);
}

absl::StatusOr<int> ApplyChain(GraphBuilder& b, const ViewChain& chain,
                               int root, bool grad_enabled) {
  int local = root;
  for (const ViewStep& step : chain) {
    AOTCACHE_ASSIGN_OR_RETURN(local,
                              ApplyViewStep(b, step, local, grad_enabled));
  }
  return local;
}

absl::StatusOr<int> WriteThroughChain(GraphBuilder& b, const ViewChain& chain,
                                      int root, int updated,
                                      bool grad_enabled) {
  std::vector<int> along = {root};  // Values along the chain, root first.
  for (size_t k = 0; k + 1 < chain.size(); ++k) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int v, ApplyViewStep(b, chain[k], along.back(), grad_enabled));
    along.push_back(v);
  }
  int value = updated;
  for (size_t k = chain.size(); k-- > 0;) {
    AOTCACHE_ASSIGN_OR_RETURN(
        value, Scatter(b, chain[k], along[k], value, grad_enabled));
  }
  return value;
}

}  // namespace aotcache
