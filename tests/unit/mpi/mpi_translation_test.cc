// MPI's translation without mpirun: each call goes through its interposer's
// code (intercept<F>) over a fake MPI library (fake_mpi.h), and the test
// reads what reached the raw stream: messages matched by peer, tag and
// bytes, requests completed by every wait and test form, communicators
// with their job-wide keys and members, collectives with root and bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/runtime_config.h"
#include "fake_mpi.h"

namespace hybridprof::mpi::testing {
namespace {

using F = MpiFunction;
using K = EventKind;
constexpr uint32_t kWorld = 0;  // MPI_COMM_WORLD's comm id in every process

// --- The fake library's non-blocking side ----------------------------------

// What the fake library reports when it completes a request.
struct Completion {
  int source = 0, tag = 0;
  uint64_t bytes = 0;
  bool cancelled = false;
};
std::map<MPI_Request, Completion> g_completions;
MPI_Request g_next_request = nullptr;  // handed out by the next non-blocking call
bool g_test_finds_complete = true;     // what the test forms find
int g_any_index = 0;                   // which request the any/some forms complete

void complete(MPI_Request* request, MPI_Status* status) {
  const Completion c = g_completions[*request];
  if (status != MPI_STATUS_IGNORE) fill_status(status, c.source, c.tag, c.bytes, c.cancelled);
  *request = fake().request_null;
}
int start_request(MPI_Request* request) {
  *request = g_next_request;
  return MPI_SUCCESS;
}
int isend(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request* request) { return start_request(request); }
int irecv(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request* request) { return start_request(request); }
int iallreduce(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request* request) {
  return start_request(request);
}
int wait(MPI_Request* request, MPI_Status* status) {
  complete(request, status);
  return MPI_SUCCESS;
}
int test(MPI_Request* request, int* flag, MPI_Status* status) {
  *flag = g_test_finds_complete;
  if (*flag) complete(request, status);
  return MPI_SUCCESS;
}
int waitall(int n, MPI_Request requests[], MPI_Status statuses[]) {
  for (int i = 0; i < n; ++i) complete(&requests[i], &statuses[i]);
  return MPI_SUCCESS;
}
int testall(int n, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  *flag = g_test_finds_complete;
  if (*flag) waitall(n, requests, statuses);
  return MPI_SUCCESS;
}
int waitany(int, MPI_Request requests[], int* index, MPI_Status* status) {
  *index = g_any_index;
  complete(&requests[g_any_index], status);
  return MPI_SUCCESS;
}
int testany(int n, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  *flag = g_test_finds_complete;
  *index = MPI_UNDEFINED;
  return *flag ? waitany(n, requests, index, status) : MPI_SUCCESS;
}
int waitsome(int, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  *outcount = 1;
  indices[0] = g_any_index;
  complete(&requests[g_any_index], &statuses[0]);
  return MPI_SUCCESS;
}
int testsome(int n, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  return waitsome(n, requests, outcount, indices, statuses);
}

// --- The fixture ---------------------------------------------------------------

class MpiTranslation : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(::testing::TempDir()) + "/mpi" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".hpr";
    std::remove(path_.c_str());
    fake().reset();
    functions_ = fake().functions();
    use_pmpi(&functions_);
    host_ = std::make_unique<FakeHost>(path_);
  }
  void TearDown() override {
    host_.reset();
    use_pmpi(nullptr);
    std::remove(path_.c_str());
  }
  Traced traced() { return read_traced(*host_, path_); }

  // A request handle of the fake library's, given out by the next
  // non-blocking call, completing as `c` says.
  MPI_Request next_request(Completion c = {}) {
    objects_.push_back(std::make_unique<FakeObject>());
    g_next_request = handle<MPI_Request>(*objects_.back());
    g_completions[g_next_request] = c;
    return g_next_request;
  }
  MPI_Request isend_to(int peer, int tag, int count, Completion c = {}) {
    next_request(c);
    MPI_Request r = nullptr;
    call<F::MPI_Isend>(isend, buffer_, count, fake().int32, peer, tag, fake().world, &r);
    return r;
  }
  MPI_Request irecv_any(int count, Completion c) {
    next_request(c);
    MPI_Request r = nullptr;
    call<F::MPI_Irecv>(irecv, buffer_, count, fake().float64, MPI_ANY_SOURCE, MPI_ANY_TAG, fake().world, &r);
    return r;
  }

