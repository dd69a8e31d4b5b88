// Recognizers for the native backend (fusion.h): whether a node is one its
// kernels compute, and the shape of that kernel. Elementwise operands,
// reductions over leading or trailing dims, matrix products BLAS can read,
// and the layout helpers the other recognizers share
// (the *_kernels.h files of each op family). Each says no for another op or
// for layouts its kernel does not take; the runtime's own kernel runs such
// a node.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_PATTERNS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_PATTERNS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/backend/native/kernel_source.h"
#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// The formula of an elementwise node (gelu's per its `approximate`), or
// nullptr.
const Formula* FormulaOf(const ResolvedNode& node);

// An operand an elementwise loop reads at i, the output's linear index: of
// the output's shape, contiguous, from its storage's start.
bool Aligned(const Meta& m, const Meta& out);

// m's strides over `shape` (which m broadcasts to), 0 along broadcast dims.
std::vector<int64_t> StridesOver(const Meta& m,
                                 const std::vector<int64_t>& shape);

// Read or written by a generated kernel as it is: of `dtype`, contiguous,
// from its storage's start.
bool Plain(const Meta& m, DType dtype);

// Which dims of `in` the dims argument `dims` (None or [] for all)
// reduces; false for a dim out of range.
bool ReducedDims(const Meta& in, const BoundArg& dims,
                 std::vector<bool>* reduced);

// The reduced dims of `in` as at most two blocks, the first of them
// leading: the input is then [pre, outer, reduced, inner] in memory (each
// multiplied into the caller's value, 1 to start). False for another
// pattern.
bool Blocks(const Meta& in, const std::vector<bool>& reduced, int64_t* pre,
            int64_t* outer, int64_t* inner_reduced, int64_t* inner);

// An operand every element of which is its first: one element, or all
// strides zero (an expanded scalar, such as the gradient of a sum).
bool ScalarLike(const Meta& m);

// A sum, mean or amax over a contiguous floating tensor of consecutive
// dims, or of two blocks of them the first of which leads: the input is
// [pre, outer, reduced, inner] and out[o, c] = sum (or max) over p and r of
// in[p, o, r, c], accumulated in double as the runtime's kernel does (amax:
// from -inf, NaN if any element is NaN). pre is 1 unless the reduced dims
// are two blocks.
struct Reduction {
  bool mean = false;
  bool max = false;
  int64_t pre = 1, outer = 1, reduced = 1, inner = 1;
  int input = -1;  // Value id.
};
std::optional<Reduction> ReductionOf(const ResolvedGraph& g,
                                     const ResolvedNode& node);

// mm(a, b), addmm(bias, a, b, beta, alpha) or bmm(a, b) over floating
// matrices BLAS can read (for bmm, batches of them), into a contiguous
// result; bias [N] or [M, N], contiguous. Its call, for a node BlasMatmul
// takes.
bool BlasMatmul(const ResolvedGraph& g, const ResolvedNode& node);
GemmShape GemmOf(const ResolvedGraph& g, const ResolvedNode& node);

// The operands (value ids) of a matrix product or a reduction that its
// kernel above takes once they are copied into contiguous memory: a matrix
// BLAS cannot read (the expanded, stride-0 gradient of a sum), the strided
// input of a sum. Empty when the kernel takes the node as it is, or would
// not take it in any layout.
std::vector<int> ValuesToMakeContiguous(const ResolvedGraph& g,
                                        const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_PATTERNS_H_
