"""Which extension runs compiled functions.

* aotcache._native runs training mode as a C++ autograd node and takes torch
  tensors directly. It links the libtorch it was built against (Debian's),
  so it is loaded only under that torch: another release's libraries beside
  its own would break the process.
* aotcache._core has no torch in it: tensors cross as raw descriptions and
  DLPack (no copies), training mode's node is a torch.autograd.Function
  (_torch_node). It works with every torch release.

AOTCACHE_BINDING=core chooses _core under any torch (to compare the two).
"""

import os

import torch

from ._native_torch_version import TORCH_VERSION as _NATIVE_TORCH_VERSION

USES_NATIVE = (torch.__version__ == _NATIVE_TORCH_VERSION
               and os.environ.get("AOTCACHE_BINDING", "") != "core")

if USES_NATIVE:
    from . import _native as extension
else:
    from . import _core as extension  # type: ignore[no-redef]

Client = extension.Client
parse_graph = extension.parse_graph
set_blas_threads = extension.set_blas_threads
supported_ops = extension.supported_ops
nondifferentiable_ops = extension.nondifferentiable_ops