  std::string path_;
  Pmpi functions_{};
  std::unique_ptr<FakeHost> host_;
  std::vector<std::unique_ptr<FakeObject>> objects_;
  double buffer_[64] = {};
};

EventFields message(uint32_t comm, uint32_t peer, uint32_t tag, uint64_t sent, uint64_t received,
                    uint64_t request = 0) {
  return EventFields{comm, peer, tag, 0, sent, received, request};
}

// --- Point to point -------------------------------------------------------------

int recv_from_2(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status* status) {
  fill_status(status, 2, 9, 24);
  return MPI_SUCCESS;
}
int recv_from_nobody(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status* status) {
  fill_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  return MPI_SUCCESS;
}
int recv_fails(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*) { return MPI_ERR_TRUNCATE; }
int sendrecv_with_1(const void*, int, MPI_Datatype, int, int, void*, int, MPI_Datatype, int, int, MPI_Comm,
                    MPI_Status* status) {
  fill_status(status, 1, 6, 16);
  return MPI_SUCCESS;
}

TEST_F(MpiTranslation, BlockingMessagesCarryPeerTagCommunicatorAndBytes) {
  FakeMpi& f = fake();
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 10, f.float64, 3, 7, f.world);
  call<F::MPI_Ssend>(HP_SUCCEEDS(MPI_Ssend), buffer_, 10, f.float64, MPI_PROC_NULL, 7, f.world);
  // The program ignores the status: the tracer still learns sender, tag and size.
  call<F::MPI_Recv>(recv_from_2, buffer_, 10, f.float64, MPI_ANY_SOURCE, MPI_ANY_TAG, f.world, MPI_STATUS_IGNORE);
  MPI_Status status;
  call<F::MPI_Sendrecv>(sendrecv_with_1, buffer_, 2, f.int32, 1, 5, buffer_, 4, f.int32, 1, 6, f.world, &status);
  EXPECT_EQ(status.MPI_SOURCE, 1) << "the program gets its status";
  call<F::MPI_Recv>(recv_from_nobody, buffer_, 1, f.byte, MPI_PROC_NULL, 0, f.world, MPI_STATUS_IGNORE);
  call<F::MPI_Recv>(recv_fails, buffer_, 1, f.byte, 0, 0, f.world, MPI_STATUS_IGNORE);

  const Traced t = traced();
  EXPECT_EQ(t.calls, (std::vector<std::string>{"MPI_Send", "MPI_Ssend", "MPI_Recv", "MPI_Sendrecv", "MPI_Recv",
                                               "MPI_Recv"}));
  EXPECT_EQ(t.enters, 6u);
  EXPECT_EQ(t.leaves, 6u);
  // No message to or from MPI_PROC_NULL, none from a receive that failed.
  EXPECT_EQ(t.events, (std::vector<Traced::Event>{{K::kSend, message(kWorld, 3, 7, 80, 0)},
                                                  {K::kRecv, message(kWorld, 2, 9, 0, 24)},
                                                  {K::kSend, message(kWorld, 1, 5, 8, 0)},
                                                  {K::kRecv, message(kWorld, 1, 6, 0, 16)}}));
}

