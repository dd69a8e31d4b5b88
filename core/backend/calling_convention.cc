#include "core/backend/backend.h"
#include "core/graph/tensor_meta.h"
#include "core/key/canonical_writer.h"
#include "core/key/digest.h"

namespace aotcache {
namespace {

void WriteMetas(
    CanonicalWriter& w,
    const google::protobuf::RepeatedPtrField<v1::TensorMeta>& metas) {
  w.U64(metas.size());
  for (const v1::TensorMeta& proto : metas) {
    Meta m = MetaFromProto(proto);
    w.U64(m.shape.size());
    for (int64_t s : m.shape) w.I64(s);
    for (int64_t s : m.stride) w.I64(s);
    w.I64(m.offset);
    w.U8(static_cast<uint8_t>(m.dtype));
  }
}

}  // namespace

std::string CallingConventionHash(const v1::CallingConvention& c) {
  CanonicalWriter w;
  w.Str("aotcache-calling-convention-v1");
  WriteMetas(w, c.inputs());
  WriteMetas(w, c.outputs());
  w.I64(c.num_mutated_inputs());
  w.I64(c.num_user_outputs());
  w.I64(c.num_intermediate_bases());
  w.I64(c.num_saved());
  w.U64(c.input_grad_output_size());
  for (int i : c.input_grad_output()) w.I64(i);
  w.U64(c.synthetic_base_grad_output_size());
  for (int i : c.synthetic_base_grad_output()) w.I64(i);
  return Sha256Hex(w.bytes());
}

}  // namespace aotcache
