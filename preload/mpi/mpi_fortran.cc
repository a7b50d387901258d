// Fortran bindings (mpif.h and `use mpi`). Open MPI's mpi_send_ calls
// PMPI_Send itself, so Fortran programs never reach the C wrappers. Each
// binding here converts its arguments to C (handles through PMPI_*_f2c,
// Fortran's MPI_BOTTOM / MPI_IN_PLACE / MPI_STATUS_IGNORE to C's), calls the
// C wrapper, which records the call, and converts the outputs back.
//
// The bindings are generated from the C list (cmake/MpiFortranBindings.cmake
// lower-cases the names); how an argument converts follows from its C type
// (FortranArg below). The functions whose handles come in arrays, and
// MPI_Init, are written by hand at the end. `use mpi_f08` (mpi_send_f08) is
// not covered: its handles are derived types.
#include <mpi.h>

#include <tuple>
#include <vector>

#include "mpi/mpi_functions.h"
#include "mpi/pmpi.h"

namespace hybridprof::mpi {
namespace {

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arguments are passed through as int");
constexpr size_t kStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);  // MPI_STATUS_SIZE

// Handle conversions and Fortran's special addresses, looked up once.
struct FortranAbi {
  MPI_Comm (*Comm_f2c)(MPI_Fint);
  MPI_Fint (*Comm_c2f)(MPI_Comm);
  MPI_Datatype (*Type_f2c)(MPI_Fint);
  MPI_Op (*Op_f2c)(MPI_Fint);
  MPI_Group (*Group_f2c)(MPI_Fint);
  MPI_Fint (*Group_c2f)(MPI_Group);
  MPI_Request (*Request_f2c)(MPI_Fint);
  MPI_Fint (*Request_c2f)(MPI_Request);
  MPI_Info (*Info_f2c)(MPI_Fint);
  int (*Status_c2f)(const MPI_Status*, MPI_Fint*);
  // Common blocks of Open MPI's Fortran layer: their addresses are the
  // Fortran constants.
  const void* bottom;
  const void* in_place;
  const void* status_ignore;
  const void* statuses_ignore;
};

const FortranAbi& abi() {
  static const FortranAbi a = [] {
    FortranAbi f{};
    auto get = [](auto& field, const char* symbol) {
      field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(require_mpi_function(symbol));
    };
    get(f.Comm_f2c, "PMPI_Comm_f2c");
    get(f.Comm_c2f, "PMPI_Comm_c2f");
    get(f.Type_f2c, "PMPI_Type_f2c");
    get(f.Op_f2c, "PMPI_Op_f2c");
    get(f.Group_f2c, "PMPI_Group_f2c");
    get(f.Group_c2f, "PMPI_Group_c2f");
    get(f.Request_f2c, "PMPI_Request_f2c");
    get(f.Request_c2f, "PMPI_Request_c2f");
    get(f.Info_f2c, "PMPI_Info_f2c");
    get(f.Status_c2f, "PMPI_Status_c2f");
    f.bottom = find_mpi_symbol("mpi_fortran_bottom_");
    f.in_place = find_mpi_symbol("mpi_fortran_in_place_");
    f.status_ignore = find_mpi_symbol("mpi_fortran_status_ignore_");
    f.statuses_ignore = find_mpi_symbol("mpi_fortran_statuses_ignore_");
    return f;
  }();
  return a;
}

MPI_Fint fint(const void* p) { return *static_cast<const MPI_Fint*>(p); }

// One argument: built from the address Fortran passed; c() is the C
// argument; finish() writes an output back after the call. A C type with
// no FortranArg does not compile: write that binding by hand.
template <typename C>
class FortranArg;

// An input: converted once, nothing to write back.
template <typename T>
class InputArg {
 public:
  explicit InputArg(T value) : value_(value) {}
  T c() const { return value_; }
  void finish() {}