// A send decides before its real call whether to be recorded after it
// (its size): a predefined type's size is remembered, so that decision
// makes no call into MPI; a derived type's handle may be freed and made
// again with another size, so its size is asked every time.
TEST_F(MpiTranslation, PredefinedTypeSizesAreRememberedDerivedOnesAskedEveryTime) {
  FakeMpi& f = fake();
  EXPECT_EQ(type_bytes(f.int32, 3), 12u);
  const int asked = f.type_size_calls;
  uint64_t bytes = 0;
  ASSERT_TRUE(known_type_bytes(f.int32, 5, &bytes));
  EXPECT_EQ(bytes, 20u);
  EXPECT_EQ(type_bytes(f.int32, 7), 28u);
  EXPECT_EQ(f.type_size_calls, asked) << "a predefined type's size is asked once";

  FakeObject object;
  const MPI_Datatype derived = handle<MPI_Datatype>(object);
  f.type_sizes[derived] = 16;
  EXPECT_EQ(type_bytes(derived, 2), 32u);
  EXPECT_FALSE(known_type_bytes(derived, 2, &bytes));
  f.type_sizes[derived] = 24;  // freed, and made again with the same handle
  EXPECT_EQ(type_bytes(derived, 2), 48u);
  EXPECT_EQ(f.type_size_calls, asked + 2);

  // Sends of both kinds carry their sizes, small (recorded after they ran)
  // or large (entered before).
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 10, f.float64, 3, 7, f.world);
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 2, derived, 3, 7, f.world);
  f.type_sizes[derived] = 4096;
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 2, derived, 3, 7, f.world);
  f.type_sizes.erase(derived);
  const Traced t = traced();
  EXPECT_EQ(t.events, (std::vector<Traced::Event>{{K::kSend, message(kWorld, 3, 7, 80, 0)},
                                                  {K::kSend, message(kWorld, 3, 7, 48, 0)},
                                                  {K::kSend, message(kWorld, 3, 7, 8192, 0)}}));
  EXPECT_EQ(t.enters, 3u);
  EXPECT_EQ(t.leaves, 3u);
}

// --- Requests ---------------------------------------------------------------------

// Checks that events name requests consistently: each letter of `expected`
// stands for one request id, the same wherever it appears and different
// from every other letter's.
void expect_requests(const Traced& t, const std::vector<std::pair<EventKind, char>>& expected) {
  ASSERT_EQ(t.events.size(), expected.size()) << "events: " << t.events.size();
  std::map<char, uint64_t> ids;
  std::map<uint64_t, char> letters;
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto [kind, letter] = expected[i];
    const uint64_t id = t.events[i].fields.request;
    EXPECT_EQ(t.events[i].kind, kind) << "event " << i;
    EXPECT_NE(id, 0u) << "event " << i;
    auto [it, fresh] = ids.emplace(letter, id);
    EXPECT_EQ(it->second, id) << "event " << i << " names another request than " << letter;
    if (fresh) {
      EXPECT_TRUE(letters.emplace(id, letter).second) << "requests " << letter << " and " << letters[id]
                                                      << " share an id";
    }
  }
}

