// The runtime as an NVTX injection library: NVTX (the header-only NVTX 3
// in a program, or a libnvToolsExt) loads the library named by
// NVTX_INJECTION64_PATH, which the launcher sets to this one, at the first
// NVTX call and asks InitializeInjectionNvtx2 to fill its function tables.
// The functions below convert NVTX's attributes and strings and hand them
// to src/nvtx/nvtx_ranges.h. What is left out (colors, payloads, resource
// naming, thread names, extension modules) stays NVTX's no-op.
//
// Not the signal path: NVTX calls come from the program's threads.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <string>

#include "common/trace_switch.h"
#include "nvtx/nvtx_ranges.h"
#include "preload/runtime.h"

namespace hybridprof::nvtx {
namespace {

Domain* domain_of(nvtxDomainHandle_t handle) {
  return handle ? reinterpret_cast<Domain*>(handle) : default_domain();
}

// NVTX's wide strings are UTF-32 here (wchar_t on Linux); names are UTF-8.
std::string utf8(const wchar_t* text) {
  std::string out;
  for (; text && *text; ++text) {
    const auto c = static_cast<uint32_t>(*text);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | c >> 6);
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | c >> 12);
      out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18 & 0x07));
      out += static_cast<char>(0x80 | (c >> 12 & 0x3f));
      out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  return out;
}

// Whether `a` is a structure with a message of type `type` (an older,
// shorter version may lack the field: its `size` says which it has).
bool has_message(const nvtxEventAttributes_t* a, nvtxMessageType_t type) {
  return a != nullptr && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof a->message &&
         a->messageType == type;
}

// A label from an attribute structure; a wide message is left out (see
// with_label).
Label label_of(const nvtxEventAttributes_t* a) {
  Label label;
  if (a == nullptr) return label;
  if (a->size >= offsetof(nvtxEventAttributes_t, category) + sizeof a->category) label.category = a->category;
  if (has_message(a, NVTX_MESSAGE_TYPE_ASCII)) label.text = a->message.ascii;
  if (has_message(a, NVTX_MESSAGE_TYPE_REGISTERED)) {
    label.text = reinterpret_cast<const std::string*>(a->message.registered)->c_str();
    label.registered = true;
  }
  return label;
}

template <auto F>
__attribute__((noinline)) auto with_wide_label(Domain* domain, const nvtxEventAttributes_t* a) {
  const std::string text = utf8(a->message.unicode);
  Label label = label_of(a);
  label.text = text.c_str();
  return F(domain, label);
}

// F(domain, the label of `a`). Without a wide message (which needs
// converting, into a string that lives until F returns) it ends in a jump
// to F, as the text entry points do.
template <auto F>
__attribute__((always_inline)) inline auto with_label(Domain* domain, const nvtxEventAttributes_t* a) {
  if (has_message(a, NVTX_MESSAGE_TYPE_UNICODE)) return with_wide_label<F>(domain, a);
  return F(domain, label_of(a));
}

Label text_label(const char* text) {
  Label label;
  label.text = text;
  return label;
}

// --- The core module: the default domain ----------------------------------

void mark_ex(const nvtxEventAttributes_t* a) { with_label<mark>(default_domain(), a); }
void mark_a(const char* m) { mark(default_domain(), text_label(m)); }
void mark_w(const wchar_t* m) {
  const std::string s = utf8(m);
  mark(default_domain(), text_label(s.c_str()));
}
nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t* a) { return with_label<start>(default_domain(), a); }
nvtxRangeId_t range_start_a(const char* m) { return start(default_domain(), text_label(m)); }
nvtxRangeId_t range_start_w(const wchar_t* m) {
  const std::string s = utf8(m);
  return start(default_domain(), text_label(s.c_str()));
}
void range_end(nvtxRangeId_t id) { end(id); }
int range_push_ex(const nvtxEventAttributes_t* a) { return with_label<push>(default_domain(), a); }
int range_push_a(const char* m) { return push(default_domain(), text_label(m)); }
int range_push_w(const wchar_t* m) {
  const std::string s = utf8(m);
  return push(default_domain(), text_label(s.c_str()));
}
int range_pop() { return pop(default_domain()); }
void name_category_a(uint32_t category, const char* name) { name_category(default_domain(), category, name ? name : ""); }
void name_category_w(uint32_t category, const wchar_t* name) { name_category(default_domain(), category, utf8(name)); }