 private:
  T value_;
};

template <>
class FortranArg<int> : public InputArg<int> {
 public:
  explicit FortranArg(void* p) : InputArg(fint(p)) {}
};

// A handle passed in: the Fortran integer names it.
template <auto F2c>
class HandleIn : public InputArg<decltype((std::declval<FortranAbi>().*F2c)(0))> {
 public:
  explicit HandleIn(void* p) : HandleIn::InputArg((abi().*F2c)(fint(p))) {}
};
template <> class FortranArg<MPI_Comm> : public HandleIn<&FortranAbi::Comm_f2c> { using HandleIn::HandleIn; };
template <> class FortranArg<MPI_Datatype> : public HandleIn<&FortranAbi::Type_f2c> { using HandleIn::HandleIn; };
template <> class FortranArg<MPI_Op> : public HandleIn<&FortranAbi::Op_f2c> { using HandleIn::HandleIn; };
template <> class FortranArg<MPI_Group> : public HandleIn<&FortranAbi::Group_f2c> { using HandleIn::HandleIn; };
template <> class FortranArg<MPI_Info> : public HandleIn<&FortranAbi::Info_f2c> { using HandleIn::HandleIn; };

// One handle in and out (MPI_Comm_free, MPI_Wait) or out only (MPI_Isend,
// MPI_Comm_split): converting an output's stale integer in is harmless,
// f2c of an unknown index gives a null handle.
template <auto F2c, auto C2f>
class HandleInOut {
 public:
  explicit HandleInOut(void* p) : fortran_(static_cast<MPI_Fint*>(p)), value_((abi().*F2c)(*fortran_)) {}
  auto c() { return &value_; }
  void finish() { *fortran_ = (abi().*C2f)(value_); }

 private:
  MPI_Fint* fortran_;
  decltype((std::declval<FortranAbi>().*F2c)(0)) value_;
};
template <> class FortranArg<MPI_Comm*> : public HandleInOut<&FortranAbi::Comm_f2c, &FortranAbi::Comm_c2f> { using HandleInOut::HandleInOut; };
template <> class FortranArg<MPI_Group*> : public HandleInOut<&FortranAbi::Group_f2c, &FortranAbi::Group_c2f> { using HandleInOut::HandleInOut; };
// A single request; arrays of requests are in the hand-written bindings.
template <> class FortranArg<MPI_Request*> : public HandleInOut<&FortranAbi::Request_f2c, &FortranAbi::Request_c2f> { using HandleInOut::HandleInOut; };

// A single status (arrays: hand-written bindings).
template <>
class FortranArg<MPI_Status*> {
 public:
  explicit FortranArg(void* p) : fortran_(p == abi().status_ignore ? nullptr : static_cast<MPI_Fint*>(p)) {}
  MPI_Status* c() { return fortran_ ? &value_ : MPI_STATUS_IGNORE; }
  void finish() {
    if (fortran_) abi().Status_c2f(&value_, fortran_);
  }

 private:
  MPI_Fint* fortran_;
  MPI_Status value_{};
};

// Buffers: Fortran's MPI_BOTTOM and MPI_IN_PLACE are addresses of common
// blocks, C's are the constants.
template <typename Pointer>
class BufferArg : public InputArg<Pointer> {
 public:
  explicit BufferArg(void* p)
      : InputArg<Pointer>(p == abi().bottom ? MPI_BOTTOM : p == abi().in_place ? MPI_IN_PLACE : p) {}
};
template <> class FortranArg<void*> : public BufferArg<void*> { using BufferArg::BufferArg; };
template <> class FortranArg<const void*> : public BufferArg<const void*> { using BufferArg::BufferArg; };

// INTEGER and LOGICAL arrays and outputs are ints already.
template <typename Pointer>
class PassThrough : public InputArg<Pointer> {
 public:
  explicit PassThrough(void* p) : InputArg<Pointer>(reinterpret_cast<Pointer>(p)) {}
};
template <> class FortranArg<int*> : public PassThrough<int*> { using PassThrough::PassThrough; };
template <> class FortranArg<const int*> : public PassThrough<const int*> { using PassThrough::PassThrough; };
template <> class FortranArg<int (*)[3]> : public PassThrough<int (*)[3]> { using PassThrough::PassThrough; };

// Converts every argument, calls the C wrapper, writes outputs back.
template <typename... C, typename... Fortran>
void forward(int (*c_function)(C...), MPI_Fint* ierr, Fortran... fortran) {
  static_assert(sizeof...(C) == sizeof...(Fortran));
  std::tuple<FortranArg<C>...> args{FortranArg<C>(fortran)...};
  const int rc = std::apply([&](auto&... a) { return c_function(a.c()...); }, args);
  std::apply([](auto&... a) { (a.finish(), ...); }, args);
  if (ierr) *ierr = rc;
}

// --- arrays of requests and statuses -------------------------------------------

// The C copy of a Fortran request array, written back after the call
// (completed requests become MPI_REQUEST_NULL).
class RequestArray {
 public:
  RequestArray(void* fortran, int count)
      : fortran_(static_cast<MPI_Fint*>(fortran)), c_(count > 0 ? size_t(count) : 0) {
    for (size_t i = 0; i < c_.size(); ++i) c_[i] = abi().Request_f2c(fortran_[i]);
  }
  MPI_Request* c() { return c_.data(); }
  void finish() {
    for (size_t i = 0; i < c_.size(); ++i) fortran_[i] = abi().Request_c2f(c_[i]);
  }