TEST_F(MpiTranslation, RequestsAreCompletedByEveryWaitAndTestForm) {
  FakeMpi& f = fake();
  // Wait
  MPI_Request a = isend_to(1, 3, 4);
  call<F::MPI_Wait>(wait, &a, MPI_STATUS_IGNORE);
  EXPECT_EQ(a, f.request_null);
  // Test: not yet, then done (the receive's sender, tag and size from the status)
  MPI_Request b = irecv_any(8, {5, 11, 40});
  int flag = 1;
  g_test_finds_complete = false;
  call<F::MPI_Test>(test, &b, &flag, MPI_STATUS_IGNORE);
  EXPECT_EQ(flag, 0);
  g_test_finds_complete = true;
  call<F::MPI_Test>(test, &b, &flag, MPI_STATUS_IGNORE);
  // Waitall and Testall, statuses ignored
  MPI_Request cd[2] = {isend_to(2, 0, 1), irecv_any(2, {2, 1, 16})};
  call<F::MPI_Waitall>(waitall, 2, cd, MPI_STATUSES_IGNORE);
  MPI_Request ef[2] = {isend_to(3, 0, 1), irecv_any(2, {3, 2, 8})};
  g_test_finds_complete = false;
  call<F::MPI_Testall>(testall, 2, ef, &flag, MPI_STATUSES_IGNORE);
  g_test_finds_complete = true;
  call<F::MPI_Testall>(testall, 2, ef, &flag, MPI_STATUSES_IGNORE);
  // Waitany (the second), Testany (none yet, then the first)
  MPI_Request gh[2] = {isend_to(1, 4, 1), isend_to(1, 5, 1)};
  int index = -1;
  g_any_index = 1;
  call<F::MPI_Waitany>(waitany, 2, gh, &index, MPI_STATUS_IGNORE);
  g_test_finds_complete = false;
  call<F::MPI_Testany>(testany, 2, gh, &index, &flag, MPI_STATUS_IGNORE);
  g_test_finds_complete = true;
  g_any_index = 0;
  call<F::MPI_Testany>(testany, 2, gh, &index, &flag, MPI_STATUS_IGNORE);
  // Waitsome (the first; the other is tested), Testsome (the second)
  MPI_Request ij[2] = {isend_to(1, 6, 1), irecv_any(1, {1, 7, 8})};
  int outcount = 0, indices[2] = {};
  g_any_index = 0;
  call<F::MPI_Waitsome>(waitsome, 2, ij, &outcount, indices, MPI_STATUSES_IGNORE);
  g_any_index = 1;
  call<F::MPI_Testsome>(testsome, 2, ij, &outcount, indices, MPI_STATUSES_IGNORE);
  // Released before completion: OTF2 takes the release as the send's completion.
  MPI_Request k = isend_to(2, 8, 1);
  call<F::MPI_Request_free>(HP_SUCCEEDS(MPI_Request_free), &k);
  // Cancelled.
  MPI_Request l = irecv_any(1, {0, 0, 0, /*cancelled=*/true});
  call<F::MPI_Wait>(wait, &l, MPI_STATUS_IGNORE);

  const Traced t = traced();
  expect_requests(t, {{K::kIsend, 'a'},        {K::kIsendComplete, 'a'}, {K::kIrecvRequest, 'b'},
                      {K::kRequestTest, 'b'},  {K::kIrecv, 'b'},         {K::kIsend, 'c'},
                      {K::kIrecvRequest, 'd'}, {K::kIsendComplete, 'c'}, {K::kIrecv, 'd'},
                      {K::kIsend, 'e'},        {K::kIrecvRequest, 'f'},  {K::kRequestTest, 'e'},
                      {K::kRequestTest, 'f'},  {K::kIsendComplete, 'e'}, {K::kIrecv, 'f'},
                      {K::kIsend, 'g'},        {K::kIsend, 'h'},         {K::kIsendComplete, 'h'},
                      {K::kRequestTest, 'g'},  {K::kIsendComplete, 'g'}, {K::kIsend, 'i'},
                      {K::kIrecvRequest, 'j'}, {K::kIsendComplete, 'i'}, {K::kRequestTest, 'j'},
                      {K::kIrecv, 'j'},        {K::kIsend, 'k'},         {K::kIsendComplete, 'k'},
                      {K::kIrecvRequest, 'l'}, {K::kRequestCancelled, 'l'}});
  if (HasFailure()) return;
  // What the sends said, and the receives' messages as their statuses described them.
  EXPECT_EQ(t.events[0].fields, message(kWorld, 1, 3, 16, 0, t.events[0].fields.request));
  EXPECT_EQ(t.events[4].fields, message(kWorld, 5, 11, 0, 40, t.events[2].fields.request));
  EXPECT_EQ(t.events[8].fields, message(kWorld, 2, 1, 0, 16, t.events[6].fields.request));
  EXPECT_EQ(t.events[14].fields, message(kWorld, 3, 2, 0, 8, t.events[10].fields.request));
  EXPECT_EQ(t.events[24].fields, message(kWorld, 1, 7, 0, 8, t.events[21].fields.request));
  EXPECT_EQ(t.enters, t.leaves);
}

