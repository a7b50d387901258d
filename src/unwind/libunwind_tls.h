// libunwind's thread-local storage, reached without the dynamic loader.
//
// Why: libunwind (a shared library built the usual way) reaches its
// thread-local variables (the trace cache unw_backtrace uses) through
// __tls_get_addr. After any dlopen() of a library with TLS of its own,
// a thread's next __tls_get_addr call updates its TLS vector, and past the
// vector's spare room that calls malloc. From the sample handler, on a
// thread it interrupted inside malloc, that waits for malloc's lock,
// which the thread itself holds: the program hangs. PyTorch jobs on a GPU
// node did (1 run in 24, the main thread importing; tls_dlopen_workload
// reproduces it every time).
//
// libunwind is loaded with the runtime at the program's start, so its
// TLS block sits at a fixed offset below each thread's pointer (static
// TLS, x86-64's variant II). redirect_libunwind_tls() points libunwind's
// own import of __tls_get_addr (its GOT entry) at a few instructions that
// compute that address for libunwind's module and pass every other module
// on to the loader's: no vector update, no lock, no allocation.
#pragma once

#include <string>

namespace hybridprof {

// Once per process, outside signal handlers, before any sample: an empty
// string when libunwind's TLS is now reached directly (or libunwind has
// none), else why not (the handler's unwinds then keep the loader's path).
std::string redirect_libunwind_tls();

// At each thread's start, outside signal handlers: checks that the fixed
// offset holds on this thread (the loader's answer and ours agree); where
// it does not, the redirection is withdrawn for the whole process and
// false returned.
bool libunwind_tls_holds_on_this_thread();

// For tests: whether libunwind's TLS is reached directly now.
bool libunwind_tls_redirected();

}  // namespace hybridprof