// --- The core2 module: the program's domains ------------------------------

void domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { with_label<mark>(domain_of(d), a); }
nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return with_label<start>(domain_of(d), a);
}
void domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
int domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return with_label<push>(domain_of(d), a);
}
int domain_range_pop(nvtxDomainHandle_t d) { return pop(domain_of(d)); }
void domain_name_category_a(nvtxDomainHandle_t d, uint32_t category, const char* name) {
  name_category(domain_of(d), category, name ? name : "");
}
void domain_name_category_w(nvtxDomainHandle_t d, uint32_t category, const wchar_t* name) {
  name_category(domain_of(d), category, utf8(name));
}
nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t d, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<std::string*>(register_string(domain_of(d), text ? text : "")));
}
nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t d, const wchar_t* text) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<std::string*>(register_string(domain_of(d), utf8(text))));
}
nvtxDomainHandle_t domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(create_domain(name ? name : ""));
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(create_domain(utf8(name)));
}
// A destroyed domain's handles may still be in use on other threads: kept.
void domain_destroy(nvtxDomainHandle_t) {}

struct Slot {
  unsigned int id;
  NvtxFunctionPointer function;
};
template <typename F>
Slot slot(unsigned int id, F* function) {
  return {id, reinterpret_cast<NvtxFunctionPointer>(function)};
}

// Fills `module`'s table where NVTX has a slot for each function.
bool install(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module, std::initializer_list<Slot> slots) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks.GetModuleFunctionTable(module, &table, &size) || table == nullptr) return false;
  for (const Slot& s : slots)
    if (s.id <= size && table[s.id] != nullptr) *table[s.id] = s.function;
  return true;
}

}  // namespace
}  // namespace hybridprof::nvtx

// NVTX's entry into its injection library: 1 when the tables are filled.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  using namespace hybridprof::nvtx;
  // NVTX calls stay no-ops (switched off: --trace).
  if (hybridprof::preload::secure_execution() || !hybridprof::adapter_traced("nvtx")) return 0;
  const auto* callbacks = get_table ? static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS))
                                    : nullptr;
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  const bool core = install(*callbacks, NVTX_CB_MODULE_CORE,
                            {slot(NVTX_CBID_CORE_MarkEx, mark_ex),
                             slot(NVTX_CBID_CORE_MarkA, mark_a),
                             slot(NVTX_CBID_CORE_MarkW, mark_w),
                             slot(NVTX_CBID_CORE_RangeStartEx, range_start_ex),
                             slot(NVTX_CBID_CORE_RangeStartA, range_start_a),
                             slot(NVTX_CBID_CORE_RangeStartW, range_start_w),
                             slot(NVTX_CBID_CORE_RangeEnd, range_end),
                             slot(NVTX_CBID_CORE_RangePushEx, range_push_ex),
                             slot(NVTX_CBID_CORE_RangePushA, range_push_a),
                             slot(NVTX_CBID_CORE_RangePushW, range_push_w),
                             slot(NVTX_CBID_CORE_RangePop, range_pop),
                             slot(NVTX_CBID_CORE_NameCategoryA, name_category_a),
                             slot(NVTX_CBID_CORE_NameCategoryW, name_category_w)});
  const bool core2 = install(*callbacks, NVTX_CB_MODULE_CORE2,
                             {slot(NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex),
                              slot(NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex),
                              slot(NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end),
                              slot(NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex),
                              slot(NVTX_CBID_CORE2_DomainRangePop, domain_range_pop),
                              slot(NVTX_CBID_CORE2_DomainNameCategoryA, domain_name_category_a),
                              slot(NVTX_CBID_CORE2_DomainNameCategoryW, domain_name_category_w),
                              slot(NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a),
                              slot(NVTX_CBID_CORE2_DomainRegisterStringW, domain_register_string_w),
                              slot(NVTX_CBID_CORE2_DomainCreateA, domain_create_a),
                              slot(NVTX_CBID_CORE2_DomainCreateW, domain_create_w),
                              slot(NVTX_CBID_CORE2_DomainDestroy, domain_destroy)});
  return core && core2 ? 1 : 0;
}