// A library may give every send it finished inside MPI_Isend one shared
// complete request (Open MPI's ob1 returns &ompi_request_empty): each send
// is still a request of its own, completed in the order they were made,
// by one Waitall or by Wait after Wait, beside a receive of its own handle.
TEST_F(MpiTranslation, SendsSharingOneCompletedHandleAreEachCompleted) {
  const MPI_Request shared = next_request();
  auto isend_shared = [&](int tag) {
    g_next_request = shared;
    MPI_Request r = nullptr;
    call<F::MPI_Isend>(isend, buffer_, 1, fake().int32, 1, tag, fake().world, &r);
    return r;
  };
  MPI_Request three[3] = {isend_shared(0), isend_shared(1), isend_shared(2)};
  EXPECT_TRUE(three[0] == shared && three[2] == shared);
  call<F::MPI_Waitall>(waitall, 3, three, MPI_STATUSES_IGNORE);
  MPI_Request mixed[3] = {isend_shared(3), irecv_any(1, {1, 4, 8}), isend_shared(5)};
  for (MPI_Request& r : mixed) call<F::MPI_Wait>(wait, &r, MPI_STATUS_IGNORE);
  const Traced t = traced();
  expect_requests(t, {{K::kIsend, 'a'},         {K::kIsend, 'b'},         {K::kIsend, 'c'},
                      {K::kIsendComplete, 'a'}, {K::kIsendComplete, 'b'}, {K::kIsendComplete, 'c'},
                      {K::kIsend, 'd'},         {K::kIrecvRequest, 'e'},  {K::kIsend, 'f'},
                      {K::kIsendComplete, 'd'}, {K::kIrecv, 'e'},         {K::kIsendComplete, 'f'}});
}

// osu_bw's window: 64 sends completed by one Waitall, then 64 receives
// (their senders and sizes from the statuses) by another, a send and a
// receive between them in a third, and a Waitall completing sends out of
// the order they were made: each completion names its own request, and the
// receives keep each its own status.
TEST_F(MpiTranslation, AWaitallOfAWindowCompletesEachRequest) {
  constexpr int kWindow = 64;
  MPI_Request sends[kWindow], receives[kWindow];
  for (MPI_Request& r : sends) r = isend_to(1, 9, 2);
  call<F::MPI_Waitall>(waitall, kWindow, sends, MPI_STATUSES_IGNORE);
  for (int i = 0; i < kWindow; ++i) receives[i] = irecv_any(1, {1 + i % 2, 9, 8});
  call<F::MPI_Waitall>(waitall, kWindow, receives, MPI_STATUSES_IGNORE);
  MPI_Request pair[2] = {isend_to(1, 3, 1), irecv_any(1, {1, 3, 8})};
  call<F::MPI_Waitall>(waitall, 2, pair, MPI_STATUSES_IGNORE);
  MPI_Request abc[3] = {isend_to(1, 5, 1), isend_to(1, 5, 1), isend_to(1, 5, 1)};
  MPI_Request cab[3] = {abc[2], abc[0], abc[1]};
  call<F::MPI_Waitall>(waitall, 3, cab, MPI_STATUSES_IGNORE);

  const Traced t = traced();
  std::vector<std::pair<EventKind, char>> expected;
  for (int i = 0; i < kWindow; ++i) expected.push_back({K::kIsend, char('!' + i)});
  for (int i = 0; i < kWindow; ++i) expected.push_back({K::kIsendComplete, char('!' + i)});
  for (int i = 0; i < kWindow; ++i) expected.push_back({K::kIrecvRequest, char('a' + i)});  // past '!' + 63
  for (int i = 0; i < kWindow; ++i) expected.push_back({K::kIrecv, char('a' + i)});
  // The rest's letters past the windows' 128.
  const char p = char(200), q = char(201), x = char(202), y = char(203), z = char(204);
  expected.insert(expected.end(), {{K::kIsend, p}, {K::kIrecvRequest, q}, {K::kIsendComplete, p}, {K::kIrecv, q},
                                   {K::kIsend, x}, {K::kIsend, y}, {K::kIsend, z}, {K::kIsendComplete, z},
                                   {K::kIsendComplete, x}, {K::kIsendComplete, y}});
  expect_requests(t, expected);
  if (HasFailure()) return;
  for (int i = 0; i < kWindow; ++i) {
    const auto& e = t.events[size_t(3 * kWindow + i)];
    EXPECT_EQ(e.fields, message(kWorld, uint32_t(1 + i % 2), 9, 0, 8, e.fields.request)) << "receive " << i;
  }
  EXPECT_EQ(t.enters, t.leaves);
}

