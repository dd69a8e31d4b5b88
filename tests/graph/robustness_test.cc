// Bad input never crashes, hangs or yields Internal: thousands of seeded
// random corruptions of the traced fixture graphs go through validation,
// analysis, functionalization and the key, and each ends in OK,
// InvalidArgument or ResourceExhausted. CI runs 40 corruptions per graph;
// AOTCACHE_ROBUSTNESS_TRIALS=2000 makes it a soak run (with sanitizers:
// see the README).
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/graph/graph_json.h"
#include "core/key/cache_key.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace aotcache {
namespace {

class Corrupter {
 public:
  explicit Corrupter(uint32_t seed) : rng_(seed) {}

  void Corrupt(v1::Graph& g) {
    std::vector<std::string> names;
    for (const auto& in : g.inputs()) names.push_back(in.name());
    for (const auto& n : g.nodes()) names.push_back(n.name());
    names.push_back("undefined_name");
    switch (Pick(9)) {
      case 0:
      case 1:
      case 2:
        if (g.nodes_size() > 0)
          CorruptArg(*g.mutable_nodes(Pick(g.nodes_size())), names);
        break;
      case 3:
        if (g.nodes_size() > 0) {
          const auto& ops = OpRegistry::Get().ops();
          g.mutable_nodes(Pick(g.nodes_size()))
              ->set_op(ops[Pick(ops.size())].qualified_name);
        }
        break;
      case 4:
        if (g.inputs_size() > 0)
          CorruptMeta(*g.mutable_inputs(Pick(g.inputs_size()))->mutable_meta());
        break;
      case 5:
        if (g.nodes_size() > 0) {
          g.mutable_nodes(Pick(g.nodes_size()))
              ->set_grad_mode(static_cast<v1::GradMode>(Pick(3)));
        }
        break;
      case 6:
        if (g.outputs_size() > 0)
          g.set_outputs(Pick(g.outputs_size()), names[Pick(names.size())]);
        break;
      case 7:
        if (g.nodes_size() > 1) {
          g.mutable_nodes()->SwapElements(Pick(g.nodes_size()),
                                          Pick(g.nodes_size()));
        }
        break;
      case 8:
        if (g.inputs_size() > 0) {
          v1::Input* in = g.mutable_inputs(Pick(g.inputs_size()));
          if (g.storages_size() > 0) {
            in->set_storage(g.storages(Pick(g.storages_size())).id());
          } else {
            in->set_storage(static_cast<int>(Pick(3)));
          }
        }
        break;
    }
  }

 private:
  size_t Pick(size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  int64_t SmallInt() { return static_cast<int64_t>(Pick(14)) - 4; }

  void CorruptArg(v1::Node& node, const std::vector<std::string>& names) {
    if (node.args_size() == 0 || Pick(8) == 0) {
      node.add_args()->set_int_(SmallInt());
      return;
    }
    v1::Argument* a = node.mutable_args(Pick(node.args_size()));
    switch (Pick(8)) {
      case 0:
        a->set_int_(SmallInt());
        break;
      case 1:
        a->set_node(names[Pick(names.size())]);
        break;
      case 2:
        a->set_none(true);
        break;
      case 3:
        a->set_float_(std::nan(""));
        break;
      case 4: {
        a->mutable_ints()->clear_values();
        size_t n = Pick(5);
        for (size_t i = 0; i < n; ++i)
          a->mutable_ints()->add_values(SmallInt());
        break;
      }
      case 5:
        a->set_bool_(true);
        break;
      case 6:
        a->set_dtype(static_cast<v1::DType>(Pick(6)));
        break;
      case 7:
        node.mutable_args()->RemoveLast();
        break;
    }
  }

  void CorruptMeta(v1::TensorMeta& m) {
    switch (Pick(6)) {
      case 0:
        if (m.shape_size() > 0) m.set_shape(Pick(m.shape_size()), SmallInt());
        break;
      case 1:
        if (m.stride_size() > 0)
          m.set_stride(Pick(m.stride_size()), SmallInt());
        break;
      case 2:
        m.set_storage_offset(SmallInt());
        break;
      case 3:
        m.set_requires_grad(!m.requires_grad());
        break;
      case 4:
        m.set_is_leaf(!m.is_leaf());
        break;
      case 5:
        m.add_shape(SmallInt());
        break;
    }
  }

  std::mt19937 rng_;
};

uint32_t Trials() {
  const char* env = std::getenv("AOTCACHE_ROBUSTNESS_TRIALS");
  return env != nullptr ? static_cast<uint32_t>(std::atoi(env)) : 40;
}

TEST(RobustnessTest, CorruptedGraphsNeverCrashOrFailInternally) {
  std::vector<std::string> files = testing::FixtureGraphFiles();
  ASSERT_FALSE(files.empty());
  KeyContext context{"test", {}, "reference", "1"};
  int refused = 0, accepted = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const v1::Graph original = testing::LoadGraphOrDie("graphs/" + files[f]);
    for (uint32_t trial = 0; trial < Trials(); ++trial) {
      v1::Graph g = original;
      Corrupter corrupter(static_cast<uint32_t>(f * 1000 + trial));
      int rounds = 1 + static_cast<int>(trial % 3);
      for (int r = 0; r < rounds; ++r) corrupter.Corrupt(g);
      absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
      if (!a.ok()) {
        ++refused;
        EXPECT_TRUE(a.status().code() == absl::StatusCode::kInvalidArgument ||
                    a.status().code() == absl::StatusCode::kResourceExhausted)
            << files[f] << " trial " << trial << ": " << a.status();
        continue;
      }
      ++accepted;
      absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
      EXPECT_TRUE(functional.ok() || functional.status().code() ==
                                         absl::StatusCode::kInvalidArgument)
          << files[f] << " trial " << trial << ": " << functional.status();
      ComputeKey(a->graph, a->view_and_mutation, a->mode, v1::CompileOptions(),
                 context);
    }
  }
  // Both outcomes must be exercised for the test to mean anything.
  EXPECT_GT(refused, 100);
  EXPECT_GT(accepted, 100);
}

}  // namespace
}  // namespace aotcache
