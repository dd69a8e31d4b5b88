// Kernels of the indexing family: embedding and embedding_dense_backward.
// An index out of range is an error, never a read or write past the weight.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

Tensor Contiguous(const Tensor& t) {
  Tensor c = Tensor::Contiguous(t.shape(), t.dtype());
  CopyInto(t, c);
  return c;
}

// The indices, each checked against `rows`.
absl::StatusOr<std::vector<int64_t>> Rows(const Tensor& indices, int64_t rows) {
  std::vector<int64_t> out;
  for (double v : indices.ToDoubles()) {
    out.push_back(static_cast<int64_t>(v));
    if (v < 0 || v >= static_cast<double>(rows)) {
      return absl::InvalidArgumentError(
          absl::StrCat("embedding: index ", out.back(), " is out of range for ",
                       rows, " rows"));
    }
  }
  return out;
}

Results Embedding(const KernelArgs& k) {
  Tensor weight = Contiguous(k.tensor(0));
  int64_t rows = weight.shape()[0], width = weight.shape()[1];
  absl::StatusOr<std::vector<int64_t>> index = Rows(k.tensor(1), rows);
  if (!index.ok()) return index.status();
  Tensor out = k.NewResult(0);
  int64_t item = ItemSize(out.dtype());
  for (size_t i = 0; i < index->size(); ++i) {
    std::copy_n(weight.storage_data() + (*index)[i] * width * item,
                width * item, out.storage_data() + i * width * item);
  }
  return std::vector<Tensor>{out};
}

// Sums each index's gradient rows into its weight row; padding_idx gets
// none; scale_grad_by_freq divides by how often the index occurs.
Results EmbeddingDenseBackward(const KernelArgs& k) {
  std::vector<double> grad = k.tensor(0).ToDoubles();
  Tensor out = k.NewResult(0);
  int64_t rows = out.shape()[0], width = out.shape()[1];
  absl::StatusOr<std::vector<int64_t>> index = Rows(k.tensor(1), rows);
  if (!index.ok()) return index.status();
  int64_t padding = k.arg(3).i;
  bool by_freq = k.arg(4).b;
  absl::flat_hash_map<int64_t, int64_t> count;
  if (by_freq) {
    for (int64_t i : *index) ++count[i];
  }
  std::vector<double> acc(out.numel(), 0.0);
  for (size_t i = 0; i < index->size(); ++i) {
    int64_t row = (*index)[i];
    if (row == padding) continue;
    double scale = by_freq ? 1.0 / count[row] : 1.0;
    for (int64_t j = 0; j < width; ++j) {
      acc[row * width + j] += scale * grad[i * width + j];
    }
  }
  StoreDoubles(acc, out);
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& IndexingKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.embedding.default", Embedding},
      {"aten.embedding_dense_backward.default", EmbeddingDenseBackward},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
