#include "symbolizer/dwarf_names.h"

#include <dwarf.h>

#include <cstdlib>
#include <cstring>

#include "symbolizer/dwarf_scopes.h"
#include "symbolizer/symbolizer.h"

namespace hybridprof::symbolizer {
namespace {

const char* string_attribute(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attr;
  // _integrate follows DW_AT_abstract_origin (inlined instances, out-of-line copies
  // of inline functions) and DW_AT_specification (member functions defined outside
  // their class), where the names live. dwarf_formstring accepts null.
  return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

// "main._omp_fn.0" from "main".
bool is_made_from(const char* name, const char* origin) {
  const size_t n = std::strlen(origin);
  return std::strncmp(name, origin, n) == 0 && name[n] == '.';
}

// GCC gives no DW_AT_linkage_name to functions with internal linkage (static,
// anonymous namespace) nor to lambdas, and Fortran's linkage names are labels
// ("__mod_MOD_work"), so we rebuild "ns::Class::name" from the namespaces,
// classes and modules enclosing the function's declaration.
std::string qualified_name(Dwarf_Die* die, const char* name) {
  // The declaration is where abstract_origin / specification chains end; its
  // parents in the DIE tree are the enclosing scopes (the concrete DIE of an
  // out-of-class member definition sits at the top level instead).
  Dwarf_Die declaration = *die;
  for (int hop = 0; hop < 8; ++hop) {  // bounded: malformed DWARF may loop
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if (dwarf_attr(&declaration, DW_AT_abstract_origin, &attr) == nullptr &&
        dwarf_attr(&declaration, DW_AT_specification, &attr) == nullptr) {
      break;
    }
    if (dwarf_formref_die(&attr, &next) == nullptr) break;
    declaration = next;
  }
  Dwarf_Die* scopes = nullptr;
  const int count = dwarf_getscopes_die(&declaration, &scopes);
  std::string result;
  for (int i = count - 1; i >= 1; --i) {  // outermost first; [0] is the declaration
    const int tag = dwarf_tag(&scopes[i]);
    const char* scope_name = dwarf_diename(&scopes[i]);
    // GCC names a function it made from the enclosing one (an OpenMP
    // outlined body "main._omp_fn.0", a clone) after that one's name plus
    // a suffix, and nests it there: the name is whole as it is.
    if (tag == DW_TAG_subprogram && scope_name != nullptr && is_made_from(name, scope_name)) {
      free(scopes);
      return name;
    }
    if (tag == DW_TAG_namespace) {
      result += scope_name != nullptr ? scope_name : "(anonymous namespace)";
    } else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
               tag == DW_TAG_union_type || tag == DW_TAG_subprogram ||
               tag == DW_TAG_module) {
      result += scope_name != nullptr ? scope_name : "{unnamed}";
    } else {
      continue;  // the CU, lexical blocks
    }
    result += "::";
  }
  free(scopes);
  return result + name;
}

// Clang names an OpenMP construct's outlined body ".omp_outlined.",
// ".omp_outlined._debug__" (and numbered variants), with nothing of the
// function it came from. That function is the one whose declaration comes
// last before the body's (its pragma's line) in the same file: the body's
// name is then that function's, as GCC's "[clone ._omp_fn.N]" are.
constexpr const char kClangOutlined[] = ".omp_outlined.";

bool is_clang_outlined(const char* name) {
  return name != nullptr && std::strncmp(name, kClangOutlined, sizeof kClangOutlined - 1) == 0;
}

// The function of `body`'s CU declared last at or before `body`'s line in
// its file, not itself an outlined body; false when none is.
bool outlined_from(Dwarf_Die* body, Dwarf_Die* parent) {
  int body_line = 0;
  const char* body_file = dwarf_decl_file(body);
  Dwarf_Die cu;
  if (body_file == nullptr || dwarf_decl_line(body, &body_line) != 0 || dwarf_diecu(body, &cu, nullptr, nullptr) == nullptr)
    return false;
  int best_line = -1;
  for (const DieRange& f : index_functions(&cu)) {
    Dwarf_Die candidate = f.die;
    int line = 0;
    const char* file = dwarf_decl_file(&candidate);
    const char* candidate_name = string_attribute(&candidate, DW_AT_name);
    if (file == nullptr || std::strcmp(file, body_file) != 0 || is_clang_outlined(candidate_name) ||
        dwarf_decl_line(&candidate, &line) != 0 || line > body_line || line <= best_line)
      continue;
    best_line = line;
    *parent = candidate;
  }
  return best_line >= 0;
}

}  // namespace

// A C++ linkage name demangles to the full signature, so it wins. Other linkage
// names are assembler labels, not what the source calls the function (glibc's
// "__GI_qsort" for qsort): there, and when there is none, the qualified DW_AT_name.
std::string function_name(Dwarf_Die* die) {
  const char* linkage_name = string_attribute(die, DW_AT_linkage_name);
  if (linkage_name == nullptr) linkage_name = string_attribute(die, DW_AT_MIPS_linkage_name);
  if (linkage_name != nullptr) {
    std::string demangled = demangle(linkage_name);
    if (demangled != linkage_name) return demangled;
  }
  const char* name = string_attribute(die, DW_AT_name);
  if (name == nullptr) return linkage_name != nullptr ? linkage_name : "";
  Dwarf_Die parent;
  if (is_clang_outlined(name) && outlined_from(die, &parent))
    return function_name(&parent) + " [clone " + name + "]";
  // A function GCC made from a C++ one (an OpenMP outlined body, a clone)
  // has that one's mangled name plus a suffix as its DW_AT_name
  // ("_ZL4workRd._omp_fn.0"): demangled as c++filt does,
  // "work(double&) [clone ._omp_fn.0]".
  std::string demangled = demangle(name);
  if (demangled != name) return demangled;
  return qualified_name(die, name);
}

}  // namespace hybridprof::symbolizer
