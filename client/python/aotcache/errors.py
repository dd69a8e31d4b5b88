"""aotcache's exceptions: one hierarchy, `aotcache.Error` at its root.

* A failure the daemon or the C++ client reports with a gRPC status raises
  the subclass named after its code (`InvalidArgument`, `Unavailable`, ...;
  `Error.code` is the code's name, "INVALID_ARGUMENT"). The extension raises
  them through `for_code`. InvalidArgument is also a ValueError,
  Unimplemented also a NotImplementedError (so a RuntimeError).
* `ExportError`: a function or its arguments cannot be expressed as an
  aotcache graph (also a ValueError).
* `CompileError`: aot_function, aot_module or the torch.compile backend
  could not trace or compile a function (also a RuntimeError); its `code` is
  the status code of the failure behind it, when there is one.

This module imports nothing of torch or of the extension.
"""

from typing import Dict, Optional, Type

__all__ = [
    "Error", "ExportError", "CompileError", "Cancelled", "Unknown", "InvalidArgument",
    "DeadlineExceeded", "NotFound", "AlreadyExists", "PermissionDenied",
    "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
    "Internal", "Unavailable", "DataLoss", "Unauthenticated", "for_code",
]


class Error(Exception):
    """The root of aotcache's exceptions."""

    code: Optional[str] = None


class ExportError(Error, ValueError):
    """The function or its arguments cannot be expressed as an aotcache Graph."""


class CompileError(Error, RuntimeError):
    """fn could not be traced or compiled (an op aotcache lacks, a dtype or
    device it does not support, a malformed graph); the message says why."""

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code


class Cancelled(Error):
    code = "CANCELLED"


class Unknown(Error):
    code = "UNKNOWN"


class InvalidArgument(Error, ValueError):
    code = "INVALID_ARGUMENT"


class DeadlineExceeded(Error):
    code = "DEADLINE_EXCEEDED"


class NotFound(Error):
    code = "NOT_FOUND"


class AlreadyExists(Error):
    code = "ALREADY_EXISTS"


class PermissionDenied(Error):
    code = "PERMISSION_DENIED"


class ResourceExhausted(Error):
    code = "RESOURCE_EXHAUSTED"


class FailedPrecondition(Error):
    code = "FAILED_PRECONDITION"


class Aborted(Error):
    code = "ABORTED"


class OutOfRange(Error):
    code = "OUT_OF_RANGE"


class Unimplemented(Error, NotImplementedError):
    """Also what a compiled function raises for a call it cannot run as eager
    would (it refuses rather than differ)."""

    code = "UNIMPLEMENTED"


class Internal(Error):
    code = "INTERNAL"


class Unavailable(Error):
    code = "UNAVAILABLE"


class DataLoss(Error):
    code = "DATA_LOSS"


class Unauthenticated(Error):
    code = "UNAUTHENTICATED"


_BY_CODE: Dict[str, Type[Error]] = {
    cls.code: cls for cls in Error.__subclasses__() if cls.code is not None
}


def for_code(code: str) -> Type[Error]:
    """The class for a status code's name ("NOT_FOUND"); Unknown for a name
    it does not know."""
    return _BY_CODE.get(code, Unknown)
