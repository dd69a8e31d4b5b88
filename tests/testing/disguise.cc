#include "tests/testing/disguise.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/graph/tensor_meta.h"

namespace aotcache::testing {

std::string Hostile(int i) {
  return absl::StrCat(
      "x", i,
      "\n#include \"/etc/passwd\"\n__attribute__((constructor)) "
      "static void ",
      kHostileMarker, i, "() {}\n//");
}

v1::Graph Disguised(const v1::Graph& g) {
  v1::Graph out = g;
  absl::flat_hash_map<std::string, std::string> renamed;
  int next = 0;
  auto rename = [&](std::string* name) {
    auto [it, inserted] = renamed.emplace(*name, Hostile(next));
    if (inserted) ++next;
    *name = it->second;
  };
  absl::flat_hash_map<int, int> storage_id;
  for (v1::Storage& s : *out.mutable_storages()) {
    storage_id[s.id()] = 1000 - s.id();
    s.set_id(1000 - s.id());
  }
  for (v1::Input& in : *out.mutable_inputs()) {
    rename(in.mutable_name());
    Meta meta = MetaFromProto(in.meta());
    in.mutable_meta()->clear_stride();
    for (int64_t s : meta.stride) in.mutable_meta()->add_stride(s);
    in.mutable_meta()->set_device("cpu");
    if (in.has_storage()) {
      in.set_storage(storage_id[in.storage()]);
    } else {
      v1::Storage* own = out.add_storages();
      own->set_id(2000 + next);
      own->set_size(meta.StorageExtent());
      in.set_storage(own->id());
    }
  }
  for (v1::Constant& c : *out.mutable_constants()) rename(c.mutable_name());
  auto rename_arg = [&](v1::Argument& a) {
    if (a.has_node()) rename(a.mutable_node());
    if (a.has_nodes()) {
      for (std::string& n : *a.mutable_nodes()->mutable_names()) rename(&n);
    }
  };
  for (v1::Node& node : *out.mutable_nodes()) {
    rename(node.mutable_name());
    // Declared metas stay: a fresh result's layout is key material.
    for (v1::TensorMeta& m : *node.mutable_output_meta()) m.set_device("cpu");
    for (v1::Argument& a : *node.mutable_args()) rename_arg(a);
    for (auto& [key, a] : *node.mutable_kwargs()) rename_arg(a);
  }
  for (std::string& o : *out.mutable_outputs()) rename(&o);
  return out;
}

}  // namespace aotcache::testing
