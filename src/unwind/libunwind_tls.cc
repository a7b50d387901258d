#include "unwind/libunwind_tls.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

// What the replacement reads: libunwind's TLS module id (UINT64_MAX when
// not redirected: no module has it), the distance from the thread pointer
// down to its block, and the loader's own __tls_get_addr for the rest.
extern "C" {
__attribute__((visibility("hidden"))) uint64_t hybridprof_libunwind_tls_module = UINT64_MAX;
__attribute__((visibility("hidden"))) uint64_t hybridprof_libunwind_tls_offset = 0;
__attribute__((visibility("hidden"))) void* hybridprof_loader_tls_get_addr = nullptr;
void* hybridprof_libunwind_tls_get_addr(void* index);
}

// SIGNAL PATH (called from libunwind in the handler's unwinds): no stack,
// no call but the tail jump to the loader's for other modules. Takes
// __tls_get_addr's argument, {module, offset}, in %rdi; %fs:0 is the
// thread pointer.
asm(R"(
  .text
  .p2align 4
  .globl hybridprof_libunwind_tls_get_addr
  .hidden hybridprof_libunwind_tls_get_addr
  .type hybridprof_libunwind_tls_get_addr, @function
hybridprof_libunwind_tls_get_addr:
  endbr64
  mov (%rdi), %rax
  cmp hybridprof_libunwind_tls_module(%rip), %rax
  jne 1f
  mov %fs:0, %rax
  sub hybridprof_libunwind_tls_offset(%rip), %rax
  add 8(%rdi), %rax
  ret
1:
  jmp *hybridprof_loader_tls_get_addr(%rip)
  .size hybridprof_libunwind_tls_get_addr, .-hybridprof_libunwind_tls_get_addr
)");

namespace hybridprof {
namespace {

struct TlsIndex {
  unsigned long module, offset;
};
using TlsGetAddr = void* (*)(TlsIndex*);

uint64_t thread_pointer() {
  uint64_t tp;
  asm("mov %%fs:0, %0" : "=r"(tp));
  return tp;
}

// libunwind's module as the loader describes it to the calling thread.
struct Module {
  uint64_t address = 0;  // one inside it
  bool found = false;
  uint64_t base = 0, tls_module = 0, tls_data = 0;
  const ElfW(Dyn)* dynamic = nullptr;
  uint64_t relro_start = 0, relro_end = 0;
};

int find_module(dl_phdr_info* info, size_t size, void* data) {
  auto* m = static_cast<Module*>(data);
  if (size < offsetof(dl_phdr_info, dlpi_tls_data) + sizeof(info->dlpi_tls_data)) return 0;
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    const uint64_t start = info->dlpi_addr + p.p_vaddr;
    if (p.p_type == PT_LOAD && m->address >= start && m->address < start + p.p_memsz) inside = true;
  }
  if (!inside) return 0;
  m->found = true;
  m->base = info->dlpi_addr;
  m->tls_module = info->dlpi_tls_modid;
  m->tls_data = reinterpret_cast<uint64_t>(info->dlpi_tls_data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_DYNAMIC) m->dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + p.p_vaddr);
    if (p.p_type == PT_GNU_RELRO) {
      m->relro_start = info->dlpi_addr + p.p_vaddr;
      m->relro_end = m->relro_start + p.p_memsz;
    }
  }
  return 1;
}

