// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"), the counter-based generator GPU compilers use: the numbers for one
// element are a pure function of (seed, stream, element), so a kernel draws
// the same values in any order, on any thread, in any backend.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_RUNTIME_PHILOX_H_
#define AOTCACHE_CORE_RUNTIME_PHILOX_H_

#include <array>
#include <cmath>
#include <cstdint>

namespace aotcache::philox {

// Four 32-bit words for counter (element, stream) under key `seed`.
inline std::array<uint32_t, 4> Draw(uint64_t seed, uint32_t stream,
                                    uint64_t element) {
  uint32_t c0 = static_cast<uint32_t>(element),
           c1 = static_cast<uint32_t>(element >> 32), c2 = stream, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed),
           k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{0xD2511F53} * c0;
    uint64_t p1 = uint64_t{0xCD9E8D57} * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return {c0, c1, c2, c3};
}

// A uniform double in [0, 1) from 53 bits of the draw.
inline double Uniform(uint64_t seed, uint32_t stream, uint64_t element) {
  std::array<uint32_t, 4> r = Draw(seed, stream, element);
  uint64_t bits = (uint64_t{r[0]} << 32 | r[1]) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

// A standard normal (Box-Muller over two uniforms of the draw).
inline double Normal(uint64_t seed, uint32_t stream, uint64_t element) {
  std::array<uint32_t, 4> r = Draw(seed, stream, element);
  double u1 = (static_cast<double>((uint64_t{r[0]} << 32 | r[1]) >> 11) + 1) *
              0x1.0p-53;  // (0, 1]: log stays finite.
  double u2 =
      static_cast<double>((uint64_t{r[2]} << 32 | r[3]) >> 11) * 0x1.0p-53;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

}  // namespace aotcache::philox

#endif  // AOTCACHE_CORE_RUNTIME_PHILOX_H_
