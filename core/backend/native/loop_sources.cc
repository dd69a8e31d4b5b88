#include "core/backend/native/loop_sources.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"
#include "core/backend/native/own_kernels.h"

namespace aotcache {
namespace {

// The loops of a strided group over an output of `shape` (at least 1-D):
// one loop per outer dim (i0, i1, ...), then the vectorized innermost one
// (c), with i the output's linear index.
std::string StridedLoopNest(const std::vector<int64_t>& shape,
                            const std::string& row_offsets,
                            const std::string& body, const std::string& value) {
  const size_t outer = shape.size() - 1;
  std::string out = "  (void)n;\n";
  std::string base = "0";
  for (size_t d = 0; d < outer; ++d) {
    absl::StrAppend(&out, "  for (int64_t i", d, " = 0; i", d, " < ", shape[d],
                    "; ++i", d, ") {\n");
    base = d == 0 ? "i0" : absl::StrCat("(", base, ") * ", shape[d], " + i", d);
  }
  absl::StrAppend(
      &out, "    const int64_t base = ",
      outer == 0 ? "0" : absl::StrCat("(", base, ") * ", shape.back()), ";\n",
      row_offsets, "#pragma omp simd\n", "    for (int64_t c = 0; c < ",
      shape.back(), "; ++c) {\n", "    const int64_t i = base + c;\n", body,
      "    out[i] = ", value, ";\n    }\n");
  for (size_t d = 0; d < outer; ++d) out += "  }\n";
  return out;
}

// The dims of a dense `m`, outermost in memory first (those of size 1, which
// any order fits, first of all).
std::vector<int> MemoryOrder(const Meta& m) {
  std::vector<int> order(m.dim());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int d) {
    return m.shape[d] == 1 ? std::numeric_limits<int64_t>::max() : m.stride[d];
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return key(a) > key(b); });
  return order;
}

// `node`'s value for element i, as `const T t<value> = e<k>(...);`, reading
// its operands through `names` and adding its own.
void EmitNode(const ResolvedGraph& g, const ResolvedNode& node,
              std::map<int, std::string>& names, ElementFunctions& functions,
              std::string& out) {
  const Formula& f = *FormulaOf(node);
  const char* r = CppTypeName(g.values[node.results[0]].meta.dtype);
  // Each operand converted as the runtime's kernel loads it.
  std::vector<std::string> types(3, r);
  if (f.operands == Formula::Operands::kAsDouble) {
    types = {"double", "double", "double"};
  } else if (f.operands == Formula::Operands::kWhere) {
    types[0] = "bool";
  }
  std::vector<std::string> operands;
  for (int k = 0; k < f.arity; ++k) {
    const BoundArg& a = node.args[k];
    // A number is converted as the kernel loads it.
    std::string v =
        a.is_number() ? CppLiteral(a.AsDouble()) : names[a.values[0]];
    operands.push_back(absl::StrCat("static_cast<", types[k], ">(", v, ")"));
  }
  std::string alpha = node.args.size() > 2 && node.args[2].is_number() &&
                              f.operands == Formula::Operands::kAsResult
                          ? CppLiteral(node.args[2].AsDouble())
                          : "1.0";
  const bool where = f.operands == Formula::Operands::kWhere;
  std::string params =
      where ? absl::StrCat("bool c, ", r, " a, ", r, " b")
            : absl::StrCat(types[0], " a, ", types[1], " b, double alpha");
  std::string b = f.arity > 1 ? operands[1] : std::string("0");
  if (f.value_arg >= 0) b = CppLiteral(node.args[f.value_arg].AsDouble());
  std::string args =
      where ? absl::StrJoin(operands, ", ")
            : absl::StrCat(f.arity > 0 ? operands[0] : std::string("0"), ", ",
                           b, ", ", alpha);
  std::string t = absl::StrCat("t", node.results[0]);
  names[node.results[0]] = t;
  const std::string& function =
      functions.Name(f.op, r,
                     absl::StrCat("(", params, ") { using C = ", r, "; ",
                                  where ? "" : "(void)b; (void)alpha; ",
                                  "return ", f.expr, "; }"));
  absl::StrAppend(&out, "    const ", r, " ", t, " = ", function, "(", args,
                  ");\n");
}

// The list of nodes the runtime's kernels run, its first 100 named.
std::string RuntimeNodes(std::vector<std::string> nodes) {
  constexpr size_t kNamed = 100;
  if (nodes.size() <= kNamed) return absl::StrJoin(nodes, ", ");
  const size_t more = nodes.size() - kNamed;
  nodes.resize(kNamed);
  return absl::StrCat(absl::StrJoin(nodes, ", "), " and ", more, " more");
}

