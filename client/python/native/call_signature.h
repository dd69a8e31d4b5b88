// The signature of one call of a compiled function, in C++ for _native
// (aotcache/call_signature.py's `signature_in_python` is the Python form, which
// _core uses and which says what a signature holds): it runs before every
// compiled call, and in Python it cost more than the MLP's compiled forward.
//
// Two calls' signatures compare equal exactly when their Python forms do;
// the value is another: (grad mode, spec, one bytes object with every
// tensor leaf's and captured tensor's record, then (type, value) per
// non-tensor leaf).
// Thread-safety: pure; called with the GIL held.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_CALL_SIGNATURE_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_CALL_SIGNATURE_H_

#include <pybind11/pybind11.h>

namespace aotcache {

// `leaves`: the call's arguments, flattened; `spec`: their structure;
// `captured`: the tensors the function captures. Raises TypeError for a
// leaf that is not a tensor, None, bool, int, float, str, dtype or device.
pybind11::tuple CallSignature(const pybind11::list& leaves,
                              const pybind11::object& spec,
                              const pybind11::list& captured);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_CALL_SIGNATURE_H_
