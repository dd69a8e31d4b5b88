#include "core/analysis/graph_builder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/canonical_graph.h"
#include "core/graph/validate.h"
#include "core/status_macros.h"

namespace aotcache {

GraphBuilder::GraphBuilder(const v1::Graph& original) {
  *out_.mutable_storages() = original.storages();
  for (const v1::Input& in : original.inputs()) used_names_.insert(in.name());
  for (const v1::Constant& c : original.constants()) {
    used_names_.insert(c.name());
  }
  for (const v1::Node& n : original.nodes()) {
    used_names_.insert(n.name());
    original_names_.insert(n.name());
  }
}

int GraphBuilder::NewValue(std::string name, Meta meta) {
  names_.push_back(std::move(name));
  metas_.push_back(std::move(meta));
  producers_.emplace_back();
  return static_cast<int>(metas_.size()) - 1;
}

std::string GraphBuilder::FreshName(absl::string_view hint) {
  if (original_names_.erase(hint) > 0) return std::string(hint);
  std::string name(hint);
  int& suffix = next_suffix_[hint];
  while (!used_names_.insert(name).second) {
    name = absl::StrCat(hint, "_", ++suffix);
  }
  return name;
}

absl::StatusOr<std::vector<int>> GraphBuilder::Emit(
    const OpInfo& op, std::vector<BoundArg> args, bool grad_enabled,
    absl::string_view name_hint) {
  auto meta_of = [this](int id) -> const Meta& { return metas_[id]; };
  InferContext ctx(op.schema, args, meta_of);
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<Meta> metas, op.infer(ctx));
  v1::Node* node = out_.add_nodes();
  node->set_name(FreshName(name_hint));
  node->set_op(op.qualified_name);
  node->set_grad_mode(grad_enabled ? v1::GRAD_MODE_ENABLED
                                   : v1::GRAD_MODE_DISABLED);
  auto name_of = [this](int v) -> const std::string& { return names_[v]; };
  for (size_t k = 0; k < args.size(); ++k) {
    const ArgSchema& s = op.schema.args[k];
    if (!s.kwarg_only) {
      *node->add_args() = ArgumentToProto(args[k], name_of);
    } else if (!args[k].is_none()) {
      (*node->mutable_kwargs())[s.name] = ArgumentToProto(args[k], name_of);
    }
  }
  std::string base_name = node->name();
  std::vector<int> results;
  auto record = [&](int local, int r) {
    producers_[local] = Producer{&op, args, r, grad_enabled};
  };
  if (metas.size() == 1) {
    results.push_back(NewValue(base_name, std::move(metas[0])));
    record(results.back(), 0);
    return results;
  }
  for (size_t r = 0; r < metas.size(); ++r) {
    v1::Node* get = out_.add_nodes();
    get->set_name(FreshName(absl::StrCat(base_name, "_", r)));
    get->set_op("getitem");
    get->add_args()->set_node(base_name);
    get->add_args()->set_int_(static_cast<int64_t>(r));
    results.push_back(NewValue(get->name(), std::move(metas[r])));
    record(results.back(), static_cast<int>(r));
  }
  return results;
}

absl::StatusOr<int> GraphBuilder::EmitOne(const OpInfo& op,
                                          std::vector<BoundArg> args,
                                          bool grad_enabled,
                                          absl::string_view name_hint) {
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int> r,
                            Emit(op, std::move(args), grad_enabled, name_hint));
  return r[0];
}

absl::StatusOr<v1::Graph> GraphBuilder::Finish() && {
  absl::StatusOr<ResolvedGraph> check =
      ValidateGraph(out_, InternalGraphLimits());
  // Past a limit (a training graph has about twice its graph's nodes) is
  // the request's size, not a bug.
  if (absl::IsResourceExhausted(check.status())) return check.status();
  if (!check.ok()) {
    return absl::InternalError(
        absl::StrCat("built an invalid graph: ", check.status().message()));
  }
  return std::move(out_);
}

}  // namespace aotcache
