// Counter-based random numbers for in-engine randomness.
//
// Every random number an engine draws is a pure function of (key, counter):
// no generator state is carried from one draw to the next, so a run's noise
// and sample choices do not depend on the order in which neurons are visited,
// on the thread count, or on how a run is cut into segments.
//
// The bijection is Philox4x64-10 (Salmon, Moraes, Dror, Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC'11): a 10-round Feistel-like network of
// 64x64->128-bit multiplications on a 256-bit counter under a 128-bit key. It
// is the same function as numpy's ``np.random.Philox`` bit generator (which
// returns philox(counter + 1) because it increments before drawing), which
// lets the Python tests check this implementation bit for bit.
//
// Counter layout used by relucore (one 4 x 64-bit block per call):
//     c0 = step (the global iteration number t),
//     c1 = neuron index i (0 for draws shared by all neurons),
//     c2 = stream (what the numbers are for: RngStream below),
//     c3 = block index within (step, neuron, stream).
// Each block gives four 64-bit words; uniforms use the top 53 bits
// (u = (w >> 11) * 2^-53 in [0, 1)), and normals come in pairs from the
// Box-Muller transform of two uniforms, the first mapped to (0, 1] so that the
// logarithm is finite: z0 = r cos(2 pi u2), z1 = r sin(2 pi u2),
// r = sqrt(-2 log(1 - u1)). One block therefore yields four normals.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace relucore {

enum class RngStream : std::uint64_t {
    noise = 0,   // Langevin noise xi_i at step t for neuron i
    sample = 1,  // mini-batch / single-sample indices at step t (neuron 0)
    init = 2,    // initial parameters of neuron i (step 0)
};

namespace detail {

inline void mulhilo64(std::uint64_t a, std::uint64_t b, std::uint64_t& hi, std::uint64_t& lo) {
#if defined(__SIZEOF_INT128__)
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    hi = static_cast<std::uint64_t>(p >> 64);
    lo = static_cast<std::uint64_t>(p);
#else
    // Portable schoolbook product on 32-bit halves.
    const std::uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const std::uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    lo = (mid << 32) | (p00 & 0xffffffffu);
    hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

}  // namespace detail

using Counter4 = std::array<std::uint64_t, 4>;
using Key2 = std::array<std::uint64_t, 2>;

// Philox4x64 with 10 rounds.
inline Counter4 philox4x64_10(Counter4 c, Key2 k) {
    constexpr std::uint64_t M0 = 0xD2E7470EE14C6C93ULL, M1 = 0xCA5A826395121157ULL;
    constexpr std::uint64_t W0 = 0x9E3779B97F4A7C15ULL, W1 = 0xBB67AE8584CAA73BULL;
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k[0] += W0;
            k[1] += W1;
        }
        std::uint64_t hi0, lo0, hi1, lo1;
        detail::mulhilo64(M0, c[0], hi0, lo0);
        detail::mulhilo64(M1, c[2], hi1, lo1);
        c = Counter4{hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    }
    return c;
}

// A key and the conversions relucore uses on top of the raw blocks.
class CounterRng {
public:
    CounterRng() = default;
    explicit CounterRng(Key2 key) : key_(key) {}
    CounterRng(std::uint64_t key0, std::uint64_t key1) : key_{key0, key1} {}

    const Key2& key() const { return key_; }

    Counter4 block(std::uint64_t step, std::uint64_t neuron, RngStream stream, std::uint64_t index) const {
        return philox4x64_10(Counter4{step, neuron, static_cast<std::uint64_t>(stream), index}, key_);
    }

    static double to_uniform(std::uint64_t w) { return static_cast<double>(w >> 11) * 0x1.0p-53; }

    // The k-th uniform in [0, 1) of (step, neuron, stream).
    double uniform(std::uint64_t step, std::uint64_t neuron, RngStream stream, std::uint64_t k) const {
        return to_uniform(block(step, neuron, stream, k / 4)[k % 4]);
    }

    // Writes count standard normals of (step, neuron, stream): block j gives
    // normals 4j .. 4j+3.
    void normals(std::uint64_t step, std::uint64_t neuron, RngStream stream, double* out, int count) const {
        for (int j = 0; 4 * j < count; ++j) {
            const Counter4 w = block(step, neuron, stream, static_cast<std::uint64_t>(j));
            double z[4];
            box_muller(w[0], w[1], z[0], z[1]);
            box_muller(w[2], w[3], z[2], z[3]);
            for (int q = 0; q < 4 && 4 * j + q < count; ++q) out[4 * j + q] = z[q];
        }
    }

    // An index uniform on {0, ..., n-1} from a uniform u in [0, 1): floor(u n)
    // (bias at most n 2^-53).
    static std::int64_t to_index(double u, std::int64_t n) {
        const auto i = static_cast<std::int64_t>(u * static_cast<double>(n));
        return i < n ? i : n - 1;
    }

private:
    static void box_muller(std::uint64_t w1, std::uint64_t w2, double& z0, double& z1) {
        constexpr double two_pi = 6.283185307179586476925286766559;
        const double u1 = 1.0 - to_uniform(w1);  // (0, 1]
        const double u2 = to_uniform(w2);
        const double r = std::sqrt(-2.0 * std::log(u1));
        z0 = r * std::cos(two_pi * u2);
        z1 = r * std::sin(two_pi * u2);
    }

    Key2 key_{0, 0};
};

}  // namespace relucore
