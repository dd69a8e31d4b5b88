#include "core/runtime/compiled_function.h"

#include "absl/strings/str_cat.h"
#include "core/analysis/view_and_mutation.h"
#include "core/key/target.h"
#include "core/runtime/shared_objects.h"
#include "core/runtime/strided.h"
#include "core/runtime/view_replay.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

// A native artifact: its program, with the groups its kernels compute.
// FailedPrecondition when its kernels were built for a CPU level this
// machine lacks (they would die of SIGILL).
absl::StatusOr<std::unique_ptr<GraphExecutor>> LoadNative(
    const v1::NativeProgram& native) {
  std::vector<GraphExecutor::FusedKernel> fused;
  if (native.kernels_size() > 0) {
    if (native.cpu().empty()) {
      return absl::InvalidArgumentError(
          "native artifact: its kernels name no CPU level");
    }
    absl::Status runs = CpuLevelRunsOn(native.cpu(), HostTarget());
    if (!runs.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("native artifact: ", runs.message()));
    }
    AOTCACHE_ASSIGN_OR_RETURN(void* handle,
                              OpenSharedObject(native.shared_object()));
    for (const v1::NativeProgram::Kernel& k : native.kernels()) {
      GraphExecutor::FusedKernel f;
      f.nodes.assign(k.nodes().begin(), k.nodes().end());
      f.inputs.assign(k.inputs().begin(), k.inputs().end());
      f.outputs.assign(k.outputs().begin(), k.outputs().end());
      f.any_layout = k.any_layout();
      AOTCACHE_ASSIGN_OR_RETURN(void* fn, FindSymbol(handle, k.symbol()));
      f.fn = reinterpret_cast<decltype(f.fn)>(fn);
      fused.push_back(std::move(f));
    }
  }
  return GraphExecutor::Create(native.program(), std::move(fused));
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> LoadProgram(
    const v1::Artifact& artifact) {
  if (artifact.backend() == "native") {
    v1::NativeProgram native;
    if (!native.ParseFromString(artifact.payload())) {
      return absl::InvalidArgumentError("artifact payload does not parse");
    }
    return LoadNative(native);
  }
  if (artifact.backend() != "reference") {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact of backend '", artifact.backend(),
                     "': this runtime runs reference and native artifacts"));
  }
  v1::ReferenceProgram program;
  if (!program.ParseFromString(artifact.payload())) {
    return absl::InvalidArgumentError("artifact payload does not parse");
  }
  return GraphExecutor::Create(program);
}

// `base` seen through `view` if the view fits base's memory, else nullopt.
std::optional<Tensor> ViewIfFits(const Tensor& base, const Meta& view) {
  if (view.StorageExtent() > base.storage_elements()) return std::nullopt;
  return ReplayView(base, view);
}

