#include "symbolizer/symbol_table.h"

#include <gelf.h>

#include <algorithm>

namespace hybridprof::symbolizer {
namespace {

int binding_value(const GElf_Sym& sym) {
  switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL: return 3;
    case STB_WEAK: return 2;
    case STB_LOCAL: return 1;
    default: return 0;
  }
}

// The Dwfl address where `shndx`'s section of `elf` ends, 0 for none (an
// absolute or common symbol belongs to no section).
uint64_t section_end(Elf* elf, GElf_Word shndx, Dwarf_Addr bias) {
  if (elf == nullptr || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE) return 0;
  GElf_Shdr header;
  Elf_Scn* section = elf_getscn(elf, shndx);
  if (section == nullptr || gelf_getshdr(section, &header) == nullptr || (header.sh_flags & SHF_ALLOC) == 0) return 0;
  return header.sh_addr + header.sh_size + bias;
}

auto by_start = [](uint64_t address, const auto& symbol) { return address < symbol.start; };

}  // namespace

SymbolTable::SymbolTable(Dwfl_Module* module) {
  const int count = dwfl_module_getsymtab(module);
  for (int i = 1; i < count; ++i) {  // entry 0 is the null symbol
    GElf_Sym sym;
    GElf_Addr address = 0;
    GElf_Word shndx = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module, i, &sym, &address, &shndx, &elf, &bias);
    if (name == nullptr || name[0] == '\0' || sym.st_shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    Symbol s{address, address + sym.st_size, name, binding_value(sym), static_cast<size_t>(i)};
    Part& part = GELF_ST_BIND(sym.st_info) == STB_LOCAL ? locals_ : globals_;
    if (sym.st_size != 0) {
      part.sized.push_back(s);
    } else {
      s.end = section_end(elf, shndx, bias);
      part.sizeless.push_back(s);
    }
  }
  globals_.sort();
  locals_.sort();
}

void SymbolTable::Part::sort() {
  auto order = [](const Symbol& a, const Symbol& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.binding != b.binding) return a.binding < b.binding;
    return a.index > b.index;
  };
  std::sort(sized.begin(), sized.end(), order);
  std::sort(sizeless.begin(), sizeless.end(), order);
  reach.resize(sized.size());
  uint64_t highest = 0;
  for (size_t i = 0; i < sized.size(); ++i) reach[i] = highest = std::max(highest, sized[i].end);
}

const SymbolTable::Symbol* SymbolTable::Part::covering(uint64_t address) const {
  // Backwards from the last start at or below the address, while some
  // symbol this far down still reaches past it: usually one step.
  for (size_t i = std::upper_bound(sized.begin(), sized.end(), address, by_start) - sized.begin(); i-- > 0;) {
    if (reach[i] <= address) return nullptr;
    if (sized[i].end > address) return &sized[i];
  }
  return nullptr;
}

const SymbolTable::Symbol* SymbolTable::Part::label_before(uint64_t address) const {
  const auto after = std::upper_bound(sizeless.begin(), sizeless.end(), address, by_start);
  if (after == sizeless.begin()) return nullptr;
  const Symbol& closest = *(after - 1);
  // An earlier label in the address's section would sit below this one's
  // section, which lies below the address: only the closest can hold it.
  return address < closest.end ? &closest : nullptr;
}

uint64_t SymbolTable::Part::reach_below(uint64_t address) const {
  const size_t i = std::upper_bound(sized.begin(), sized.end(), address, by_start) - sized.begin();
  return i == 0 ? 0 : reach[i - 1];
}

void SymbolTable::constant_range(uint64_t address, uint64_t* lo, uint64_t* hi) {
  if (edges_.empty()) {
    for (const Part* part : {&globals_, &locals_})
      for (const auto* list : {&part->sized, &part->sizeless})
        for (const Symbol& s : *list) {
          edges_.push_back(s.start);
          if (s.end != 0) edges_.push_back(s.end);
        }
    edges_.push_back(0);
    std::sort(edges_.begin(), edges_.end());
    edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
    for (const Symbol& s : globals_.sizeless) global_label_starts_.push_back(s.start);
    std::sort(global_label_starts_.begin(), global_label_starts_.end());
  }
  const auto above = std::upper_bound(edges_.begin(), edges_.end(), address);
  *lo = *(above - 1);  // edges_ holds 0
  *hi = above == edges_.end() ? UINT64_MAX : *above;
  if (std::binary_search(global_label_starts_.begin(), global_label_starts_.end(), *lo)) {
    if (address == *lo)
      *hi = address + 1;
    else
      *lo += 1;
  }
}

const char* SymbolTable::name_at(uint64_t address) const {
  if (const Symbol* s = globals_.covering(address)) return s->name;
  const Symbol* label = globals_.label_before(address);
  uint64_t reach = globals_.reach_below(address);
  // libdwfl looks at local symbols only when no global one covers the
  // address, unless a global label sits exactly on it.
  if (label == nullptr || label->start != address) {
    if (const Symbol* s = locals_.covering(address)) return s->name;
    const Symbol* local = locals_.label_before(address);
    if (local != nullptr && (label == nullptr || local->start > label->start)) label = local;
    reach = std::max(reach, locals_.reach_below(address));
  }
  // A sized symbol below the address that reaches past the label hides it.
  return label != nullptr && label->start >= reach ? label->name : nullptr;
}

}  // namespace hybridprof::symbolizer
