#include "core/backend/native/staged_operands.h"

#include "absl/strings/str_cat.h"
#include "core/graph/elementwise_layout.h"

namespace aotcache {
namespace {

constexpr int kMaxStagedInputs = 6, kMaxStagedResults = 3;
constexpr int kFirstInputSlot = 2, kFirstResultSlot = 8;

// Loops over a staged tensor's elements in row-major order: `body` with
// `k` (the row-major index) and `at` (the element's place in memory).
std::string StridedLoops(const StagedTensor& t, const std::string& body) {
  std::string out = "    int64_t k = 0;\n";
  std::string at = "0";
  for (size_t d = 0; d < t.shape.size(); ++d) {
    absl::StrAppend(&out, "    for (int64_t i", d, " = 0; i", d, " < ",
                    t.shape[d], "; ++i", d, ")\n");
    absl::StrAppend(&at, " + i", d, " * ", t.stride[d]);
  }
  return absl::StrCat(out, "    { const int64_t at = ", at, "; ", body,
                      " ++k; }\n");
}

}  // namespace

bool StageIfStrided(const Meta& m, bool result, int index,
                    std::vector<StagedTensor>* staged) {
  if (m.IsContiguous()) return true;
  if (index >= (result ? kMaxStagedResults : kMaxStagedInputs)) return false;
  if (result && !NonOverlappingAndDense(m)) return false;
  for (int64_t st : m.stride) {
    if (st < 0) return false;
  }
  staged->push_back(StagedTensor{result, index, m.shape, m.stride});
  return true;
}

std::string StagedSource(int inputs, int results,
                         const std::vector<StagedTensor>& staged,
                         const std::string& body) {
  if (staged.empty()) return body;
  std::string in_list, out_list;
  for (int i = 0; i < inputs; ++i) {
    absl::StrAppend(&in_list, i ? ", " : "", "inputs[", i, "]");
  }
  for (int r = 0; r < results; ++r) {
    absl::StrAppend(&out_list, r ? ", " : "", "outputs[", r, "]");
  }
  std::string out =
      absl::StrCat("  const void* staged_inputs[] = {", in_list,
                   "};\n  void* staged_outputs[] = {", out_list, "};\n");
  std::string copy_out;
  for (const StagedTensor& t : staged) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const int slot = (t.result ? kFirstResultSlot : kFirstInputSlot) + t.index;
    const std::string scratch =
        absl::StrCat("static_cast<C*>(aotcache_scratch(", slot, ", ", numel,
                     " * sizeof(C)))");
    if (t.result) {
      absl::StrAppend(&out, "  staged_outputs[", t.index, "] = ", scratch,
                      ";\n");
      absl::StrAppend(&copy_out, "  {\n    C* to = static_cast<C*>(outputs[",
                      t.index, "]);\n    const C* from = static_cast<C*>(",
                      "staged_outputs[", t.index, "]);\n",
                      StridedLoops(t, "to[at] = from[k];"), "  }\n");
    } else {
      absl::StrAppend(&out, "  {\n    C* to = ", scratch,
                      ";\n    const C* from = static_cast<const C*>(inputs[",
                      t.index, "]);\n", StridedLoops(t, "to[k] = from[at];"),
                      "    staged_inputs[", t.index, "] = to;\n  }\n");
    }
  }
  return absl::StrCat(
      out, "  {\n  const void* const* inputs = staged_inputs;\n",
      "  void* const* outputs = staged_outputs;\n", body, "  }\n", copy_out);
}

}  // namespace aotcache