// The module's GOT entries for `symbol` (its PLT's and its data imports').
// The loader has made the dynamic section's addresses absolute; one that
// is not yet (below the load address) is made so here.
template <typename Visit>
void each_import_slot(const Module& m, const char* symbol, Visit visit) {
  const auto absolute = [&](uint64_t p) { return p < m.base ? p + m.base : p; };
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const ElfW(Rela)* tables[2] = {nullptr, nullptr};
  uint64_t sizes[2] = {0, 0};
  for (const ElfW(Dyn)* d = m.dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symbols = reinterpret_cast<const ElfW(Sym)*>(absolute(d->d_un.d_ptr)); break;
      case DT_STRTAB: strings = reinterpret_cast<const char*>(absolute(d->d_un.d_ptr)); break;
      case DT_JMPREL: tables[0] = reinterpret_cast<const ElfW(Rela)*>(absolute(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
      case DT_RELA: tables[1] = reinterpret_cast<const ElfW(Rela)*>(absolute(d->d_un.d_ptr)); break;
      case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
      default: break;
    }
  }
  if (symbols == nullptr || strings == nullptr) return;
  for (int t = 0; t < 2; ++t) {
    if (tables[t] == nullptr) continue;
    for (uint64_t i = 0; i < sizes[t] / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela)& r = tables[t][i];
      const uint64_t type = ELF64_R_TYPE(r.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      if (std::strcmp(strings + symbols[ELF64_R_SYM(r.r_info)].st_name, symbol) == 0)
        visit(reinterpret_cast<void**>(m.base + r.r_offset));
    }
  }
}

// Writes `value` into a GOT slot, lifting the read-only protection the
// loader put on it after relocation (RELRO) for the moment.
bool write_slot(const Module& m, void** slot, void* value) {
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  const uint64_t address = reinterpret_cast<uint64_t>(slot);
  void* start = reinterpret_cast<void*>(address & ~(page - 1));
  const bool read_only = address >= m.relro_start && address < m.relro_end;
  if (read_only && mprotect(start, page, PROT_READ | PROT_WRITE) != 0) return false;
  reinterpret_cast<std::atomic<void*>*>(slot)->store(value, std::memory_order_release);
  if (read_only) mprotect(start, page, PROT_READ);
  return true;
}

}  // namespace

std::string redirect_libunwind_tls() {
  Module m;
  m.address = reinterpret_cast<uint64_t>(&unw_backtrace);
  dl_iterate_phdr(find_module, &m);
  if (!m.found || m.dynamic == nullptr) return "libunwind's module was not found";
  if (m.tls_module == 0) return {};  // no TLS: nothing reaches the loader
  if (m.tls_data == 0) return "libunwind's TLS block is not allocated on this thread";
  const uint64_t tp = thread_pointer();
  // Static TLS lies below the thread pointer (variant II); a block
  // elsewhere was allocated at run time, per thread, by the loader.
  // (each thread's start checks it: libunwind_tls_holds_on_this_thread).
  if (m.tls_data >= tp || tp - m.tls_data > (uint64_t{64} << 20))
    return "libunwind's TLS is not static (it was loaded after the program started)";
  hybridprof_loader_tls_get_addr = dlsym(RTLD_DEFAULT, "__tls_get_addr");
  if (hybridprof_loader_tls_get_addr == nullptr) return "the loader's __tls_get_addr was not found";
  hybridprof_libunwind_tls_offset = tp - m.tls_data;
  int slots = 0, written = 0;
  each_import_slot(m, "__tls_get_addr", [&](void** slot) {
    ++slots;
    if (write_slot(m, slot, reinterpret_cast<void*>(&hybridprof_libunwind_tls_get_addr))) ++written;
  });
  if (slots == 0) return "libunwind imports no __tls_get_addr";
  if (written == 0) return "libunwind's GOT could not be written";
  // From now on the replacement answers for libunwind's module (the
  // slots already lead to it; until this store it passed everything on).
  reinterpret_cast<std::atomic<uint64_t>*>(&hybridprof_libunwind_tls_module)->store(m.tls_module);
  return written == slots ? std::string() : "some of libunwind's GOT entries could not be written";
}

bool libunwind_tls_holds_on_this_thread() {
  auto* module = reinterpret_cast<std::atomic<uint64_t>*>(&hybridprof_libunwind_tls_module);
  const uint64_t id = module->load();
  if (id == UINT64_MAX) return true;
  TlsIndex index{id, 0};
  const auto loader = reinterpret_cast<TlsGetAddr>(hybridprof_loader_tls_get_addr);
  if (reinterpret_cast<uint64_t>(loader(&index)) == thread_pointer() - hybridprof_libunwind_tls_offset) return true;
  module->store(UINT64_MAX);
  return false;
}

bool libunwind_tls_redirected() {
  return reinterpret_cast<std::atomic<uint64_t>*>(&hybridprof_libunwind_tls_module)->load() != UINT64_MAX;
}

}  // namespace hybridprof
