// Is a word a plausible return address? The test hpcrun's stack scan uses
// to find a caller where the unwind tables end (JIT code, assembly without
// CFI): the word points into a loaded module's executable code, just after
// a call instruction.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hybridprof {

// What the bytes before a candidate return address end with.
enum class CallKind { kNone, kDirect, kIndirect };

// SIGNAL PATH: pure. `code` holds the `n` bytes just before a candidate
// return address (code[n-1] is the byte right before it; n <= 8): do they
// end with an x86-64 call? kDirect: E8 rel32 (*rel32 is then its
// displacement: the target is the return address + rel32); kIndirect:
// FF /2 (call r/m64) in any of its register, memory, SIB, displacement and
// RIP-relative forms, with or without a REX prefix.
CallKind call_before(const uint8_t* code, size_t n, int32_t* rel32 = nullptr);

// The longest x86-64 call ends_with_call recognizes, in bytes.
inline constexpr size_t kLongestCall = 8;

// SIGNAL PATH: async-signal-safe (LoaderSnapshot's executable segments,
// then plain loads of code bytes inside the segment found). True when
// `address` lies in the executable code of a module the loader snapshot
// holds and is still loaded, and the bytes before it end with a call.
// `callee_is_jit`: the frame whose caller is sought runs code in no module.
// Such code is reached by indirect calls only, so a direct call into a
// module's code is not its caller: a return address an earlier call left
// in the stack's dead bytes (a decoy) is rejected that way.
bool plausible_return_address(uint64_t address, bool callee_is_jit);

}  // namespace hybridprof
