// The stack scan's parts: the call-instruction test behind a return
// address, the scan window (inside the thread's stack, bounded), and the
// whole test on real code (a return address in this program, decoys that
// are not).
#include "unwind/stack_scan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "unwind/loader_snapshot.h"
#include "unwind/return_address.h"

namespace hybridprof {
namespace {

CallKind kind_of(std::vector<uint8_t> bytes) { return call_before(bytes.data(), bytes.size()); }

TEST(ReturnAddress, CallFormsBeforeIt) {
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0xE8, 1, 2, 3, 4}), CallKind::kDirect);            // call rel32
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0xD0}), CallKind::kIndirect);  // call rax
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x41, 0xFF, 0xD3}), CallKind::kIndirect);  // call r11
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0x10}), CallKind::kIndirect);  // call [rax]
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0x50, 0x18}), CallKind::kIndirect);  // call [rax+0x18]
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0xFF, 0x54, 0x24, 0x08}), CallKind::kIndirect);  // call [rsp+8]
  EXPECT_EQ(kind_of({0x90, 0x90, 0xFF, 0x15, 1, 2, 3, 4}), CallKind::kIndirect);              // call [rip+disp32]
  EXPECT_EQ(kind_of({0x90, 0x90, 0xFF, 0x90, 1, 2, 3, 4}), CallKind::kIndirect);              // call [rax+disp32]
  EXPECT_EQ(kind_of({0x90, 0xFF, 0x94, 0xC8, 1, 2, 3, 4}), CallKind::kIndirect);              // call [rax+rcx*8+disp32]
}

TEST(ReturnAddress, OtherBytesAreNoCall) {
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90}), CallKind::kNone);
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0xE0}), CallKind::kNone);  // jmp rax (FF /4)
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0x50}), CallKind::kNone);  // [rax+disp8] cut short
  EXPECT_EQ(kind_of({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xC3}), CallKind::kNone);  // ret
  EXPECT_EQ(kind_of({0xE8, 1, 2, 3}), CallKind::kNone);  // fewer bytes than a call
}

TEST(ReturnAddress, DirectCallKeepsItsDisplacement) {
  const uint8_t code[] = {0xE8, 0x10, 0x00, 0x00, 0x00};
  int32_t rel32 = 0;
  EXPECT_EQ(call_before(code, sizeof code, &rel32), CallKind::kDirect);
  EXPECT_EQ(rel32, 0x10);
}

// A fake stack: the scan reads only inside the bounds and the window.
TEST(StackScan, OffersEachAcceptedWordInOrderWithinTheWindow) {
  std::vector<uint64_t> stack(64, 0);
  stack[3] = 7;
  stack[10] = 7;
  stack[40] = 7;  // beyond a 32-word window
  const uint64_t low = reinterpret_cast<uint64_t>(stack.data());
  const StackBounds bounds{low, low + stack.size() * 8};
  StackScan scan(low + 8, bounds, 32 * 8);
  auto is_seven = [](uint64_t w) { return w == 7; };
  EXPECT_EQ(scan.next(is_seven), low + 3 * 8);
  EXPECT_EQ(scan.next(is_seven), low + 10 * 8);
  EXPECT_EQ(scan.next(is_seven), 0u) << "word 40 lies past the window";
}

TEST(StackScan, StopsAtTheStackEnd) {
  std::vector<uint64_t> stack(16, 7);
  const uint64_t low = reinterpret_cast<uint64_t>(stack.data());
  const StackBounds bounds{low, low + 4 * 8};  // the stack ends after word 3
  StackScan scan(low, bounds, 1 << 20);
  int offered = 0;
  while (scan.next([](uint64_t w) { return w == 7; }) != 0) ++offered;
  EXPECT_EQ(offered, 4);
}

TEST(StackScan, AStackPointerOutsideTheStackScansNothing) {
  std::vector<uint64_t> stack(16, 7), elsewhere(16, 7);
  const uint64_t low = reinterpret_cast<uint64_t>(stack.data());
  StackScan scan(reinterpret_cast<uint64_t>(elsewhere.data()), StackBounds{low, low + 16 * 8}, 1 << 20);
  EXPECT_EQ(scan.next([](uint64_t) { return true; }), 0u);
}

TEST(StackScan, AnUnalignedStackPointerStartsAtTheNextSlot) {
  std::vector<uint64_t> stack(8, 0);
  stack[1] = 7;
  const uint64_t low = reinterpret_cast<uint64_t>(stack.data());
  StackScan scan(low + 3, StackBounds{low, low + 8 * 8}, 1 << 20);
  EXPECT_EQ(scan.next([](uint64_t w) { return w == 7; }), low + 8);
}

TEST(StackScan, ThisThreadsStackHoldsItsLocals) {
  remember_thread_stack();
  int local = 0;
  EXPECT_TRUE(this_thread_stack().contains(reinterpret_cast<uint64_t>(&local)));
}

// Real code: the return address of a call in this program is plausible;
// a function's first byte, data, and a return address whose call goes
// directly into a module (when the callee runs JIT code) are not.
__attribute__((noinline)) uint64_t return_address_of_this_call() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

TEST(ReturnAddress, PlausibleOnlyInsideCodeAfterACall) {
  LoaderSnapshot::instance().rebuild();
  const uint64_t ret = return_address_of_this_call();
  EXPECT_TRUE(plausible_return_address(ret, false));
  static const uint64_t data_word = 0;
  EXPECT_FALSE(plausible_return_address(reinterpret_cast<uint64_t>(&data_word), false)) << "data is no code";
  uint64_t on_stack = 0;
  EXPECT_FALSE(plausible_return_address(reinterpret_cast<uint64_t>(&on_stack), false)) << "the stack is no code";
  EXPECT_FALSE(plausible_return_address(0x10, false));
  // The call before `ret` is direct (E8) into this program's code: the
  // caller of a function in this program, never of JIT code.
  uint8_t before[5];
  std::memcpy(before, reinterpret_cast<const void*>(ret - 5), 5);
  if (before[0] == 0xE8) {
    EXPECT_FALSE(plausible_return_address(ret, true));
  }
}

// A fake stack with decoys: only the words that are return addresses are
// offered, in the order they lie above the stack pointer.
TEST(StackScan, FindsTheReturnAddressAmongDecoys) {
  LoaderSnapshot::instance().rebuild();
  const uint64_t ret = return_address_of_this_call();
  static const uint64_t data_word = 0;
  std::vector<uint64_t> stack = {
      0,
      reinterpret_cast<uint64_t>(&data_word),                     // a pointer to data
      reinterpret_cast<uint64_t>(&return_address_of_this_call),   // a function pointer: no call before it
      0xdeadbeef0000ull,                                          // garbage
      ret,                                                        // the return address
      ret,
  };
  const uint64_t low = reinterpret_cast<uint64_t>(stack.data());
  StackScan scan(low, StackBounds{low, low + stack.size() * 8}, 4 * 8 + 8);
  auto plausible = [](uint64_t w) { return plausible_return_address(w, false); };
  EXPECT_EQ(scan.next(plausible), low + 4 * 8);
  EXPECT_EQ(scan.next(plausible), 0u) << "the second copy lies past the window";
}

}  // namespace
}  // namespace hybridprof
