#include "symbolizer/dwarf_names.h"

#include <dwarf.h>

#include <cstdlib>
#include <cstring>
#include <vector>

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

// The DIEs that enclose `die` in its unit's tree, outermost first (neither
// the unit nor `die`). A subtree's DIEs lie at offsets from its root's up
// to its next sibling's, so the walk goes down only into the child whose
// stretch holds `die`, stepping over the others (DW_AT_sibling, which GCC
// emits, makes each step one read): a walk of one path, where
// dwarf_getscopes_die visits every DIE before `die` (most of the time it
// took to name libc's functions).
std::vector<Dwarf_Die> enclosing_scopes(Dwarf_Die* die) {
  std::vector<Dwarf_Die> path;
  Dwarf_Die unit;
  if (dwarf_diecu(die, &unit, nullptr, nullptr) == nullptr) return path;
  const Dwarf_Off target = dwarf_dieoffset(die);
  Dwarf_Die parent = unit, child;
  for (int depth = 0; depth < 64 && dwarf_child(&parent, &child) == 0; ++depth) {
    bool inside = false;
    for (;;) {
      const Dwarf_Off at = dwarf_dieoffset(&child);
      if (at == target) return path;
      Dwarf_Die next;
      const bool last = dwarf_siblingof(&child, &next) != 0;
      if (at < target && (last || target < dwarf_dieoffset(&next))) {
        inside = true;
        break;
      }
      if (last) return {};  // not in this unit's tree: no enclosing scopes known
      child = next;
    }
    if (!inside) break;
    path.push_back(child);
    parent = child;
  }
  return {};
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
  std::string result;
  for (Dwarf_Die& scope : enclosing_scopes(&declaration)) {  // outermost first
    const int tag = dwarf_tag(&scope);
    const char* scope_name = dwarf_diename(&scope);
    // GCC names a function it made from the enclosing one (an OpenMP
    // outlined body "main._omp_fn.0", a clone) after that one's name plus
    // a suffix, and nests it there: the name is whole as it is.
    if (tag == DW_TAG_subprogram && scope_name != nullptr && is_made_from(name, scope_name)) return name;
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

// The DIE an abstract_origin chain ends at: an inlined instance's or an
// out-of-line copy's abstract function, which holds its parameters' types.
Dwarf_Die origin_of(Dwarf_Die* die) {
  Dwarf_Die origin = *die;
  for (int hop = 0; hop < 8; ++hop) {  // bounded: malformed DWARF may loop
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if (dwarf_attr(&origin, DW_AT_abstract_origin, &attr) == nullptr || dwarf_formref_die(&attr, &next) == nullptr)
      break;
    origin = next;
  }
  return origin;
}

// A C++ base type as the demangler spells it ("long unsigned int" is
// "unsigned long" there).
std::string base_type_text(const char* name) {
  static const std::pair<const char*, const char*> kSpellings[] = {
      {"long int", "long"},           {"long unsigned int", "unsigned long"}, {"short int", "short"},
      {"short unsigned int", "unsigned short"}, {"long long int", "long long"},
      {"long long unsigned int", "unsigned long long"}, {"_Bool", "bool"},
  };
  for (const auto& [dwarf, demangled] : kSpellings)
    if (std::strcmp(name, dwarf) == 0) return demangled;
  return name;
}

// `type` as a demangled signature spells a parameter of it: typedefs
// resolved (mangling knows none), "double const*", "Domain&". False for
// what this does not spell (function pointers, unnamed types).
bool type_text(Dwarf_Die* type, std::string* out, int depth = 0) {
  if (depth > 16) return false;
  Dwarf_Attribute attr;
  Dwarf_Die inner;
  const bool has_inner = dwarf_formref_die(dwarf_attr_integrate(type, DW_AT_type, &attr), &inner) != nullptr;
  switch (dwarf_tag(type)) {
    case DW_TAG_base_type: {
      const char* name = dwarf_diename(type);
      if (name == nullptr) return false;
      *out = base_type_text(name);
      return true;
    }
    case DW_TAG_unspecified_type:  // decltype(nullptr)
      *out = dwarf_diename(type) ? dwarf_diename(type) : "";
      return !out->empty();
    case DW_TAG_typedef:
      return has_inner && type_text(&inner, out, depth + 1);
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type: {
      const char* suffix = dwarf_tag(type) == DW_TAG_pointer_type ? "*" : dwarf_tag(type) == DW_TAG_reference_type ? "&" : "&&";
      if (!has_inner) {
        *out = std::string("void") + suffix;
        return true;
      }
      if (!type_text(&inner, out, depth + 1)) return false;
      *out += suffix;
      return true;
    }
    case DW_TAG_const_type:
    case DW_TAG_volatile_type: {
      const char* qualifier = dwarf_tag(type) == DW_TAG_const_type ? " const" : " volatile";
      if (!has_inner) {
        *out = std::string("void") + qualifier;
        return true;
      }
      if (!type_text(&inner, out, depth + 1)) return false;
      *out += qualifier;
      return true;
    }
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type:
    case DW_TAG_enumeration_type: {
      const char* name = dwarf_diename(type);
      if (name == nullptr) return false;
      *out = qualified_name(type, name);
      return true;
    }
    default:
      return false;
  }
}

bool is_cplusplus(Dwarf_Die* die) {
  Dwarf_Die cu;
  if (dwarf_diecu(die, &cu, nullptr, nullptr) == nullptr) return false;
  const int language = dwarf_srclang(&cu);
  return language == DW_LANG_C_plus_plus || language == DW_LANG_C_plus_plus_03 ||
         language == DW_LANG_C_plus_plus_11 || language == DW_LANG_C_plus_plus_14;
}

// "(double const*, int)" for a C++ function that has no linkage name to
// demangle (GCC gives none to internal functions, nor to those only ever
// inlined), so that it is named as a demangled one is: "" where it cannot
// be spelled, or for external functions without one (main).
std::string parameter_list(Dwarf_Die* die, const char* name) {
  // A lambda ("<lambda(int)>") says it; a function GCC made from another
  // ("main._omp_fn.0", "f.constprop.0") is named after that one.
  if (name[0] == '<' || std::strchr(name, '.') != nullptr || !is_cplusplus(die)) return "";
  Dwarf_Die origin = origin_of(die);
  Dwarf_Attribute attr;
  bool external = false;
  if (dwarf_formflag(dwarf_attr_integrate(&origin, DW_AT_external, &attr), &external) == 0 && external) return "";
  std::string list, this_qualifier;
  Dwarf_Die child;
  if (dwarf_child(&origin, &child) == 0) {
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_unspecified_parameters) {
        list += list.empty() ? "..." : ", ...";
        continue;
      }
      if (tag != DW_TAG_formal_parameter) continue;
      Dwarf_Die type;
      if (dwarf_formref_die(dwarf_attr_integrate(&child, DW_AT_type, &attr), &type) == nullptr) return "";
      bool artificial = false;
      if (dwarf_formflag(dwarf_attr_integrate(&child, DW_AT_artificial, &attr), &artificial) == 0 && artificial) {
        // `this`: a const member function's points to const.
        std::string self;
        if (type_text(&type, &self) && self.size() > 7 && self.compare(self.size() - 7, 7, " const*") == 0)
          this_qualifier = " const";
        continue;
      }
      // A parameter's own top-level const is not part of the signature.
      while (dwarf_tag(&type) == DW_TAG_const_type || dwarf_tag(&type) == DW_TAG_volatile_type) {
        Dwarf_Die inner;
        if (dwarf_formref_die(dwarf_attr_integrate(&type, DW_AT_type, &attr), &inner) == nullptr) return "";
        type = inner;
      }
      std::string text;
      if (!type_text(&type, &text)) return "";
      list += (list.empty() ? "" : ", ") + text;
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  return "(" + list + ")" + this_qualifier;
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
  return qualified_name(die, name) + parameter_list(die, name);
}

}  // namespace hybridprof::symbolizer