 private:
  MPI_Fint* fortran_;
  std::vector<MPI_Request> c_;
};

class StatusArray {
 public:
  StatusArray(void* fortran, int count)
      : fortran_(fortran == abi().statuses_ignore ? nullptr : static_cast<MPI_Fint*>(fortran)),
        c_(fortran_ && count > 0 ? size_t(count) : 0) {}
  MPI_Status* c() { return fortran_ ? c_.data() : MPI_STATUSES_IGNORE; }
  // The first n statuses (all of them by default).
  void finish(int n = -1) {
    const size_t count = n < 0 ? c_.size() : std::min(c_.size(), size_t(n));
    for (size_t i = 0; fortran_ && i < count; ++i) abi().Status_c2f(&c_[i], fortran_ + i * kStatusSize);
  }

 private:
  MPI_Fint* fortran_;
  std::vector<MPI_Status> c_;
};

// Fortran indices count from 1.
void to_fortran_index(int* index) {
  if (*index != MPI_UNDEFINED) ++*index;
}

class DatatypeArray {
 public:
  DatatypeArray(const void* fortran, int count) : c_(count > 0 ? size_t(count) : 0) {
    const MPI_Fint* f = static_cast<const MPI_Fint*>(fortran);
    for (size_t i = 0; i < c_.size(); ++i) c_[i] = abi().Type_f2c(f[i]);
  }
  const MPI_Datatype* c() const { return c_.data(); }

