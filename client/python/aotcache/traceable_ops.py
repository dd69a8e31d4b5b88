"""torch functions that make_fx would trace to ops of data-dependent shape,
computed while tracing by the same formula in ops of static shape.

cross_entropy with label_smoothing and class-index targets: torch computes
the smoothing term's mean as `smooth_loss.masked_select(~ignored).mean()`
(a shape that depends on how many targets are ignored) after writing zeros
with `index_put_`. The same value is the sum of the smoothing term, zero
where ignored, over the count of targets not ignored (or, with class
weights, over the sum of their weights), which is what is traced instead.

Thread-safety: pure functions.
"""

from typing import Optional

import torch
import torch.nn.functional as F


def cross_entropy_label_smoothing(input: torch.Tensor, target: torch.Tensor,
                                  weight: Optional[torch.Tensor], ignore_index: int,
                                  reduction: str, label_smoothing: float) -> torch.Tensor:
    """F.cross_entropy(input, target, weight, ignore_index=..., reduction=...,
    label_smoothing=...) for class-index targets, as torch's
    cross_entropy_loss_label_smoothing computes it."""
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    logp = torch.log_softmax(input, class_dim)
    nll = F.nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    ignored = target == ignore_index
    if weight is not None:
        shape = [1] * input.dim()
        shape[class_dim] = n_classes
        smooth = -(logp * weight.view(shape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = torch.where(ignored, torch.zeros_like(smooth), smooth)
    if reduction == "mean":
        if weight is not None:
            safe = torch.where(ignored, torch.zeros_like(target), target)
            picked = weight.index_select(0, safe.flatten()).view(target.shape)
            smooth = smooth.sum() / torch.where(ignored, torch.zeros_like(picked), picked).sum()
        else:
            smooth = smooth.sum() / (~ignored).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def replacement(func, args, kwargs):
    """The traceable computation of func(*args, **kwargs), or None when it
    traces as it is."""
    if func is not F.cross_entropy:
        return None
    params = dict(zip(("input", "target", "weight", "size_average", "ignore_index",
                       "reduce", "reduction", "label_smoothing"), args))
    params.update(kwargs)
    smoothing = params.get("label_smoothing", 0.0)
    target = params["target"]
    if not smoothing or target.is_floating_point():
        return None
    if params.get("size_average") is not None or params.get("reduce") is not None:
        return None  # the legacy arguments: torch's own path
    return cross_entropy_label_smoothing(
        params["input"], target, params.get("weight"), params.get("ignore_index", -100),
        params.get("reduction", "mean"), smoothing)
