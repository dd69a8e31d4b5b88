#include "core/backend/compile_plan.h"

#include "core/analysis/view_and_mutation.h"
#include "core/autodiff/joint_graph.h"
#include "core/graph/canonical_graph.h"
#include "core/status_macros.h"

namespace aotcache {

absl::StatusOr<CompilePlan> PlanCompilation(const Analysis& a) {
  CompilePlan plan;
  const v1::ViewAndMutationData& vmd = a.view_and_mutation;
  v1::CallingConvention roles;
  for (const v1::InputAliasInfo& in : vmd.inputs()) {
    if ((in.mutates_data() || in.mutates_metadata()) &&
        !MutationStaysInGraph(in)) {
      roles.set_num_mutated_inputs(roles.num_mutated_inputs() + 1);
    }
  }
  roles.set_num_user_outputs(vmd.outputs_size());
  roles.set_num_intermediate_bases(vmd.num_intermediate_bases());
  *plan.metadata.mutable_view_and_mutation() = vmd;
  for (int v : a.graph.outputs) {
    *plan.metadata.add_original_outputs() = MetaToProto(a.graph.values[v].meta);
  }
  *plan.metadata.mutable_original_intermediate_bases() =
      vmd.intermediate_bases();
  for (int obj : a.replay.input_object) {
    *plan.metadata.add_inputs_after() = MetaToProto(a.replay.objects[obj].meta);
  }
  if (a.mode == v1::MODE_TRAINING) {
    AOTCACHE_ASSIGN_OR_RETURN(JointGraphs joint, BuildJointGraphs(a));
    AOTCACHE_ASSIGN_OR_RETURN(plan.forward_graph,
                              CanonicalInternalGraph(joint.forward));
    plan.forward_spec.kind = v1::ARTIFACT_KIND_FORWARD;
    roles.set_num_saved(joint.num_saved);
    plan.forward_spec.convention = roles;
    AOTCACHE_ASSIGN_OR_RETURN(plan.backward_graph,
                              CanonicalInternalGraph(joint.backward));
    plan.backward_spec.kind = v1::ARTIFACT_KIND_BACKWARD;
    for (int i : joint.input_grad_output) {
      plan.backward_spec.convention.add_input_grad_output(i);
    }
    for (int i : joint.synthetic_base_grad_output) {
      plan.backward_spec.convention.add_synthetic_base_grad_output(i);
    }
  } else {
    AOTCACHE_ASSIGN_OR_RETURN(v1::Graph functional, FunctionalGraph(a));
    AOTCACHE_ASSIGN_OR_RETURN(plan.forward_graph,
                              CanonicalInternalGraph(functional));
    plan.forward_spec.kind = v1::ARTIFACT_KIND_INFERENCE;
    plan.forward_spec.convention = roles;
  }
  return plan;
}

absl::StatusOr<v1::Artifact> CompileForward(const CompilePlan& plan,
                                            const Backend& backend,
                                            const v1::Target& target) {
  ArtifactSpec spec = plan.forward_spec;
  spec.target = target;
  return backend.Compile(plan.forward_graph, spec);
}

absl::StatusOr<v1::Artifact> CompileBackward(const CompilePlan& plan,
                                             const v1::Artifact& forward,
                                             const Backend& backend,
                                             const v1::Target& target) {
  if (!plan.backward_graph.has_value()) {
    return absl::FailedPreconditionError(
        "an inference-mode function has no backward");
  }
  return CompileBackwardGraph(*plan.backward_graph,
                              plan.backward_spec.convention, forward, backend,
                              target);
}

absl::StatusOr<v1::Artifact> CompileBackwardGraph(
    const v1::Graph& backward_graph, const v1::CallingConvention& roles,
    const v1::Artifact& forward, const Backend& backend,
    const v1::Target& target) {
  ArtifactSpec spec;
  spec.kind = v1::ARTIFACT_KIND_BACKWARD;
  spec.convention = roles;
  spec.pairs_with = forward.calling_convention_hash();
  spec.target = target;
  return backend.Compile(backward_graph, spec);
}

}  // namespace aotcache
