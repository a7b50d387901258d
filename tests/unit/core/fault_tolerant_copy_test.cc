// Plain-load copies that survive faults, and safe_read on an armed thread:
// the same answers as process_vm_readv for mapped, unmapped, protected and
// past-the-file (SIGBUS) memory.
#include "sigsafe/fault_tolerant_copy.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "sigsafe/safe_read.h"

namespace hybridprof {
namespace {

int g_resumed = 0;

// The handler a runtime installs: ours first, anything else is a real crash.
void on_fault(int signal, siginfo_t*, void* ucontext) {
  if (resume_after_fault(ucontext)) {
    ++g_resumed;
    return;
  }
  ::signal(signal, SIG_DFL);  // let the fault happen again, fatally
}

class FaultTolerantCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction a {};
    a.sa_sigaction = on_fault;
    a.sa_flags = SA_SIGINFO;
    sigemptyset(&a.sa_mask);
    ASSERT_EQ(sigaction(SIGSEGV, &a, &old_segv_), 0);
    ASSERT_EQ(sigaction(SIGBUS, &a, &old_bus_), 0);
    page_ = size_t(sysconf(_SC_PAGESIZE));
    // Three pages: readable, inaccessible, unmapped.
    void* p = mmap(nullptr, 3 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    base_ = static_cast<uint8_t*>(p);
    for (size_t i = 0; i < page_; ++i) base_[i] = uint8_t(i * 7);
    ASSERT_EQ(mprotect(base_ + page_, page_, PROT_NONE), 0);
    ASSERT_EQ(munmap(base_ + 2 * page_, page_), 0);
    g_resumed = 0;
  }
  void TearDown() override {
    munmap(base_, 2 * page_);
    sigaction(SIGSEGV, &old_segv_, nullptr);
    sigaction(SIGBUS, &old_bus_, nullptr);
  }
  uint64_t at(size_t offset) const { return reinterpret_cast<uint64_t>(base_ + offset); }

  struct sigaction old_segv_ {}, old_bus_{};
  size_t page_ = 0;
  uint8_t* base_ = nullptr;
};

TEST_F(FaultTolerantCopy, CopiesReadableMemory) {
  uint8_t out[300];
  ASSERT_TRUE(copy_or_fault(out, at(100), sizeof out));
  EXPECT_EQ(std::memcmp(out, base_ + 100, sizeof out), 0);
  EXPECT_EQ(g_resumed, 0);
}

TEST_F(FaultTolerantCopy, FaultsAreResumedAsFalse) {
  uint8_t out[64];
  EXPECT_FALSE(copy_or_fault(out, at(page_), 8)) << "inaccessible page";
  EXPECT_FALSE(copy_or_fault(out, at(2 * page_ + 16), 8)) << "unmapped page";
  EXPECT_FALSE(copy_or_fault(out, at(page_ - 32), sizeof out)) << "straddles into the inaccessible page";
  EXPECT_FALSE(copy_or_fault(out, 0, 8)) << "null";
  EXPECT_EQ(g_resumed, 3);
  // The thread goes on as before.
  ASSERT_TRUE(copy_or_fault(out, at(0), sizeof out));
  EXPECT_EQ(std::memcmp(out, base_, sizeof out), 0);
}

TEST_F(FaultTolerantCopy, PastTheEndOfAFileIsSigbus) {
  char path[] = "/tmp/hybridprof-ftc-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ASSERT_EQ(ftruncate(fd, 16), 0);
  void* p = mmap(nullptr, 2 * page_, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  uint64_t v = 0;
  EXPECT_TRUE(copy_or_fault(&v, reinterpret_cast<uint64_t>(p), 8));
  EXPECT_FALSE(copy_or_fault(&v, reinterpret_cast<uint64_t>(p) + page_, 8)) << "beyond the file: SIGBUS";
  EXPECT_EQ(g_resumed, 1);
  munmap(p, 2 * page_);
}

TEST_F(FaultTolerantCopy, AFaultOutsideTheCopyIsNotResumed) {
  ucontext_t uc;
  ASSERT_EQ(getcontext(&uc), 0);
  EXPECT_FALSE(resume_after_fault(&uc));
}

// safe_read and safe_read_gather give the same answers whether the thread
// is armed (plain copies) or not (process_vm_readv).
TEST_F(FaultTolerantCopy, ArmedReadsAnswerAsSystemCallsDo) {
  const uint64_t addresses[] = {at(8), at(page_ - 4), at(page_ + 8), at(2 * page_), 0};
  for (bool armed : {false, true}) {
    FaultTolerantReads reads(armed);
    EXPECT_EQ(fault_tolerant_reads(), armed);
    for (uint64_t a : addresses) {
      uint64_t v = 0;
      const bool expect = a == at(8);
      EXPECT_EQ(safe_read_value(a, &v), expect) << "armed " << armed << " offset " << a - at(0);
      if (expect) {
        uint64_t want;
        std::memcpy(&want, base_ + 8, 8);
        EXPECT_EQ(v, want);
      }
    }
    // Gathers stop at the first element that is not readable.
    uint8_t a[16], b[16], c[16];
    const iovec local[3] = {{a, 16}, {b, 16}, {c, 16}};
    const iovec remote[3] = {{base_ + 16, 16}, {base_ + page_ + 16, 16}, {base_ + 64, 16}};
    EXPECT_EQ(safe_read_gather(local, remote, 3), 1u) << "armed " << armed;
    EXPECT_EQ(std::memcmp(a, base_ + 16, 16), 0);
    const iovec readable[2] = {remote[0], remote[2]};
    const iovec into[2] = {local[0], local[2]};
    EXPECT_EQ(safe_read_gather(into, readable, 2), 2u) << "armed " << armed;
    EXPECT_EQ(std::memcmp(c, base_ + 64, 16), 0);
  }
  EXPECT_FALSE(fault_tolerant_reads());
  EXPECT_GT(g_resumed, 0) << "the armed reads faulted and were resumed";
}

}  // namespace
}  // namespace hybridprof