// The gradient a batch norm backward's group computes with the loop it
// absorbed (FusedGroup::gradient_inputs): the loop's operands read at i, or
// at their one element, its nodes evaluated in `grad_at(i)`.
GradientPrologue GradientOf(const ResolvedGraph& g, const FusedGroup& group,
                            ElementFunctions& functions) {
  const int grad = g.nodes[group.nodes.back()].args[0].values[0];
  const int64_t numel = g.values[grad].meta.numel();
  GradientPrologue out;
  out.inputs = group.gradient_inputs;
  std::map<int, std::string> names;
  for (int k = 0; k < group.gradient_inputs; ++k) {
    const Meta& m = g.values[group.inputs[k]].meta;
    const bool scalar =
        ScalarLike(m) && !(m.IsContiguous() && m.numel() == numel);
    names[group.inputs[k]] = absl::StrCat("gin", k, scalar ? "[0]" : "[i]");
    const char* t = CppTypeName(m.dtype);
    absl::StrAppend(&out.source, "  const ", t, "* __restrict gin", k,
                    " = static_cast<const ", t, "*>(inputs[", k, "]);\n");
  }
  std::string body;
  for (size_t n = 0; n + 1 < group.nodes.size(); ++n) {
    EmitNode(g, g.nodes[group.nodes[n]], names, functions, body);
  }
  absl::StrAppend(&out.source, "  auto grad_at = [&](int64_t i) {\n", body,
                  "    return static_cast<C>(", names[grad], ");\n  };\n");
  return out;
}

}  // namespace