 private:
  std::vector<MPI_Datatype> c_;
};

// alltoallw has one datatype per peer: the remote group's size on an
// intercommunicator.
int peers(MPI_Comm comm) {
  int inter = 0, n = 0;
  pmpi().Comm_test_inter(comm, &inter);
  if (inter) {
    static const auto remote_size = reinterpret_cast<int (*)(MPI_Comm, int*)>(require_mpi_function("PMPI_Comm_remote_size"));
    remote_size(comm, &n);
  } else {
    pmpi().Comm_size(comm, &n);
  }
  return n;
}

// --- the bindings ---------------------------------------------------------------

// Generated bindings: every argument converts by its C type.
template <MpiFunction F, auto CFunction>
struct FortranBinding {
  template <typename... Fortran>
  static void call(MPI_Fint* ierr, Fortran... fortran) {
    forward(CFunction, ierr, fortran...);
  }
};

// By hand: arrays of handles, and indices that count from 1 in Fortran.
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Startall, CFunction> {
  static void call(MPI_Fint* ierr, void* count, void* requests) {
    RequestArray r(requests, fint(count));
    *ierr = MPI_Startall(fint(count), r.c());
    r.finish();
  }
};

template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Waitall, CFunction> {
  static void call(MPI_Fint* ierr, void* count, void* requests, void* statuses) {
    RequestArray r(requests, fint(count));
    StatusArray s(statuses, fint(count));
    *ierr = MPI_Waitall(fint(count), r.c(), s.c());
    r.finish();
    s.finish();
  }
};

template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Testall, CFunction> {
  static void call(MPI_Fint* ierr, void* count, void* requests, void* flag, void* statuses) {
    RequestArray r(requests, fint(count));
    StatusArray s(statuses, fint(count));
    *ierr = MPI_Testall(fint(count), r.c(), static_cast<int*>(flag), s.c());
    r.finish();
    if (*static_cast<int*>(flag)) s.finish();
  }
};

// Waitany and Testany: one completed request, its index counted from 1.
// `complete(count, requests, index, status)` makes the C call.
template <typename Complete>
void any_completion(MPI_Fint* ierr, void* count, void* requests, void* index, void* status, Complete complete) {
  RequestArray r(requests, fint(count));
  FortranArg<MPI_Status*> s(status);
  int* i = static_cast<int*>(index);
  *ierr = complete(fint(count), r.c(), i, s.c());
  r.finish();
  s.finish();
  to_fortran_index(i);
}
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Waitany, CFunction> {
  static void call(MPI_Fint* ierr, void* count, void* requests, void* index, void* status) {
    any_completion(ierr, count, requests, index, status, MPI_Waitany);
  }
};
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Testany, CFunction> {
  static void call(MPI_Fint* ierr, void* count, void* requests, void* index, void* flag, void* status) {
    any_completion(ierr, count, requests, index, status, [flag](int n, MPI_Request* r, int* i, MPI_Status* st) {
      return MPI_Testany(n, r, i, static_cast<int*>(flag), st);
    });
  }
};

// Waitsome and Testsome have the same arguments.
template <int (*Some)(int, MPI_Request[], int*, int[], MPI_Status[])>
void some_completion(MPI_Fint* ierr, void* incount, void* requests, void* outcount, void* indices, void* statuses) {
  RequestArray r(requests, fint(incount));
  StatusArray s(statuses, fint(incount));
  int* n = static_cast<int*>(outcount);
  int* done = static_cast<int*>(indices);
  *ierr = Some(fint(incount), r.c(), n, done, s.c());
  r.finish();
  if (*n == MPI_UNDEFINED) return;
  s.finish(*n);
  for (int k = 0; k < *n; ++k) ++done[k];
}
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Waitsome, CFunction> {
  static void call(MPI_Fint* ierr, void* incount, void* requests, void* outcount, void* indices, void* statuses) {
    some_completion<MPI_Waitsome>(ierr, incount, requests, outcount, indices, statuses);
  }
};
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Testsome, CFunction> {
  static void call(MPI_Fint* ierr, void* incount, void* requests, void* outcount, void* indices, void* statuses) {
    some_completion<MPI_Testsome>(ierr, incount, requests, outcount, indices, statuses);
  }
};

// Alltoallw's datatype arrays: one per peer. With MPI_IN_PLACE the send
// types are not read (the program may pass anything there).
struct AlltoallwArgs {
  AlltoallwArgs(void* sendbuf, void* sendtypes, void* recvtypes, void* comm)
      : send(sendbuf), c_comm(abi().Comm_f2c(fint(comm))),
        send_types(sendtypes, send.c() == MPI_IN_PLACE ? 0 : peers(c_comm)),
        recv_types(recvtypes, peers(c_comm)) {}
  FortranArg<const void*> send;
  MPI_Comm c_comm;
  DatatypeArray send_types, recv_types;
};
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Alltoallw, CFunction> {
  static void call(MPI_Fint* ierr, void* sendbuf, void* sendcounts, void* sdispls, void* sendtypes, void* recvbuf,
                   void* recvcounts, void* rdispls, void* recvtypes, void* comm) {
    AlltoallwArgs w(sendbuf, sendtypes, recvtypes, comm);
    *ierr = MPI_Alltoallw(w.send.c(), static_cast<int*>(sendcounts), static_cast<int*>(sdispls), w.send_types.c(),
                          FortranArg<void*>(recvbuf).c(), static_cast<int*>(recvcounts), static_cast<int*>(rdispls),
                          w.recv_types.c(), w.c_comm);
  }
};
template <auto CFunction>
struct FortranBinding<MpiFunction::MPI_Ialltoallw, CFunction> {
  static void call(MPI_Fint* ierr, void* sendbuf, void* sendcounts, void* sdispls, void* sendtypes, void* recvbuf,
                   void* recvcounts, void* rdispls, void* recvtypes, void* comm, void* request) {
    AlltoallwArgs w(sendbuf, sendtypes, recvtypes, comm);
    FortranArg<MPI_Request*> r(request);
    *ierr = MPI_Ialltoallw(w.send.c(), static_cast<int*>(sendcounts), static_cast<int*>(sdispls), w.send_types.c(),
                           FortranArg<void*>(recvbuf).c(), static_cast<int*>(recvcounts),
                           static_cast<int*>(rdispls), w.recv_types.c(), w.c_comm, r.c());
    r.finish();
  }
};

}  // namespace
}  // namespace hybridprof::mpi

#define HYBRIDPROF_AFTER_IERR(...) (ierr __VA_OPT__(, ) __VA_ARGS__)
#define MPI_FORTRAN_FUNCTION(fortran_name, name, params, args)                                      \
  extern "C" void fortran_name params {                                                             \
    hybridprof::mpi::FortranBinding<hybridprof::mpi::MpiFunction::name, &::name>::call \
        HYBRIDPROF_AFTER_IERR args;                                                                  \
  }
#include "mpi_fortran_functions.def"

// MPI_INIT and MPI_INIT_THREAD have no argc/argv in Fortran.
extern "C" void mpi_init_(MPI_Fint* ierr) {
  int argc = 0;
  char** argv = nullptr;
  *ierr = MPI_Init(&argc, &argv);
}

extern "C" void mpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  int argc = 0;
  char** argv = nullptr;
  *ierr = MPI_Init_thread(&argc, &argv, *required, provided);
}