TEST_F(MpiTranslation, PersistentRequestsGetANewIdAtEveryStart) {
  FakeMpi& f = fake();
  const MPI_Request handle = next_request();
  MPI_Request p = nullptr;
  call<F::MPI_Send_init>(isend, buffer_, 3, f.float64, 2, 4, f.world, &p);
  for (int round = 0; round < 2; ++round) {
    p = handle;  // a persistent request keeps its handle across completions
    call<F::MPI_Start>(HP_SUCCEEDS(MPI_Start), &p);
    call<F::MPI_Wait>(wait, &p, MPI_STATUS_IGNORE);
  }
  p = handle;
  call<F::MPI_Request_free>(HP_SUCCEEDS(MPI_Request_free), &p);  // inactive: nothing completes

  const Traced t = traced();
  expect_requests(t, {{K::kIsend, 'a'}, {K::kIsendComplete, 'a'}, {K::kIsend, 'b'}, {K::kIsendComplete, 'b'}});
  if (HasFailure()) return;
  EXPECT_EQ(t.events[2].fields, message(kWorld, 2, 4, 24, 0, t.events[2].fields.request));
}

// --- Communicators ------------------------------------------------------------------

MPI_Comm g_made_comm = nullptr;  // what the next communicator-making call gives
int comm_split(MPI_Comm, int, int, MPI_Comm* out) {
  *out = g_made_comm;
  return MPI_SUCCESS;
}
int comm_dup(MPI_Comm, MPI_Comm* out) { return comm_split(nullptr, 0, 0, out); }
int intercomm_create(MPI_Comm, int, MPI_Comm, int, int, MPI_Comm* out) { return comm_split(nullptr, 0, 0, out); }