// The metadata and the forward's calling convention agree with each other,
// so that the epilogue's indices stay in range whatever the bytes were.
absl::Status CheckMetadata(const v1::Artifact& forward,
                           const v1::FunctionMetadata& metadata) {
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the function metadata does not fit its artifact: ", what));
  };
  const v1::ViewAndMutationData& vmd = metadata.view_and_mutation();
  const v1::CallingConvention& c = forward.calling_convention();
  const int n = vmd.inputs_size();
  // Every meta the epilogue reads, well formed (MetaFromProto trusts them).
  auto well_formed = [](const v1::TensorMeta& m) {
    if (m.stride_size() != 0 && m.stride_size() != m.shape_size()) return false;
    if (m.shape_size() > 64 || m.storage_offset() < 0) return false;
    for (int64_t s : m.shape())
      if (s < 0) return false;
    for (int64_t s : m.stride())
      if (s < 0) return false;
    return true;
  };
  for (const auto* metas :
       {&c.inputs(), &c.outputs(), &metadata.original_outputs(),
        &metadata.original_intermediate_bases(), &metadata.inputs_after(),
        &vmd.intermediate_bases()}) {
    for (const v1::TensorMeta& m : *metas) {
      if (!well_formed(m)) return bad("a malformed tensor meta");
    }
  }
  for (const v1::TangentInfo& t : vmd.tangents()) {
    if (!well_formed(t.meta())) return bad("a malformed tangent meta");
  }
  if (c.num_mutated_inputs() < 0 || c.num_user_outputs() < 0 ||
      c.num_intermediate_bases() < 0 || c.num_saved() < 0) {
    return bad("negative counts");
  }
  int mutated = 0;
  for (const v1::InputAliasInfo& in : vmd.inputs()) {
    mutated += (in.mutates_data() || in.mutates_metadata()) &&
               !MutationStaysInGraph(in);
  }
  const int64_t outputs = int64_t{mutated} + c.num_user_outputs() +
                          c.num_intermediate_bases() + c.num_saved();
  if (mutated != c.num_mutated_inputs() || outputs != c.outputs_size()) {
    return bad("output counts");
  }
  if (vmd.outputs_size() != c.num_user_outputs() ||
      metadata.original_outputs_size() != c.num_user_outputs() ||
      metadata.original_intermediate_bases_size() <
          c.num_intermediate_bases() ||
      (metadata.inputs_after_size() != 0 &&
       metadata.inputs_after_size() != n)) {
    return bad("per-output or per-input lists");
  }
  for (const v1::OutputAliasInfo& out : vmd.outputs()) {
    int limit = 0;
    switch (out.output_type()) {
      case v1::OUTPUT_TYPE_IS_INPUT:
      case v1::OUTPUT_TYPE_ALIAS_OF_INPUT:
        limit = n;
        break;
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT:
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE:
        limit = c.num_intermediate_bases();
        break;
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT:
        limit = c.num_user_outputs();
        break;
      default:
        continue;
    }
    if (out.base_idx() < 0 || out.base_idx() >= limit) {
      return bad("an output's base");
    }
  }
  int merged = 0;
  std::vector<bool> member(n, false);
  for (const v1::SyntheticBase& b : vmd.synthetic_bases()) {
    if (b.inputs_size() == 0 || b.size() < 0) return bad("a synthetic base");
    for (int i : b.inputs()) {
      if (i < 0 || i >= n || member[i]) return bad("a synthetic base");
      member[i] = true;
      ++merged;
    }
  }
  if (n - merged + vmd.synthetic_bases_size() != c.inputs_size()) {
    return bad("input counts");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledFunction>> CompiledFunction::Load(
    const v1::Artifact& forward, const v1::FunctionMetadata& metadata) {
  if (forward.kind() != v1::ARTIFACT_KIND_FORWARD &&
      forward.kind() != v1::ARTIFACT_KIND_INFERENCE) {
    return absl::InvalidArgumentError("not a forward or inference artifact");
  }
  AOTCACHE_RETURN_IF_ERROR(CheckMetadata(forward, metadata));
  std::unique_ptr<CompiledFunction> f(new CompiledFunction());
  f->forward_artifact_ = std::make_shared<const v1::Artifact>(forward);
  f->metadata_ = std::make_shared<const v1::FunctionMetadata>(metadata);
  AOTCACHE_ASSIGN_OR_RETURN(f->forward_, LoadProgram(forward));
  return f;
}

std::unique_ptr<CompiledFunction> CompiledFunction::ShareForward() const {
  std::unique_ptr<CompiledFunction> f(new CompiledFunction());
  f->forward_artifact_ = forward_artifact_;
  f->metadata_ = metadata_;
  f->forward_ = forward_;
  return f;
}

absl::Status CompiledFunction::AttachBackward(const v1::Artifact& backward) {
  if (backward.kind() != v1::ARTIFACT_KIND_BACKWARD) {
    return absl::InvalidArgumentError("not a backward artifact");
  }
  if (backward.pairs_with() != forward_artifact_->calling_convention_hash()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "backward artifact pairs with a forward of calling convention ",
        backward.pairs_with(), ", this forward's is ",
        forward_artifact_->calling_convention_hash()));
  }
  AOTCACHE_ASSIGN_OR_RETURN(backward_, LoadProgram(backward));
  backward_convention_ = backward.calling_convention();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> CompiledFunction::ArtifactArgs(
    const std::vector<Tensor>& inputs) const {
  const v1::ViewAndMutationData& vmd = metadata_->view_and_mutation();
  if (static_cast<int>(inputs.size()) != vmd.inputs_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", vmd.inputs_size(), " inputs, got ", inputs.size()));
  }
  std::vector<int> base_of_input(inputs.size(), -1);
  for (int b = 0; b < vmd.synthetic_bases_size(); ++b) {
    for (int i : vmd.synthetic_bases(b).inputs()) base_of_input[i] = b;
  }
  std::vector<Tensor> args;
  std::vector<bool> base_added(vmd.synthetic_bases_size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    int b = base_of_input[i];
    if (b < 0) {
      args.push_back(inputs[i]);
    } else if (!base_added[b]) {
      base_added[b] = true;
      // The base covers the whole storage the function was compiled for:
      // the caller's must be as large (its layout alone does not say).
      if (inputs[i].storage_elements() < vmd.synthetic_bases(b).size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inputs[", i, "]: its storage has ", inputs[i].storage_elements(),
            " elements; the function was compiled for one of ",
            vmd.synthetic_bases(b).size()));
      }
      args.push_back(inputs[i].View(
          ContiguousMeta({vmd.synthetic_bases(b).size()}, inputs[i].dtype())));
    }
  }
  return args;
}

