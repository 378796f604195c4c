// Glue shared by the binding files: checked views of numpy arrays and a way
// to run C++ work with the GIL released while Ctrl-C stays responsive.
// Nothing numerical happens here.
#pragma once

#include <pybind11/native_enum.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "relucore/core/parallel.hpp"
#include "relucore/core/types.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace relucore::bindings {

namespace py = pybind11;

template <class T>
using CArray = py::array_t<T, py::array::c_style>;

// Checks that a C-contiguous array has the expected shape (-1: any extent).
template <class T>
void require_shape(const CArray<T>& a, const char* name, std::vector<py::ssize_t> shape) {
    if (a.ndim() != static_cast<py::ssize_t>(shape.size()))
        throw py::value_error(std::string(name) + ": expected " + std::to_string(shape.size()) + " dimensions, got " +
                              std::to_string(a.ndim()));
    for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] >= 0 && a.shape(i) != shape[i])
            throw py::value_error(std::string(name) + ": wrong extent along axis " + std::to_string(i));
}

// Work estimate (flops) above which a call is made interruptible: it then polls
// for Ctrl-C (see run_without_gil).
inline bool is_long(double flops) {
    return flops > 2e7;
}

// Runs work(cancel) without the GIL. Large jobs run on a helper thread while
// this thread wakes every few milliseconds to let Python handle signals; a
// pending KeyboardInterrupt raises the cancel flag, waits for the engines to
// stop after their current step and is then re-raised. Small jobs run inline:
// they end before a signal could matter. tick (optional) runs with the GIL at
// each wake-up and once at the end (a progress bar's update).
template <class Work>
void run_without_gil(Work&& work, bool interruptible, const std::function<void()>& tick = {}) {
    std::atomic<bool> cancel{false};
    if (!interruptible) {
        py::gil_scoped_release release;
        work(&cancel);
        return;
    }
    std::exception_ptr error, tick_error;
    bool interrupted = false;
    {
        py::gil_scoped_release release;
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        std::thread worker([&] {
            try {
                work(&cancel);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex);
            done = true;
            cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(mutex);
        while (!done) {
            cv.wait_for(lock, std::chrono::milliseconds(5));
            if (done || interrupted) continue;
            lock.unlock();
            {
                py::gil_scoped_acquire acquire;
                if (PyErr_CheckSignals() != 0) {
                    interrupted = true;
                    cancel.store(true);
                    // The exception stays set until we raise it below.
                } else if (tick && !tick_error) {
                    try {
                        tick();
                    } catch (...) {  // the bar's error ends the run like Ctrl-C, and is raised below
                        tick_error = std::current_exception();
                        cancel.store(true);
                    }
                }
            }
            lock.lock();
        }
        lock.unlock();
        worker.join();
    }
    if (interrupted) throw py::error_already_set();
    if (tick_error) std::rethrow_exception(tick_error);
    if (error) std::rethrow_exception(error);
    if (tick) tick();
}

// body(b) for every problem b < B of a batch, on n_threads threads (parallel_for)
// without the GIL; interruptible as for run_without_gil.
template <class Body>
void batch_without_gil(Index B, int n_threads, bool interruptible, Body&& body) {
    run_without_gil([&](const std::atomic<bool>*) { parallel_for(B, n_threads, body); }, interruptible);
}

}  // namespace relucore::bindings
