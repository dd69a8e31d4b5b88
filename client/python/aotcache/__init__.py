"""aotcache Python client: export autograd graphs for the aotcache server,
compile them through it (aotcache.torch, the torch.compile backend), and the
exceptions all of it raises (aotcache.errors)."""

from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors_all
from .fx_export import export_graph

__all__ = list(_errors_all) + ["export_graph"]