absl::StatusOr<CompiledFunction::ForwardResult> CompiledFunction::Forward(
    std::vector<Tensor>* inputs, uint64_t seed) const {
  const v1::ViewAndMutationData& vmd = metadata_->view_and_mutation();
  const v1::CallingConvention& c = forward_artifact_->calling_convention();
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<Tensor> args, ArtifactArgs(*inputs));
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<Tensor> raw, forward_->Run(args, seed));
  if (static_cast<int>(raw.size()) != c.outputs_size()) {
    return absl::InternalError("the forward returned another output count");
  }
  ForwardResult result;
  size_t first_saved = raw.size() - c.num_saved();
  // Saved values that are the caller's memory (inputs saved as they were)
  // must keep their values when the epilogue writes new ones there.
  for (size_t s = first_saved; s < raw.size(); ++s) {
    for (size_t i = 0; i < inputs->size(); ++i) {
      const v1::InputAliasInfo& in = vmd.inputs(static_cast<int>(i));
      if (in.mutates_data() && raw[s].SharesStorageWith((*inputs)[i])) {
        Tensor copy = Tensor::Zeros(raw[s].meta());
        CopyInto(raw[s], copy);
        raw[s] = copy;
        break;
      }
    }
  }
  size_t k = 0;
  // Epilogue 1: mutated inputs.
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    const v1::InputAliasInfo& in = vmd.inputs(i);
    if (!in.mutates_data() && !in.mutates_metadata()) continue;
    if (MutationStaysInGraph(in)) continue;  // Written inside the graph.
    const Tensor& updated = raw[k++];
    Tensor& caller = (*inputs)[i];
    if (in.mutates_metadata()) {
      // as_strided_: the caller's memory seen with its new layout.
      if (i >= metadata_->inputs_after_size()) {
        return absl::InvalidArgumentError(
            "function metadata lacks input layouts");
      }
      Meta after = MetaFromProto(metadata_->inputs_after(i));
      after.dtype = caller.dtype();
      if (after.StorageExtent() > caller.storage_elements()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "inputs[", i,
            "] is resized (resize_) past its memory, which this runtime "
            "cannot grow (the Python package resizes the caller's tensor)"));
      }
      caller = caller.View(after);
    }
    if (in.mutates_data()) CopyInto(updated, caller);
  }
  // Epilogue 2: user outputs, regenerated as views where they alias.
  std::vector<Tensor> user(raw.begin() + k,
                           raw.begin() + k + c.num_user_outputs());
  k += c.num_user_outputs();
  result.intermediate_bases.assign(
      raw.begin() + k, raw.begin() + k + c.num_intermediate_bases());
  k += c.num_intermediate_bases();
  result.saved.assign(raw.begin() + k, raw.end());
  result.outputs.resize(user.size());
  for (int j = static_cast<int>(user.size()) - 1; j >= 0; --j) {
    const v1::OutputAliasInfo& out = vmd.outputs(j);
    Meta view = MetaFromProto(metadata_->original_outputs(j));
    std::optional<Tensor> replayed;
    switch (out.output_type()) {
      case v1::OUTPUT_TYPE_IS_INPUT:
        replayed = (*inputs)[out.base_idx()];
        break;
      case v1::OUTPUT_TYPE_ALIAS_OF_INPUT:
        replayed = ViewIfFits((*inputs)[out.base_idx()], view);
        break;
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT:
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE: {
        const Tensor& base = result.intermediate_bases[out.base_idx()];
        if (base.meta() == MetaFromProto(metadata_->original_intermediate_bases(
                               out.base_idx()))) {
          replayed = ViewIfFits(base, view);
        }
        break;
      }
      default:
        break;
    }
    result.outputs[j] = replayed.has_value() ? *replayed : user[j];
  }
  // Outputs that are views of other outputs, once those are final.
  for (size_t j = 0; j < user.size(); ++j) {
    const v1::OutputAliasInfo& out = vmd.outputs(j);
    if (out.output_type() !=
        v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT) {
      continue;
    }
    const Tensor& base = result.outputs[out.base_idx()];
    Meta base_meta = MetaFromProto(metadata_->original_outputs(out.base_idx()));
    if (base.meta() == base_meta) {
      std::optional<Tensor> v =
          ViewIfFits(base, MetaFromProto(metadata_->original_outputs(j)));
      if (v.has_value()) result.outputs[j] = *v;
    }
  }
  return result;
}

