/// @file core/checks.hpp
/// The argument checks of every public entry, in one place: sizes and
/// finiteness, each throwing std::invalid_argument that names the argument and
/// what was expected ("y must have n = 12 entries, got 11"). Each check is one
/// pass over its argument, made once per call (construction, set_labels, a
/// trial), never per gradient step.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace detail {

/// @throws std::invalid_argument "<name> must have <what> = <expected> entries, got <size>"
inline void require_size(const char* name, Index size, Index expected, const char* what) {
    if (size != expected)
        throw std::invalid_argument(std::string(name) + " must have " + what + " = " + std::to_string(expected) +
                                    " entries, got " + std::to_string(size));
}

/// @throws std::invalid_argument "<name> must be <rows_what> x <cols_what> = R x C, got r x c"
inline void require_shape(const char* name, Index rows, Index cols, Index expected_rows, Index expected_cols,
                          const char* what) {
    if (rows != expected_rows || cols != expected_cols)
        throw std::invalid_argument(std::string(name) + " must be " + what + " = " + std::to_string(expected_rows) +
                                    " x " + std::to_string(expected_cols) + ", got " + std::to_string(rows) + " x " +
                                    std::to_string(cols));
}

/// @throws std::invalid_argument "<name> must be square (n x n), got r x c"
inline void require_square(const char* name, Index rows, Index cols) {
    if (rows != cols)
        throw std::invalid_argument(std::string(name) + " must be square (n x n), got " + std::to_string(rows) + " x " +
                                    std::to_string(cols));
}

/// @throws std::invalid_argument "<name> must be finite, got nan at entry (i, j)" (the first one)
template <class Derived>
void require_finite(const char* name, const Eigen::DenseBase<Derived>& a) {
    if (all_finite(a)) return;
    for (Index i = 0; i < a.rows(); ++i)
        for (Index j = 0; j < a.cols(); ++j) {
            const double v = static_cast<double>(a.derived().coeff(i, j));
            if (!std::isfinite(v)) {
                const std::string where = a.cols() == 1 || a.rows() == 1
                                              ? std::to_string(a.cols() == 1 ? i : j)
                                              : "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
                throw std::invalid_argument(std::string(name) + " must be finite, got " + std::to_string(v) +
                                            " at entry " + where);
            }
        }
}

/// @throws std::invalid_argument unless value > 0 and finite: "<name> must be positive and finite, got v"
inline void require_positive(const char* name, double value) {
    if (!(value > 0) || !std::isfinite(value))
        throw std::invalid_argument(std::string(name) + " must be positive and finite, got " + std::to_string(value));
}

/// @throws std::invalid_argument unless value != 0 and finite: "<name> must be non-zero and finite, got v"
inline void require_nonzero(const char* name, double value) {
    if (!(value != 0) || !std::isfinite(value))
        throw std::invalid_argument(std::string(name) + " must be non-zero and finite, got " + std::to_string(value));
}

/// A buffer of `size` entries given where `needed` are written.
/// @throws std::invalid_argument "<name> must hold at least N entries, got s"
inline void require_room(const char* name, Index size, Index needed) {
    if (size < needed)
        throw std::invalid_argument(std::string(name) + " must hold at least " + std::to_string(needed) +
                                    " entries, got " + std::to_string(size));
}

}  // namespace detail
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
