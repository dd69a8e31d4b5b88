#include "core/key/cache_key.h"

#include <openssl/evp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/key/canonical_writer.h"

namespace aotcache {

void CanonicalWriter::Double(double v) {
  if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  U64(bits);
}

namespace {

void WriteMeta(CanonicalWriter& w, const Meta& meta, bool requires_grad,
               bool is_leaf) {
  w.Tag('M');
  w.U64(meta.shape.size());
  for (int64_t s : meta.shape) w.I64(s);
  for (int64_t s : meta.stride) w.I64(s);
  w.I64(meta.offset);
  w.U8(static_cast<uint8_t>(meta.dtype));
  w.Bool(requires_grad);
  w.Bool(is_leaf);
}

void WriteProtoMeta(CanonicalWriter& w, const v1::TensorMeta& meta) {
  WriteMeta(w, MetaFromProto(meta), meta.requires_grad(), meta.is_leaf());
}

void WriteArg(CanonicalWriter& w, const BoundArg& a) {
  using Kind = BoundArg::Kind;
  w.U8(static_cast<uint8_t>(a.kind));
  switch (a.kind) {
    case Kind::kNone:
      break;
    case Kind::kInt:
      w.I64(a.i);
      break;
    case Kind::kFloat:
      w.Double(a.f);
      break;
    case Kind::kBool:
      w.Bool(a.b);
      break;
    case Kind::kString:
    case Kind::kDevice:
      w.Str(a.s);
      break;
    case Kind::kInts:
      w.U64(a.ints.size());
      for (int64_t v : a.ints) w.I64(v);
      break;
    case Kind::kDType:
      w.U8(static_cast<uint8_t>(a.dtype));
      break;
    case Kind::kTensor:
    case Kind::kTensorList:
      w.U64(a.values.size());
      for (int v : a.values) w.I64(v);
      break;
  }
}

void WriteGraph(CanonicalWriter& w, const ResolvedGraph& graph) {
  w.Tag('I');
  w.U64(graph.num_inputs());
  for (int i = 0; i < graph.num_inputs(); ++i) {
    w.I64(graph.input_storage[i]);
    WriteProtoMeta(w, graph.graph->inputs(i).meta());
  }
  w.Tag('S');
  w.U64(graph.storage_size.size());
  for (int64_t size : graph.storage_size) w.I64(size);
  w.Tag('C');
  w.U64(graph.num_constants());
  for (int c = 0; c < graph.num_constants(); ++c) {
    WriteMeta(w, graph.values[graph.ConstantValue(c)].meta, false, true);
    w.Str(graph.graph->constants(c).data());
  }
  w.Tag('N');
  w.U64(graph.nodes.size());
  for (const ResolvedNode& node : graph.nodes) {
    w.Str(node.op->qualified_name);
    w.Bool(node.grad_enabled);
    w.U64(node.args.size());
    for (const BoundArg& a : node.args) WriteArg(w, a);
    w.U64(node.results.size());
    for (int v : node.results) WriteMeta(w, graph.values[v].meta, false, false);
  }
  w.Tag('O');
  w.U64(graph.outputs.size());
  for (int v : graph.outputs) w.I64(v);
}

void WriteViewAndMutation(CanonicalWriter& w,
                          const v1::ViewAndMutationData& vmd) {
  w.Tag('V');
  w.U64(vmd.inputs_size());
  for (const v1::InputAliasInfo& in : vmd.inputs()) {
    w.Bool(in.mutates_data());
    w.Bool(in.mutates_metadata());
    w.Bool(in.mutations_under_no_grad_or_inference_mode());
    w.Bool(in.mutations_hidden_from_autograd());
    w.Bool(in.requires_grad());
    w.Bool(in.is_leaf());
    w.Bool(in.keep_input_mutations());
  }
  w.U64(vmd.outputs_size());
  for (const v1::OutputAliasInfo& out : vmd.outputs()) {
    w.U8(static_cast<uint8_t>(out.output_type()));
    w.Bool(out.has_base_idx());
    w.I64(out.base_idx());
    w.Bool(out.requires_grad());
  }
  w.I64(vmd.num_intermediate_bases());
  w.U64(vmd.intermediate_bases_size());
  for (const v1::TensorMeta& m : vmd.intermediate_bases()) WriteProtoMeta(w, m);
  w.U64(vmd.synthetic_bases_size());
  for (const v1::SyntheticBase& b : vmd.synthetic_bases()) {
    w.I64(b.storage());
    w.I64(b.size());
    w.U8(static_cast<uint8_t>(b.dtype()));
    w.U64(b.inputs_size());
    for (int i : b.inputs()) w.I64(i);
  }
  w.U64(vmd.tangents_size());
  for (const v1::TangentInfo& t : vmd.tangents()) {
    w.U8(static_cast<uint8_t>(t.source()));
    w.I64(t.index());
    WriteProtoMeta(w, t.meta());
  }
}

}  // namespace

std::string CacheKey::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

std::string EncodeKeyMaterial(const ResolvedGraph& graph,
                              const v1::ViewAndMutationData& vmd, v1::Mode mode,
                              const v1::CompileOptions& options,
                              const KeyContext& context) {
  CanonicalWriter w;
  w.Str("aotcache-key");
  w.U32(kKeySchemaVersion);
  w.Tag('X');
  w.Str(context.pipeline_version);
  w.Str(context.target.arch());
  w.Str(context.target.abi());
  w.Str(context.target.cpu());
  w.Str(context.backend_name);
  w.Str(context.backend_version);
  w.Tag('P');
  w.Bool(options.keep_input_mutations());
  WriteGraph(w, graph);
  WriteViewAndMutation(w, vmd);
  w.Tag('D');
  w.U8(static_cast<uint8_t>(mode));
  return w.bytes();
}

CacheKey ComputeKey(const ResolvedGraph& graph,
                    const v1::ViewAndMutationData& vmd, v1::Mode mode,
                    const v1::CompileOptions& options,
                    const KeyContext& context) {
  std::string material = EncodeKeyMaterial(graph, vmd, mode, options, context);
  CacheKey key;
  unsigned int size = 0;
  // SHA-256 over bytes in memory cannot fail short of memory exhaustion.
  EVP_Digest(material.data(), material.size(), key.bytes.data(), &size,
             EVP_sha256(), nullptr);
  return key;
}

}  // namespace aotcache
