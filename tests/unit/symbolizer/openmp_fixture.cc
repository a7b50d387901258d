// OpenMP bodies GCC outlines into functions of their own
// ("<enclosing>._omp_fn.N"): in a namespace, taking references, static,
// and in a C-linkage function. The test symbolizes each outlined
// function's address and expects what c++filt prints for its symbol.
#include <cstddef>
#include <vector>

namespace symfix_omp {

double sum(const std::vector<double>& values, double& largest) {
  double total = 0, top = 0;
#pragma omp parallel for reduction(+ : total) reduction(max : top)
  for (std::size_t i = 0; i < values.size(); ++i) {
    total += values[i];
    top = values[i] > top ? values[i] : top;
  }
  largest = top;
  return total;
}

namespace {
void scale(std::vector<double>& values, double by) {
#pragma omp parallel for
  for (std::size_t i = 0; i < values.size(); ++i) values[i] *= by;
}
}  // namespace

}  // namespace symfix_omp

extern "C" double symfix_omp_run(int n) {
  std::vector<double> v(static_cast<std::size_t>(n), 1.5);
  symfix_omp::scale(v, 2.0);
  double largest = 0;
  double total = 0;
#pragma omp parallel
  {
#pragma omp single
    total = symfix_omp::sum(v, largest);
  }
  return total + largest;
}