TEST_F(MpiTranslation, CommunicatorsGetAJobWideKeyAndTheirMembers) {
  FakeMpi& f = fake();
  f.set_world(2, 4);
  int argc = 0;
  char** argv = nullptr;
  int* pargc = &argc;
  char*** pargv = &argv;
  call<F::MPI_Init>(HP_SUCCEEDS(MPI_Init), pargc, pargv);
  EXPECT_EQ(f.comm_dups, 1) << "the tracer's own communicator for its clock offsets";

  // Split: this rank is rank 1 of {world 3, world 2}; the members agree on rank 0's key.
  g_made_comm = f.make_comm({1, {3, 2}, false});
  const MPI_Comm split = g_made_comm;
  f.root_key = (uint64_t{3 + 1} << 32) | 9;
  MPI_Comm out = nullptr;
  call<F::MPI_Comm_split>(comm_split, f.world, 0, 0, &out);
  EXPECT_EQ(f.bcasts_of_keys, 1);
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 1, f.byte, 0, 0, split);
  // Not made through an intercepted call: known to this process only.
  const MPI_Comm unseen = f.make_comm({0, {2}, false});
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 1, f.byte, 0, 0, unseen);
  // An intercommunicator: no agreement (its bcast needs MPI_ROOT roles), a local key.
  g_made_comm = f.make_comm({0, {2}, true});
  call<F::MPI_Intercomm_create>(intercomm_create, f.self, 0, f.world, 0, 5, &out);
  EXPECT_EQ(f.bcasts_of_keys, 1);
  // Freed, then its handle comes back from another call: a new communicator.
  MPI_Comm freed = split;
  call<F::MPI_Comm_free>(HP_SUCCEEDS(MPI_Comm_free), &freed);
  g_made_comm = split;
  f.root_key = (uint64_t{2 + 1} << 32) | 12;
  call<F::MPI_Comm_dup>(comm_dup, f.world, &out);
  call<F::MPI_Send>(HP_SUCCEEDS(MPI_Send), buffer_, 1, f.byte, 1, 0, split);
  // MPI_COMM_NULL out (MPI_UNDEFINED color): nothing to define.
  g_made_comm = f.comm_null;
  call<F::MPI_Comm_split>(comm_split, f.world, MPI_UNDEFINED, 0, &out);

  const Traced t = traced();
  ASSERT_EQ(t.worlds.size(), 1u);
  EXPECT_EQ(t.worlds[0].rank, 2u);
  EXPECT_EQ(t.worlds[0].size, 4u);
  ASSERT_EQ(t.comms.size(), 6u) << "world, self, split, unseen, intercomm, dup";
  const CommDefinition* world = t.comm(kWorld);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->key, kCommWorldKey);
  EXPECT_EQ(t.comms[1].key, kCommSelfKey);
  EXPECT_EQ(t.comms[1].members, std::vector<uint32_t>{2});

  ASSERT_EQ(t.events.size(), 3u);
  const CommDefinition* first = t.comm(t.events[0].fields.comm);
  ASSERT_NE(first, nullptr) << "a send names a defined communicator";
  EXPECT_EQ(first->name, "MPI_Comm_split");
  EXPECT_EQ(first->key, (uint64_t{4} << 32) | 9) << "rank 0's key";
  EXPECT_EQ(first->parent, kWorld);
  EXPECT_EQ(first->members, (std::vector<uint32_t>{3, 2}));

  const CommDefinition* local = t.comm(t.events[1].fields.comm);
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->parent, kNoParentComm);
  EXPECT_NE(local->key & (uint64_t{1} << 63), 0u) << "a key of this process only";

  const CommDefinition& inter = t.comms[4];
  EXPECT_EQ(inter.name, "MPI_Intercomm_create");
  EXPECT_NE(inter.key & (uint64_t{1} << 63), 0u);
  EXPECT_NE(inter.key, local->key);

  const CommDefinition* again = t.comm(t.events[2].fields.comm);
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again->id, first->id) << "a freed communicator's handle is a new communicator";
  EXPECT_EQ(again->name, "MPI_Comm_dup");
  EXPECT_EQ(again->key, (uint64_t{3} << 32) | 12);
}

// --- Collectives ----------------------------------------------------------------------

EventFields collective(CollectiveOp op, uint32_t root, uint64_t sent, uint64_t received, uint64_t request = 0) {
  return EventFields{kWorld, root, 0, uint32_t(op), sent, received, request};
}