std::string GenerateKernels(const ResolvedGraph& g,
                            const std::vector<FusedGroup>& groups) {
  // Nodes are named by their index, never by the graph's names: nothing of
  // a request reaches the source (backend.h).
  auto name = [](size_t n) { return absl::StrCat("node ", n); };
  // Nodes that compute data outside the kernels (views cost nothing): what
  // the runtime's own kernels run, named for the reader.
  std::vector<bool> in_kernel(g.nodes.size(), false);
  for (const FusedGroup& group : groups) {
    for (int n : group.nodes) in_kernel[n] = true;
  }
  std::vector<bool> read(g.values.size(), false);
  for (int v : g.outputs) read[v] = true;
  for (const ResolvedNode& node : g.nodes) {
    for (const BoundArg& a : node.args) {
      for (int v : a.values) read[v] = true;
    }
  }
  std::vector<std::string> rest;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const OpInfo& op = *g.nodes[n].op;
    if (in_kernel[n] || op.effect == OpEffect::kView ||
        op.effect == OpEffect::kDetach || op.effect == OpEffect::kUnsafeView) {
      continue;
    }
    rest.push_back(absl::StrCat(name(n), " (", op.qualified_name, ")"));
  }
  const std::string header = absl::StrCat(
      "// Generated by aotcache's native backend: one loop per group of\n"
      "// elementwise nodes.\n// Run by the runtime's kernels: ",
      rest.empty() ? "none" : RuntimeNodes(rest), "\n#include <cstdint>\n\n",
      KernelPreamble());
  ElementFunctions functions;
  std::string out;  // The kernels.
  for (size_t i = 0; i < groups.size(); ++i) {
    const FusedGroup& group = groups[i];
    std::vector<std::string> node_names;
    for (int n : group.nodes) node_names.push_back(name(n));
    absl::StrAppend(&out, "// ", absl::StrJoin(node_names, ", "), "\n");
    const int output = group.outputs[0];
    const char* c = CppTypeName(g.values[output].meta.dtype);
    absl::StrAppend(&out, "extern \"C\" void aotcache_kernel_", i,
                    "(const void* const* inputs, void* const* outputs, "
                    "int64_t n) {\n",
                    "  using C = ", c, ";\n");
    // A node with a kernel of its own kind; a batch norm backward's
    // gradient from the loop it absorbed, as a function of the index.
    GradientPrologue gradient;
    if (group.gradient_inputs > 0) {
      gradient = GradientOf(g, group, functions);
    }
    const std::string own = OwnKernelSource(
        g, group, read, group.gradient_inputs > 0 ? &gradient : nullptr);
    if (!own.empty()) {
      absl::StrAppend(&out, own, "}\n\n");
      continue;
    }
    std::optional<Reduction> reduction;
    if (group.reduction)
      reduction = ReductionOf(g, g.nodes[group.nodes.back()]);
    // The elements the loop runs over: the output's, or the reduced input's.
    const int64_t loop_numel = reduction.has_value()
                                   ? g.values[reduction->input].meta.numel()
                                   : g.values[output].meta.numel();
    std::map<int, std::string> names;
    // A strided group's loop nest runs over the output's dims in the order
    // of its memory (it may be laid out as eager lays out a transposed
    // operand's result), so that i is the output's memory index.
    const Meta& out_meta = g.values[output].meta;
    const std::vector<int> order = MemoryOrder(out_meta);
    std::vector<int64_t> shape;
    for (int d : order) shape.push_back(out_meta.shape[d]);
    // For a strided group: each strided operand's offset at the start of a
    // row of the loop nest (indices i0, i1, ... of the outer dims).
    std::string row_offsets;
    for (size_t k = 0; k < group.inputs.size(); ++k) {
      // Scalar-like operands are read at their one element (an expanded
      // scalar has the loop's size but one element of memory).
      const Meta& m = g.values[group.inputs[k]].meta;
      const bool scalar =
          ScalarLike(m) && !(m.IsContiguous() && m.numel() == loop_numel);
      names[group.inputs[k]] = absl::StrCat("in", k, scalar ? "[0]" : "[i]");
      if (group.strided && !scalar && !Aligned(m, g.values[output].meta)) {
        const std::vector<int64_t> over = StridesOver(m, out_meta.shape);
        std::vector<int64_t> strides;
        for (int d : order) strides.push_back(over[d]);
        std::vector<std::string> terms = {"0"};
        for (size_t d = 0; d + 1 < shape.size(); ++d) {
          if (strides[d] != 0)
            terms.push_back(absl::StrCat("i", d, " * ", strides[d]));
        }
        absl::StrAppend(&row_offsets, "    const int64_t o", k, " = ",
                        absl::StrJoin(terms, " + "), ";\n");
        names[group.inputs[k]] =
            absl::StrCat("in", k, "[o", k, " + c * ", strides.back(), "]");
      }
      const char* t = CppTypeName(g.values[group.inputs[k]].meta.dtype);
      absl::StrAppend(&out, "  const ", t, "* __restrict in", k,
                      " = static_cast<const ", t, "*>(inputs[", k, "]);\n");
    }
    absl::StrAppend(&out,
                    "  C* __restrict out = static_cast<C*>(outputs[0]);\n");
    std::string body;  // The element computations, for index i.
    for (int n : group.nodes) {
      if (reduction.has_value() && n == group.nodes.back()) break;
      EmitNode(g, g.nodes[n], names, functions, body);
    }
    if (group.strided) {
      absl::StrAppend(&out,
                      StridedLoopNest(shape, row_offsets, body, names[output]),
                      "}\n\n");
      continue;
    }
    if (!reduction.has_value()) {
      absl::StrAppend(&out,
                      "#pragma omp simd\n  for (int64_t i = 0; i < n; ++i) {\n",
                      body, "    out[i] = ", names[output], ";\n  }\n}\n\n");
      continue;
    }
    const Reduction& r = *reduction;
    const std::string value =
        absl::StrCat("static_cast<double>(", names[r.input], ")");
    const std::string scale =
        r.mean ? absl::StrCat(" / static_cast<double>(", r.pre * r.reduced, ")")
               : "";
    // How a value joins its accumulator (a sum vectorizes; a max, whose
    // NaN must win, stays in order).
    auto accumulate = [&](const std::string& acc) {
      return r.max ? absl::StrCat("    { const double v = ", value, "; ", acc,
                                  " = (v != v || ", acc, " != ", acc,
                                  ") ? __builtin_nan(\"\") : (v > ", acc,
                                  " ? v : ", acc, "); }\n")
                   : absl::StrCat("    ", acc, " += ", value, ";\n");
    };
    const char* init = r.max ? "-__builtin_inf()" : "0";
    // A leading reduced block, when there are two: one more loop, and the
    // row index `po` in place of `o`.
    const std::string pre_loop =
        r.pre > 1
            ? absl::StrCat("    for (int64_t p = 0; p < ", r.pre, "; ++p) {\n")
            : "";
    const std::string pre_end = r.pre > 1 ? "    }\n" : "";
    const std::string row =
        r.pre > 1 ? absl::StrCat("(p * ", r.outer, " + o)") : "o";
    if (r.inner == 1) {  // Each output element sums contiguous runs.
      absl::StrAppend(&out, "  (void)n;\n  for (int64_t o = 0; o < ", r.outer,
                      "; ++o) {\n", "    double acc = ", init, ";\n", pre_loop,
                      r.max ? "" : "#pragma omp simd reduction(+ : acc)\n",
                      "    for (int64_t c = 0; c < ", r.reduced, "; ++c) {\n",
                      "    const int64_t i = ", row, " * ", r.reduced,
                      " + c;\n", body, accumulate("acc"), "    }\n", pre_end,
                      "    out[o] = static_cast<C>(acc", scale,
                      ");\n  }\n}\n\n");
    } else {  // Rows of `inner` accumulated, vectorized across the row.
      absl::StrAppend(
          &out, "  (void)n;\n  double* acc = new double[", r.inner, "];\n",
          "  for (int64_t o = 0; o < ", r.outer, "; ++o) {\n",
          "    for (int64_t c = 0; c < ", r.inner, "; ++c) acc[c] = ", init,
          ";\n", pre_loop, "    for (int64_t r = 0; r < ", r.reduced,
          "; ++r) {\n", "#pragma omp simd\n    for (int64_t c = 0; c < ",
          r.inner, "; ++c) {\n", "    const int64_t i = (", row, " * ",
          r.reduced, " + r) * ", r.inner, " + c;\n", body, accumulate("acc[c]"),
          "    }\n    }\n", pre_end, "    for (int64_t c = 0; c < ", r.inner,
          "; ++c) out[o * ", r.inner, " + c] = static_cast<C>(acc[c]", scale,
          ");\n  }\n", "  delete[] acc;\n}\n\n");
    }
  }
  return absl::StrCat(header, functions.source(), "\n", out);
}

}  // namespace aotcache
