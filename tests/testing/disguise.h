// Test helpers for hostile requests: a graph written again as another client
// could send it, with the same key material and names that would smuggle
// code into generated C++ if any reached it.
// Thread-safety: functions only.
#ifndef AOTCACHE_TESTS_TESTING_DISGUISE_H_
#define AOTCACHE_TESTS_TESTING_DISGUISE_H_

#include <string>

#include "aotcache/v1/graph.pb.h"

namespace aotcache::testing {

// Appears in every hostile name, and so in any artifact a name reached.
inline constexpr char kHostileMarker[] = "aotcache_owned";

// A name that would break out of a // comment of generated C++.
std::string Hostile(int i);

// `g` with every name hostile, every input's strides, device and storage
// spelled out, storages numbered differently.
v1::Graph Disguised(const v1::Graph& g);

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_DISGUISE_H_
