// Registers the BLAS that scipy loads (scipy.linalg.cython_blas) with
// linalg/blas.hpp, and its LAPACK's dsyevd, dpotrf, dpotrs and dpocon
// (scipy.linalg.cython_lapack) with linalg/lapack.hpp, lazily, and reports what is in use. The modules' function
// tables come through relucore._scipy_capi, which loads the two modules without
// the rest of scipy.linalg.
//
// The function pointers come from the module's PyCapsules (Fortran calling
// convention, 32-bit integers). The library's thread-count functions are
// looked up in the shared object that holds those functions and its
// dependencies (OpenBLAS's openblas_set/get_num_threads, under scipy's symbol
// prefix or none); without them the BLAS is not registered, since relucore
// could not keep it to one thread inside its own parallel loops, and the
// built-in kernels are used. RELUCORE_BLAS=builtin in the environment keeps
// the built-in kernels.
#include "blas_registry.hpp"
#include "common.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define RELUCORE_HAVE_DLADDR 1
#endif

namespace py = pybind11;
using namespace relucore;

namespace {

// What a registration attempt found.
struct Found {
    blas::Library library;
    lapack::Library lapack;  // registered with the BLAS (it runs on it), when scipy exports it
    std::string source = "builtin";
    std::string reason;
};

// Set once (under the mutex, never held while Python runs: an import
// releases the GIL, and another thread holding it could then wait for the
// mutex forever).
struct BlasRegistry {
    std::mutex mutex;
    std::atomic<bool> done{false};
    bool enabled = true;
    Found found;
};

BlasRegistry& blas_registry_state() {
    static BlasRegistry r;
    return r;
}

void* capsule_pointer(const py::dict& capi, const char* name) {
    const py::object cap = capi[name];
    void* p = PyCapsule_GetPointer(cap.ptr(), PyCapsule_GetName(cap.ptr()));
    if (p == nullptr) throw py::error_already_set();
    return p;
}

// OpenBLAS's thread-count functions reachable from the object defining fn;
// path: the file that defines them.
bool find_thread_control(void* fn, blas::Library& lib, std::string& path) {
#if defined(RELUCORE_HAVE_DLADDR)
    Dl_info info;
    if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return false;
    path = info.dli_fname;
    void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) return false;
    for (const char* prefix : {"scipy_", ""})
        for (const char* suffix : {"", "64_", "_64"}) {
            const std::string set = std::string(prefix) + "openblas_set_num_threads" + suffix;
            const std::string get = std::string(prefix) + "openblas_get_num_threads" + suffix;
            void* s = dlsym(handle, set.c_str());
            void* g = dlsym(handle, get.c_str());
            if (s != nullptr && g != nullptr) {
                lib.set_threads = reinterpret_cast<blas::set_threads_fn>(s);
                lib.get_threads = reinterpret_cast<blas::get_threads_fn>(g);
                Dl_info where;  // the BLAS library itself, for blas_info()
                if (dladdr(s, &where) != 0 && where.dli_fname != nullptr) path = where.dli_fname;
                return true;
            }
        }
#else
    (void)fn;
    (void)lib;
    (void)path;
#endif
    return false;
}

// Looks scipy's BLAS up (GIL held; registers nothing).
Found find_scipy_blas() {
    Found f;
    const char* env = std::getenv("RELUCORE_BLAS");
    if (env != nullptr && std::string(env) == "builtin") {
        f.reason = "RELUCORE_BLAS=builtin";
        return f;
    }
    py::dict capi;
    try {
        capi = py::module_::import("relucore._scipy_capi").attr("capi")("cython_blas");
    } catch (py::error_already_set& e) {
        f.reason = std::string("scipy.linalg.cython_blas not importable: ") + e.what();
        return f;
    }
    blas::Library lib;
    lib.dgemm = reinterpret_cast<blas::dgemm_fn>(capsule_pointer(capi, "dgemm"));
    lib.dsyrk = reinterpret_cast<blas::dsyrk_fn>(capsule_pointer(capi, "dsyrk"));
    std::string path;
    if (!find_thread_control(reinterpret_cast<void*>(lib.dsyrk), lib, path)) {
        f.reason = "no OpenBLAS thread control found next to scipy's BLAS";
        return f;
    }
    f.library = lib;
    try {
        const py::dict lapack_capi = py::module_::import("relucore._scipy_capi").attr("capi")("cython_lapack");
        f.lapack.dsyevd = reinterpret_cast<lapack::dsyevd_fn>(capsule_pointer(lapack_capi, "dsyevd"));
        f.lapack.dpotrf = reinterpret_cast<lapack::dpotrf_fn>(capsule_pointer(lapack_capi, "dpotrf"));
        f.lapack.dpotrs = reinterpret_cast<lapack::dpotrs_fn>(capsule_pointer(lapack_capi, "dpotrs"));
        f.lapack.dpocon = reinterpret_cast<lapack::dpocon_fn>(capsule_pointer(lapack_capi, "dpocon"));
    } catch (py::error_already_set&) {  // the eigenvalues and the start's Cholesky then come from Eigen
        f.lapack = lapack::Library{};
    }
    f.source = "scipy.linalg.cython_blas (" + path + ")";
    f.reason = "registered";
    return f;
}

}  // namespace

