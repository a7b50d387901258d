// Function names cut to a column keep what tells them apart: their own
// name, the ends of their argument lists, clone suffixes.
#include "function_names.h"

#include <gtest/gtest.h>

#include "table.h"

namespace hybridprof::report {
namespace {

TEST(FunctionNames, ShortNamesAreWhole) {
  EXPECT_EQ(shorten_function_name("main", 70), "main");
  EXPECT_EQ(shorten_function_name("CalcElemVolume(double const*, double const*)", 70),
            "CalcElemVolume(double const*, double const*)");
  EXPECT_EQ(shorten_function_name(std::string(100, 'x'), 0), std::string(100, 'x')) << "width 0: whole";
}

TEST(FunctionNames, ArgumentListsGiveWayFromTheMiddle) {
  // LULESH's four CalcEnergyForElems rows were told apart only by line.
  const std::string energy =
      "CalcEnergyForElems(double*, double*, double*, double*, double*, double*, double*, double*, double*, "
      "double*, double*, double*, double*, double*, double*, double, double, double, double, int, int*) "
      "[clone ._omp_fn.3]";
  const std::string s = shorten_function_name(energy, 70);
  EXPECT_LE(display_width(s), 70u) << s;
  EXPECT_EQ(s.rfind("CalcEnergyForElems(double*, ", 0), 0u) << s;
  EXPECT_NE(s.find(", …, "), std::string::npos) << s;
  EXPECT_NE(s.find("int, int*) [clone ._omp_fn.3]"), std::string::npos) << "the end and the clone suffix stay: " << s;
  EXPECT_NE(shorten_function_name(energy, 70),
            shorten_function_name("CalcEnergyForElems(double*, double*, double*, double*, double*, double*, double*, "
                                  "double*, double*, double*, double*, double*, double*, double*, double*, double, "
                                  "double, double, double, int, int*) [clone ._omp_fn.4]",
                                  70))
      << "clones stay apart";
  // Nothing fits: "(…)".
  EXPECT_EQ(shorten_function_name("f(std::vector<int, std::allocator<int> > const&, long long)", 12), "f(…)");
}

TEST(FunctionNames, QualifiersGiveWayKeepingTheFunctionsOwnName) {
  const std::string name =
      "std::_Hashtable<unsigned int, std::pair<unsigned int const, Thing>, std::allocator<std::pair<unsigned int "
      "const, Thing> > >::find(unsigned int const&) const";
  const std::string s = shorten_function_name(name, 50);
  EXPECT_LE(display_width(s), 50u) << s;
  EXPECT_NE(s.find("…::find(…) const"), std::string::npos) << s;
  EXPECT_EQ(s.rfind("std::_Hashtable<", 0), 0u) << s;
  // Template arguments with parentheses and operator() are not argument lists.
  EXPECT_EQ(shorten_function_name("Functor::operator()(int, long, char, short, float, double)", 40),
            "Functor::operator()(int, …, double)");
}

}  // namespace
}  // namespace hybridprof::report
