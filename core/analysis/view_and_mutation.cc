#include "core/analysis/view_and_mutation.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/analysis/autograd_replay.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

v1::InputAliasInfo InputInfo(const ResolvedGraph& graph, const Replay& replay,
                             int i, const v1::CompileOptions& options) {
  const TensorObject& obj = replay.objects[replay.input_object[i]];
  const StorageState& storage = replay.storages[obj.storage];
  v1::InputAliasInfo info;
  info.set_mutates_data(storage.data_mutated);
  info.set_mutates_metadata(obj.metadata_mutated);
  info.set_mutations_under_no_grad_or_inference_mode(
      storage.data_mutated && !storage.mutated_with_grad_enabled);
  // No supported op hides its mutations from autograd (PyTorch sets this
  // only for opaque user kernels).
  info.set_mutations_hidden_from_autograd(false);
  info.set_requires_grad(replay.RequiresGrad(replay.input_object[i]));
  info.set_is_leaf(graph.graph->inputs(i).meta().is_leaf());
  info.set_keep_input_mutations(options.keep_input_mutations());
  return info;
}

// PyTorch's collect_metadata_analysis output classification.
class OutputClassifier {
 public:
  OutputClassifier(const ResolvedGraph& graph, const Replay& replay)
      : graph_(graph), replay_(replay) {
    for (size_t j = 0; j < graph.outputs.size(); ++j) {
      int obj = ObjectOf(j);
      // Later duplicates win, as with PyTorch's dict of id(out) -> index.
      output_index_of_object_[obj] = static_cast<int>(j);
    }
  }

  void Classify(v1::ViewAndMutationData* vmd) {
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      *vmd->add_outputs() = ClassifyOne(static_cast<int>(j), vmd);
    }
    vmd->set_num_intermediate_bases(vmd->intermediate_bases_size());
  }

 private:
  int ObjectOf(size_t j) const {
    return replay_.value_object[graph_.outputs[j]];
  }

  v1::OutputAliasInfo ClassifyOne(int j, v1::ViewAndMutationData* vmd) {
    int obj_id = ObjectOf(j);
    const TensorObject& obj = replay_.objects[obj_id];
    v1::OutputAliasInfo info;
    info.set_requires_grad(replay_.RequiresGrad(obj_id));
    info.set_created_in_no_grad(obj.view_base >= 0 &&
                                obj.view_created_in_no_grad &&
                                info.requires_grad());
    info.set_multi_output_view(obj.multi_output_view);
    if (replay_.storages[obj.storage].is_input) {
      if (obj.input >= 0) {
        info.set_output_type(v1::OUTPUT_TYPE_IS_INPUT);
        info.set_base_idx(obj.input);
      } else {
        info.set_output_type(v1::OUTPUT_TYPE_ALIAS_OF_INPUT);
        info.set_base_idx(obj.origin_input);
      }
      return info;
    }
    if (obj.view_base >= 0 && info.requires_grad() &&
        replay_.RequiresGrad(obj.view_base)) {
      int base = obj.view_base;
      if (auto out = output_index_of_object_.find(base);
          out != output_index_of_object_.end()) {
        info.set_output_type(
            v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT);
        info.set_base_idx(out->second);
      } else if (auto saved = intermediate_base_index_.find(base);
                 saved != intermediate_base_index_.end()) {
        info.set_output_type(v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE);
        info.set_base_idx(saved->second);
      } else {
        int index = vmd->intermediate_bases_size();
        intermediate_base_index_[base] = index;
        *vmd->add_intermediate_bases() =
            MetaToProto(replay_.objects[base].meta);
        info.set_output_type(
            v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT);
        info.set_base_idx(index);
      }
      return info;
    }
    // (out, out.detach()): regenerate the detached one from its twin
    // (pytorch/pytorch#100348).
    if (!info.requires_grad()) {
      for (size_t k = 0; k < graph_.outputs.size(); ++k) {
        int other = ObjectOf(k);
        if (other == obj_id) continue;
        const TensorObject& o = replay_.objects[other];
        if (o.storage == obj.storage && o.meta == obj.meta &&
            replay_.RequiresGrad(other)) {
          info.set_output_type(
              v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT);
          info.set_base_idx(output_index_of_object_[other]);
          return info;
        }
      }
    }
    info.set_output_type(v1::OUTPUT_TYPE_NON_ALIAS);
    return info;
  }

  const ResolvedGraph& graph_;
  const Replay& replay_;
  absl::flat_hash_map<int, int> output_index_of_object_;
  absl::flat_hash_map<int, int> intermediate_base_index_;
};