namespace relucore::bindings {

void ensure_blas() {
    BlasRegistry& r = blas_registry_state();
    if (r.done.load(std::memory_order_acquire)) return;
    Found f = find_scipy_blas();  // may release the GIL: another thread may look too
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.done.load(std::memory_order_relaxed)) return;
    r.found = std::move(f);
    if (r.enabled && r.found.library.dsyrk != nullptr) {
        blas::register_blas(&r.found.library);
        lapack::register_lapack(&r.found.lapack);
    }
    r.done.store(true, std::memory_order_release);
}

}  // namespace relucore::bindings

namespace {

// What _core.blas_info() returns (bound read-only as _core.BlasInfo).
struct BlasInfo {
    std::string in_use;
    std::string scipy;
    bool threads_controlled = false;
};

}  // namespace

void bind_blas(py::module_& m) {
    py::class_<BlasInfo>(m, "BlasInfo", "What _core.blas_info() reports about the BLAS in use (read-only).")
        .def_readonly("in_use", &BlasInfo::in_use,
                      "the kernels in use: scipy's BLAS, 'scipy.linalg.cython_blas (<library path>)', or 'builtin'")
        .def_readonly("scipy", &BlasInfo::scipy, "why scipy's BLAS is or is not registered")
        .def_readonly("threads_controlled", &BlasInfo::threads_controlled,
                      "whether the registered BLAS's thread count can be held at one inside relucore's loops")
        .def("__repr__", [](const BlasInfo& b) {
            return "BlasInfo(in_use=" + py::repr(py::str(b.in_use)).cast<std::string>() +
                   ", scipy=" + py::repr(py::str(b.scipy)).cast<std::string>() +
                   ", threads_controlled=" + (b.threads_controlled ? "True" : "False") + ")";
        });
    m.def(
        "blas_info",
        [] {
            bindings::ensure_blas();
            BlasRegistry& r = blas_registry_state();
            BlasInfo info;
            info.in_use = blas::registered_blas() != nullptr ? r.found.source : std::string("builtin");
            info.scipy = r.found.reason;
            info.threads_controlled = r.found.library.set_threads != nullptr;
            return info;
        },
        "The kernels K = X X^T and W += C X run on (relucore/linalg/blas.hpp), as a BlasInfo: in_use (scipy's BLAS "
        "or 'builtin'), scipy (why scipy's BLAS is or is not registered), threads_controlled. Registers scipy's "
        "BLAS, and its LAPACK's dsyevd for the eigenvalues of K and dpotrf, dpotrs, dpocon for the start's Cholesky "
        "solve (relucore/linalg/lapack.hpp), if not done yet.");
    m.def(
        "products_use_blas_by_size",
        [](std::int64_t m, std::int64_t n, std::int64_t d) { return blas::products_use_blas_by_size(m, n, d); },
        py::arg("m"), py::arg("n"), py::arg("d"),
        "Whether the weight-space engine's products W X^T and C X (m neurons, n examples, d inputs) are large "
        "enough to go to a BLAS (relucore/linalg/blas.hpp; the size rule alone, whether or not one is registered).");
    m.def(
        "_use_blas",
        [](bool enabled) {
            bindings::ensure_blas();
            BlasRegistry& r = blas_registry_state();
            std::lock_guard<std::mutex> lock(r.mutex);
            r.enabled = enabled;
            const bool available = r.found.library.dsyrk != nullptr;
            blas::register_blas(enabled && available ? &r.found.library : nullptr);
            lapack::register_lapack(enabled && available ? &r.found.lapack : nullptr);
            return enabled && available;
        },
        py::arg("enabled"),
        "Tests only: switch between scipy's BLAS and LAPACK (if registered) and the built-in kernels and Eigen's "
        "eigenvalues; returns whether the BLAS is now in use.");
}
