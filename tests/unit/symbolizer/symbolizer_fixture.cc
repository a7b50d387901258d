// Shared library the symbolizer tests dlopen. Built with -g -O2 like real code.
// Each symfix_line_* global holds the source line of the thing it names, taken
// from __LINE__, so tests compare against the compiler's facts, not typed numbers.
// Keep each function's name and opening brace on one line: GCC attributes a
// function's first instruction to the line of its name.

// volatile: keeps loops and stores from being folded away, so the functions and
// the inlined helper have real instruction ranges.
static volatile int g_sink;

extern "C" int symfix_line_c_function = __LINE__ + 1;
extern "C" __attribute__((noinline)) int symfix_c_function(int x) {
  g_sink = x;
  return g_sink * 3;
}

namespace symfix {

int line_scale = __LINE__ + 1;
__attribute__((noinline)) double scale(int value, double factor) {
  g_sink = value;
  return g_sink * factor;
}

struct Counter {
  int add(int amount);  // defined out of class: DWARF names it via DW_AT_specification
  int total = 0;
};

int line_counter_add = __LINE__ + 1;
__attribute__((noinline)) int Counter::add(int amount) {
  total += amount;
  g_sink = total;
  return total;
}

}  // namespace symfix

// The helper's body spans [first, last]; any address inside its inlined copy must
// report a line in that range.
extern "C" int symfix_line_helper_first = __LINE__ + 1;
static inline __attribute__((always_inline)) int inlined_helper(int x) {
  int acc = 0;
  for (int i = 0; i < x; ++i) {
    acc += i * x;
    g_sink = acc;
  }
  return acc;
}
extern "C" int symfix_line_helper_last = __LINE__ - 1;

extern "C" int symfix_line_inlined_call = __LINE__ + 3;
extern "C" __attribute__((noinline)) int symfix_with_inlined(int x) {
  g_sink = x;
  const int acc = inlined_helper(g_sink);
  return acc + g_sink;
}

// Callable from the test so the library's code is known to be live, and so the
// C++ functions have an exported address the test can look up (mangled names).
extern "C" double symfix_call_all(int x) {
  symfix::Counter counter;
  return symfix_c_function(x) + symfix::scale(x, 0.5) + counter.add(x) + symfix_with_inlined(x);
}