TEST_F(MpiTranslation, CollectivesCarryTheirRootAndThisRanksBytes) {
  FakeMpi& f = fake();
  f.set_world(1, 4);
  MPI_Op sum = handle<MPI_Op>(f.min_object);
  double* in = buffer_;
  double* out = buffer_ + 32;
  call<F::MPI_Bcast>(HP_SUCCEEDS(MPI_Bcast), in, 10, f.float64, 1, f.world);  // the root sends
  call<F::MPI_Bcast>(HP_SUCCEEDS(MPI_Bcast), in, 10, f.float64, 0, f.world);  // the others receive
  call<F::MPI_Reduce>(HP_SUCCEEDS(MPI_Reduce), in, out, 3, f.int32, sum, 1, f.world);
  call<F::MPI_Allreduce>(HP_SUCCEEDS(MPI_Allreduce), MPI_IN_PLACE, out, 5, f.float64, sum, f.world);
  const int counts[4] = {1, 2, 3, 4}, displs[4] = {0, 1, 3, 6};
  call<F::MPI_Gatherv>(HP_SUCCEEDS(MPI_Gatherv), in, 2, f.int32, out, counts, displs, f.int32, 1, f.world);
  call<F::MPI_Gatherv>(HP_SUCCEEDS(MPI_Gatherv), in, 2, f.int32, out, counts, displs, f.int32, 3, f.world);
  call<F::MPI_Alltoall>(HP_SUCCEEDS(MPI_Alltoall), MPI_IN_PLACE, 0, f.byte, out, 2, f.float64, f.world);
  call<F::MPI_Barrier>(HP_SUCCEEDS(MPI_Barrier), f.world);
  // Non-blocking: the request at the call, the operation at its completion.
  const MPI_Request handle = next_request();
  MPI_Request r = nullptr;
  call<F::MPI_Iallreduce>(iallreduce, in, out, 6, f.int32, sum, f.world, &r);
  EXPECT_EQ(r, handle);
  call<F::MPI_Wait>(wait, &r, MPI_STATUS_IGNORE);

  const Traced t = traced();
  using Op = CollectiveOp;
  const uint32_t none = otf2::kRootNone;
  const std::vector<std::pair<Op, EventFields>> expected = {
      {Op::kBcast, collective(Op::kBcast, 1, 80, 0)},
      {Op::kBcast, collective(Op::kBcast, 0, 0, 80)},
      {Op::kReduce, collective(Op::kReduce, 1, 12, 12)},
      {Op::kAllreduce, collective(Op::kAllreduce, none, 40, 40)},
      {Op::kGatherv, collective(Op::kGatherv, 1, 8, 40)},  // the root receives every count
      {Op::kGatherv, collective(Op::kGatherv, 3, 8, 0)},
      {Op::kAlltoall, collective(Op::kAlltoall, none, 64, 64)},  // in place: it sends what it receives
      {Op::kBarrier, collective(Op::kBarrier, none, 0, 0)},
  };
  ASSERT_EQ(t.events.size(), 2 * expected.size() + 2);
  for (size_t i = 0; i < expected.size(); ++i) {
    // A blocking collective begins at its enter (an empty event) and ends with its bytes.
    EXPECT_EQ(t.events[2 * i].kind, K::kCollectiveBegin) << i;
    EXPECT_EQ(t.events[2 * i].fields, EventFields{}) << i;
    EXPECT_EQ(t.events[2 * i + 1].kind, K::kCollectiveEnd) << i;
    EXPECT_EQ(t.events[2 * i + 1].fields, expected[i].second) << collective_op_name(expected[i].first) << " " << i;
  }
  const Traced::Event& request = t.events[2 * expected.size()];
  const Traced::Event& done = t.events[2 * expected.size() + 1];
  EXPECT_EQ(request.kind, K::kNonBlockingCollectiveRequest);
  EXPECT_EQ(done.kind, K::kNonBlockingCollectiveComplete);
  EXPECT_EQ(done.fields, collective(Op::kAllreduce, none, 24, 24, request.fields.request));
  EXPECT_EQ(t.enters, t.leaves);
}

// --- Finalize --------------------------------------------------------------------------

int g_real_finalizes = 0;
int real_finalize() {
  ++g_real_finalizes;
  return MPI_SUCCESS;
}
int finalized(int* flag) {
  *flag = g_real_finalizes > 0;
  return MPI_SUCCESS;
}

TEST_F(MpiTranslation, FinalizeRunsAtOnceWithoutAJobArchive) {
  unsetenv(env::kJobArchive);
  g_real_finalizes = 0;
  call<F::MPI_Finalize>(real_finalize);
  EXPECT_EQ(g_real_finalizes, 1);
  EXPECT_EQ(host_->exit_hook, nullptr);
}

// Last in this file: a deferred finalize stays deferred in this process.
TEST_F(MpiTranslation, FinalizeWaitsForTheJobArchiveAtExitAndSaysItIsDone) {
  setenv(env::kJobArchive, "/nonexistent/job", 1);
  g_real_finalizes = 0;
  call<F::MPI_Finalize>(real_finalize);
  EXPECT_EQ(g_real_finalizes, 0) << "the real one runs at exit, after the archive";
  EXPECT_NE(host_->exit_hook, nullptr);
  int flag = 0;
  call<F::MPI_Finalized>(finalized, &flag);
  EXPECT_EQ(flag, 1) << "the program is told MPI is finalized";
  unsetenv(env::kJobArchive);
  const Traced t = traced();
  EXPECT_EQ(t.calls, (std::vector<std::string>{"MPI_Finalize", "MPI_Finalized"}));
}

}  // namespace
}  // namespace hybridprof::mpi::testing
