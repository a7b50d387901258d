// A non-PIE (ET_EXEC) program: prints the runtime address of one function and the
// source line of its opening (its first statement is on the next line), so the test can symbolize a live ET_EXEC address
// (for ET_EXEC the load bias is 0: runtime address == ELF vaddr).
#include <cstdio>

static volatile int g_sink;

static const int kLineOfNopieFunction = __LINE__ + 1;
__attribute__((noinline)) int nopie_function(int x) {
  g_sink = x;
  return g_sink + 1;
}

int main() {
  std::printf("%p %d\n", reinterpret_cast<void*>(&nopie_function), kLineOfNopieFunction);
  return nopie_function(0) == 1 ? 0 : 1;
}
