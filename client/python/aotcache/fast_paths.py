"""Fused ops that torch's modules call on their inference fast paths,
recorded while tracing as the ops of the slow path they stand for (make_fx's
decomposition_table), so that aotcache compiles them like any other graph.

nn.TransformerEncoderLayer in eval mode under no_grad (batch_first, relu or
gelu) calls aten._transformer_encoder_layer_fwd: Dynamo records that call,
where make_fx on torch 1.13 sees the slow path. Its mask is torch's
merge_masks': an attention mask (sequence, sequence) of type 0, a key
padding mask (batch, sequence) of type 1, or one (batch, heads or 1,
sequence, sequence) of type 2; any nonzero entry masks (a row with every
key masked is NaN, as in eager).

Thread-safety: pure functions.
"""

import math
from typing import Any, Callable, Dict, Optional

import torch
import torch.nn.functional as F

from .errors import ExportError


def _transformer_encoder_layer(
        src: torch.Tensor, embed_dim: int, num_heads: int, qkv_weight: torch.Tensor,
        qkv_bias: torch.Tensor, proj_weight: torch.Tensor, proj_bias: torch.Tensor,
        use_gelu: bool, norm_first: bool, eps: float, norm_weight_1: torch.Tensor,
        norm_bias_1: torch.Tensor, norm_weight_2: torch.Tensor, norm_bias_2: torch.Tensor,
        ffn_weight_1: torch.Tensor, ffn_bias_1: torch.Tensor, ffn_weight_2: torch.Tensor,
        ffn_bias_2: torch.Tensor, mask: Optional[torch.Tensor] = None,
        mask_type: Optional[int] = None) -> torch.Tensor:
    """torch's transformer_encoder_layer_forward: self-attention (one
    projection to q, k and v, softmax(q k^T / sqrt(head)) v per head, the
    output projection) and the feed-forward block, each added to its input,
    with layer norms before (norm_first) or after them."""
    if src.dim() != 3:
        raise ExportError("aotcache: _transformer_encoder_layer_fwd takes a batch "
                          "(batch, sequence, embedding), not %d dims" % src.dim())
    batch, length = src.shape[0], src.shape[1]
    head = embed_dim // num_heads
    masked = None if mask is None else _masked_keys(mask, mask_type, batch, length)

    def attention(x: torch.Tensor) -> torch.Tensor:
        q, k, v = (y.reshape(batch, length, num_heads, head).transpose(1, 2)
                   for y in F.linear(x, qkv_weight, qkv_bias).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head)
        if masked is not None:
            scores = scores.masked_fill(masked, -math.inf)
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, length, embed_dim)
        return F.linear(out, proj_weight, proj_bias)

    def feed_forward(x: torch.Tensor) -> torch.Tensor:
        hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
        hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
        return F.linear(hidden, ffn_weight_2, ffn_bias_2)

    def norm1(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + attention(src))
    return norm2(x + feed_forward(x))


def _masked_keys(mask: torch.Tensor, mask_type: Optional[int], batch: int,
                 length: int) -> torch.Tensor:
    """The fused op's mask as bool scores' positions to mask, shaped to
    broadcast over (batch, heads, sequence, sequence)."""
    masked = mask if mask.dtype == torch.bool else mask != 0
    if mask_type == 0:
        return masked.reshape(1, 1, length, length)
    if mask_type == 1:
        return masked.reshape(batch, 1, 1, length)
    if mask_type == 2:
        return masked.reshape(batch, -1, length, length)
    raise ExportError("aotcache: _transformer_encoder_layer_fwd with mask type %r is "
                      "not supported; run that call with "
                      "torch.backends.mha.set_fastpath_enabled(False)" % (mask_type,))


def decompositions() -> Dict[Any, Callable[..., Any]]:
    """The fast paths this release has, as a decomposition table."""
    table: Dict[Any, Callable[..., Any]] = {}
    op = getattr(torch.ops.aten, "_transformer_encoder_layer_fwd", None)
    if op is not None:
        table[op.default] = _transformer_encoder_layer
    return table
