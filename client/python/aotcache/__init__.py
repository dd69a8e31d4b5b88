"""aotcache Python client: export autograd graphs for the aotcache server."""

from .fx_export import ExportError, export_graph

__all__ = ["ExportError", "export_graph"]
