// How a function DIE is named in frames. Internal to the symbolizer.
#pragma once

#include <elfutils/libdw.h>

#include <string>

namespace hybridprof::symbolizer {

// A C++ linkage name, demangled ("ns::Foo::bar(int)"); otherwise DW_AT_name
// qualified by the enclosing namespaces, classes and modules ("mod::work").
// Follows DW_AT_abstract_origin and DW_AT_specification. "" if the DIE has no name.
std::string function_name(Dwarf_Die* die);

}  // namespace hybridprof::symbolizer