absl::StatusOr<CompiledFunction::Gradients> CompiledFunction::Backward(
    const std::vector<Tensor>& saved,
    const std::vector<Tensor>& tangents) const {
  if (backward_ == nullptr) {
    return absl::FailedPreconditionError("no backward artifact attached");
  }
  const v1::ViewAndMutationData& vmd = metadata_->view_and_mutation();
  if (static_cast<int>(tangents.size()) != vmd.tangents_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", vmd.tangents_size(), " tangents, got ", tangents.size()));
  }
  std::vector<Tensor> args = saved;
  for (int t = 0; t < vmd.tangents_size(); ++t) {
    // Any layout in (stride-0 expanded ones included): coerce.
    Meta traced = MetaFromProto(vmd.tangents(t).meta());
    if (tangents[t].shape() != traced.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("tangent ", t, " has the wrong shape"));
    }
    if (tangents[t].meta() == traced) {
      args.push_back(tangents[t]);  // Already laid out as traced.
      continue;
    }
    Tensor coerced = Tensor::Zeros(traced);
    CopyInto(tangents[t], coerced);
    args.push_back(coerced);
  }
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<Tensor> grads, backward_->Run(args));
  auto pick = [&](const google::protobuf::RepeatedField<int32_t>& indices) {
    std::vector<std::optional<Tensor>> out;
    for (int index : indices) {
      out.push_back(index < 0 ? std::nullopt
                              : std::optional<Tensor>(grads[index]));
    }
    return out;
  };
  Gradients out;
  out.inputs = pick(backward_convention_.input_grad_output());
  out.synthetic_bases = pick(backward_convention_.synthetic_base_grad_output());
  return out;
}

}  // namespace aotcache
