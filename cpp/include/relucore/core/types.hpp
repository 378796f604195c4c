// Basic numeric types shared by every relucore header.
//
// relucore stores matrices row-major (like numpy's default C order) so that a
// numpy array can be viewed without a copy and so that "one example" or "one
// neuron" is always a contiguous row.
#pragma once

#include "relucore/core/abi.hpp"

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

using Scalar = double;
using Index = Eigen::Index;

using RowMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
using Mask = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Views used in every public signature: they bind to numpy buffers, Eigen
// matrices and Eigen::Map without copying as long as the layout matches.
using MatrixRef = Eigen::Ref<RowMatrix>;
using ConstMatrixRef = Eigen::Ref<const RowMatrix>;
using VectorRef = Eigen::Ref<Vector>;
using ConstVectorRef = Eigen::Ref<const Vector>;

using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using VectorMap = Eigen::Map<Vector>;
using ConstVectorMap = Eigen::Map<const Vector>;
using MaskMap = Eigen::Map<Mask>;

/// The extent of a local array with N entries, at least 1 (N = 0 stands for a
/// size known only at run time), as the size_t an array bound is.
template <int N>
inline constexpr std::size_t array_extent = N > 0 ? static_cast<std::size_t>(N) : 1;

/// True when an Eigen expression of type T binds to ConstMatrixRef without a
/// copy (row-major double storage with unit inner stride). Engines that keep a
/// view of their data use it to reject, at compile time, arguments that would
/// leave them viewing a temporary copy.
template <class T>
inline constexpr bool binds_as_view =
    bool(Eigen::internal::traits<ConstMatrixRef>::template match<std::decay_t<T>>::MatchAtCompileTime);

/// Whether every entry of a is finite, as a.allFinite() answers, by one vectorised sum of
/// a * 0 (0 for a finite entry, NaN for an infinite or NaN one, and a NaN survives the sum);
/// Eigen's allFinite() compares a - a with itself entry by entry, several times slower on
/// the start's W0 (m x d) that the prepare step checks on every call. Storage with a run-time
/// row stride (a Ref or a Block, such as the K every public entry checks) is summed a row at a
/// time: Eigen sums such a view one entry after the other, a chain of dependent additions
/// that cost a trial at n = 40 about 3 % in its three checks of K.
template <class Derived>
bool all_finite(const Eigen::DenseBase<Derived>& a) {
    using S = typename Derived::Scalar;
    if (a.size() == 0) return true;
    if constexpr (Eigen::internal::has_direct_access<Derived>::ret &&
                  int(Eigen::internal::inner_stride_at_compile_time<Derived>::ret) == 1) {
        const Derived& d = a.derived();
        using Slice = Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>;
        const Index inner = d.innerSize(), stride = d.outerStride();
        if (stride == inner || d.outerSize() == 1) return (Slice(d.data(), d.size()) * S(0)).sum() == 0;
        S sum = 0;
        for (Index o = 0; o < d.outerSize(); ++o) sum += (Slice(d.data() + o * stride, inner) * S(0)).sum();
        return sum == 0;
    } else {
        return (a.derived().array() * S(0)).sum() == 0;
    }
}

/// A caller's buffer: its first entry and the number of entries it holds
/// (relucore writes only inside it). Made from a pointer and a size, or from
/// any contiguous container with data() and size() (std::vector, an Eigen
/// matrix); never from a bare pointer.
template <class T>
struct Span {
    T* data = nullptr;
    std::int64_t size = 0;
    Span() = default;
    Span(T* first, std::int64_t count) : data(first), size(count) {}
    template <class C, class = std::enable_if_t<std::is_convertible_v<decltype(std::declval<C&>().data()), T*>>>
    Span(C& container)  // NOLINT(google-explicit-constructor): a buffer is its container
        : data(container.data()), size(static_cast<std::int64_t>(container.size())) {}
    template <std::size_t N>
    Span(T (&array)[N])  // NOLINT(google-explicit-constructor,modernize-avoid-c-arrays)
        : data(array), size(static_cast<std::int64_t>(N)) {}
    explicit operator bool() const { return data != nullptr; }
};

namespace detail {
/// Position j of a std::vector indexed like the Eigen vectors (0 <= j < size).
inline std::size_t idx(Index j) {
    return static_cast<std::size_t>(j);
}
}  // namespace detail

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
