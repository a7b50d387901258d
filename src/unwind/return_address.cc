#include "unwind/return_address.h"

#include <cstring>

#include "unwind/loader_snapshot.h"

namespace hybridprof {
namespace {

// Length of an FF /2 instruction from its ModRM byte on (ModRM, SIB,
// displacement), given the bytes after the opcode; 0 when `modrm` is not
// the /2 form.
size_t call_rm_length(const uint8_t* after_opcode, size_t available) {
  if (available == 0) return 0;
  const uint8_t modrm = after_opcode[0];
  if (((modrm >> 3) & 7) != 2) return 0;
  const uint8_t mod = modrm >> 6, rm = modrm & 7;
  if (mod == 3) return 1;  // call reg
  size_t length = 1;
  bool sib_base5 = false;
  if (rm == 4) {  // a SIB byte follows
    if (available < 2) return 0;
    sib_base5 = (after_opcode[1] & 7) == 5;
    ++length;
  }
  if (mod == 0) {
    if (rm == 5 || sib_base5) length += 4;  // RIP-relative, or disp32 with no base
  } else {
    length += mod == 1 ? 1 : 4;
  }
  return length;
}

}  // namespace

CallKind call_before(const uint8_t* code, size_t n, int32_t* rel32) {
  if (n >= 5 && code[n - 5] == 0xE8) {  // call rel32
    if (rel32) std::memcpy(rel32, code + n - 4, 4);
    return CallKind::kDirect;
  }
  // call r/m64: FF, ModRM [SIB] [disp], possibly after a REX prefix.
  for (size_t k = 2; k <= n && k <= kLongestCall; ++k) {
    const uint8_t* start = code + (n - k);
    size_t opcode = 0;
    if (start[0] == 0xFF) opcode = 0;
    else if ((start[0] & 0xF0) == 0x40 && k >= 3 && start[1] == 0xFF) opcode = 1;
    else continue;
    const size_t rest = k - opcode - 1;
    if (call_rm_length(start + opcode + 1, rest) == rest) return CallKind::kIndirect;
  }
  return CallKind::kNone;
}

bool plausible_return_address(uint64_t address, bool callee_is_jit) {
  LoaderSnapshot& snapshot = LoaderSnapshot::instance();
  uint64_t segment_start = 0;
  if (!snapshot.in_executable_code(address - 1, &segment_start)) return false;
  const uint64_t from = address - segment_start >= kLongestCall ? address - kLongestCall : segment_start;
  int32_t rel32 = 0;
  switch (call_before(reinterpret_cast<const uint8_t*>(from), size_t(address - from), &rel32)) {
    case CallKind::kNone: return false;
    case CallKind::kIndirect: return true;
    case CallKind::kDirect: {
      if (!callee_is_jit) return true;
      uint64_t target_segment = 0;
      return !snapshot.in_executable_code(address + uint64_t(int64_t(rel32)), &target_segment);
    }
  }
  return false;
}

}  // namespace hybridprof
