// Shared library the symbolizer tests dlopen. Built with -g -O2 like real code.
// Each symfix_line_* global holds the source line of the thing it names, taken
// from __LINE__, so tests compare against the compiler's facts, not typed numbers.
// Each function's first statement is on the line after its opening line: the
// entry instruction belongs to the opening line when the function has a prologue
// (e.g. under sanitizers), else to the first statement (at -O2 GCC then puts a
// zero-length row for the opening line at the same address, and the last row at
// an address is the one describing its instruction, as libdw and addr2line answer).

// volatile: keeps loops and stores from being folded away, so the functions and
// the inlined helper have real instruction ranges.
static volatile int g_sink;
static double g_scale = 1.0;
static unsigned long g_calls;

// An exported int holding a line number relative to this line. The braced form of
// extern "C" makes it a plain definition (no "initialized and declared extern").
#define SYMFIX_EXPORT_LINE(name, offset) \
  extern "C" {                           \
  int name = __LINE__ + (offset);        \
  }

SYMFIX_EXPORT_LINE(symfix_line_c_function, 1)
extern "C" __attribute__((noinline)) int symfix_c_function(int x) {
  g_sink = x;
  return g_sink * 3;
}

namespace symfix {

SYMFIX_EXPORT_LINE(symfix_line_scale, 1)
__attribute__((noinline)) double scale(int value, double factor) {
  g_sink = value;
  return g_sink * factor;
}

struct Counter {
  int add(int amount);  // defined out of class: DWARF names it via DW_AT_specification
  int total = 0;
};

SYMFIX_EXPORT_LINE(symfix_line_counter_add, 1)
__attribute__((noinline)) int Counter::add(int amount) {
  total += amount;
  g_sink = total;
  return total;
}

}  // namespace symfix

// The helper's body spans [first, last]; any address inside its inlined copy must
// report a line in that range. In an anonymous namespace, GCC gives it no linkage
// name, so its qualified name must be rebuilt from the enclosing namespaces.
// (The markers sit outside: a name in an anonymous namespace is never exported.)
SYMFIX_EXPORT_LINE(symfix_line_helper_first, 3)
namespace symfix {
using Real = double;  // named as the demangler would: the type, not the typedef
namespace {
inline __attribute__((always_inline)) int inlined_helper(int x, const Real* const scale, unsigned long& calls) {
  int acc = static_cast<int>(*scale) - 1 + static_cast<int>(++calls & 0);
  for (int i = 0; i < x; ++i) {
    acc += i * x;
    g_sink = acc;
  }
  return acc;
}
}  // namespace
}  // namespace symfix
SYMFIX_EXPORT_LINE(symfix_line_helper_last, -3)

SYMFIX_EXPORT_LINE(symfix_line_inlined_call, 3)
extern "C" __attribute__((noinline)) int symfix_with_inlined(int x) {
  g_sink = x;
  const int acc = symfix::inlined_helper(g_sink, &g_scale, g_calls);
  return acc + g_sink;
}

// Callable from the test so the library's code is known to be live, and so the
// C++ functions have an exported address the test can look up (mangled names).
extern "C" double symfix_call_all(int x) {
  symfix::Counter counter;
  return symfix_c_function(x) + symfix::scale(x, 0.5) + counter.add(x) + symfix_with_inlined(x);
}
