// Function names that fit a column. A C++ name is cut where it says least:
// the middle of its argument list first ("CalcEnergyForElems(double*,
// double*, …, int, int*)"), then the middle of its qualifiers and template
// arguments ("…::Domain::nodalMass(int)"); its own last name, the ends of
// its argument list and what follows (" const", "[clone ._omp_fn.0]") stay,
// so names of one overloaded or cloned function stay apart.
#pragma once

#include <cstddef>
#include <string>

namespace hybridprof::report {

// `name` in at most `width` characters (display width; 0: whole).
std::string shorten_function_name(const std::string& name, size_t width);

}  // namespace hybridprof::report
