/// @file core/abi.hpp
/// The build configuration that changes relucore's generated code, and the
/// inline namespace named after it.
///
/// relucore is header-only, so every translation unit compiles its own copy of
/// each function. Two settings change what that copy does: OpenMP
/// (RELUCORE_WITH_OPENMP, set by the CMake target when the consumer links
/// OpenMP) and the run-time SIMD dispatch (RELUCORE_SIMD_DISPATCH, on with
/// GCC or clang on x86 unless RELUCORE_NO_SIMD_DISPATCH is defined). Every
/// declaration lives in `relucore::RELUCORE_ABI_NAMESPACE` (an inline
/// namespace, so code names it `relucore::X` as before), whose name spells
/// both settings. Two translation units built differently therefore define
/// distinct functions instead of one inline function with two bodies (which
/// the linker would resolve to either): each unit's has_openmp() answers for
/// that unit, and handing a relucore object from one to the other fails to
/// link instead of running the other configuration's code.
#pragma once

#if !defined(RELUCORE_NO_SIMD_DISPATCH) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__i386__))
#define RELUCORE_SIMD_DISPATCH 1
#endif

#if defined(RELUCORE_WITH_OPENMP) && defined(RELUCORE_SIMD_DISPATCH)
#define RELUCORE_ABI_NAMESPACE cfg_omp_simd
#elif defined(RELUCORE_WITH_OPENMP)
#define RELUCORE_ABI_NAMESPACE cfg_omp_nosimd
#elif defined(RELUCORE_SIMD_DISPATCH)
#define RELUCORE_ABI_NAMESPACE cfg_noomp_simd
#else
#define RELUCORE_ABI_NAMESPACE cfg_noomp_nosimd
#endif