v1::TensorMeta TangentMeta(const Meta& meta) {
  return MetaToProto(ContiguousMeta(meta.shape, meta.dtype));
}

void AddTangents(const ResolvedGraph& graph, const Replay& replay,
                 v1::ViewAndMutationData* vmd) {
  for (int i = 0; i < vmd->inputs_size(); ++i) {
    const v1::InputAliasInfo& in = vmd->inputs(i);
    if (in.mutates_data() && in.requires_grad() && !MutationStaysInGraph(in)) {
      v1::TangentInfo* t = vmd->add_tangents();
      t->set_source(v1::TANGENT_SOURCE_MUTATED_INPUT);
      t->set_index(i);
      *t->mutable_meta() =
          TangentMeta(replay.objects[replay.input_object[i]].meta);
    }
  }
  for (int j = 0; j < vmd->outputs_size(); ++j) {
    const v1::OutputAliasInfo& out = vmd->outputs(j);
    bool gets_tangent =
        out.output_type() == v1::OUTPUT_TYPE_NON_ALIAS ||
        out.output_type() == v1::OUTPUT_TYPE_UNSAFE_VIEW_ALIAS ||
        out.output_type() == v1::OUTPUT_TYPE_CUSTOM_FUNCTION_VIEW;
    if (gets_tangent && out.requires_grad()) {
      v1::TangentInfo* t = vmd->add_tangents();
      t->set_source(v1::TANGENT_SOURCE_USER_OUTPUT);
      t->set_index(j);
      *t->mutable_meta() = TangentMeta(graph.values[graph.outputs[j]].meta);
    }
  }
  for (int k = 0; k < vmd->intermediate_bases_size(); ++k) {
    v1::TangentInfo* t = vmd->add_tangents();
    t->set_source(v1::TANGENT_SOURCE_INTERMEDIATE_BASE);
    t->set_index(k);
    *t->mutable_meta() = TangentMeta(MetaFromProto(vmd->intermediate_bases(k)));
  }
}

// One synthetic base per storage shared by several inputs, one of which
// mutates data. Its members' mutations leave the graph, even with
// keep_input_mutations.
void AddSyntheticBases(const ResolvedGraph& graph,
                       v1::ViewAndMutationData* vmd) {
  std::vector<std::vector<int>> members(graph.storage_size.size());
  for (int i = 0; i < graph.num_inputs(); ++i) {
    members[graph.input_storage[i]].push_back(i);
  }
  for (size_t s = 0; s < members.size(); ++s) {
    if (members[s].size() < 2) continue;
    if (!vmd->inputs(members[s][0]).mutates_data()) continue;
    v1::SyntheticBase* base = vmd->add_synthetic_bases();
    base->set_storage(static_cast<int>(s));
    base->set_size(graph.storage_size[s]);
    base->set_dtype(graph.values[members[s][0]].meta.dtype);
    for (int i : members[s]) {
      base->add_inputs(i);
      // A member is no input of the functional graph (its base is), so its
      // mutations cannot be copied back in the graph: the epilogue writes
      // them through the base.
      vmd->mutable_inputs(i)->set_keep_input_mutations(false);
    }
  }
}

}  // namespace

bool MutationStaysInGraph(const v1::InputAliasInfo& in) {
  if (!in.keep_input_mutations() || !in.mutates_data()) return false;
  return (!in.mutates_metadata() && !in.requires_grad()) ||
         in.mutations_hidden_from_autograd() ||
         in.mutations_under_no_grad_or_inference_mode();
}

absl::StatusOr<v1::ViewAndMutationData> AnalyzeViewsAndMutations(
    const ResolvedGraph& graph, const Replay& replay,
    const v1::CompileOptions& options) {
  v1::ViewAndMutationData vmd;
  for (int i = 0; i < graph.num_inputs(); ++i) {
    *vmd.add_inputs() = InputInfo(graph, replay, i, options);
  }
  OutputClassifier(graph, replay).Classify(&vmd);
  AddSyntheticBases(graph, &vmd);
  AddTangents(graph, replay, &vmd);
  return vmd;
}

}  // namespace aotcache
