// NVTX ranges and marks as regions of paradigm user on the calling thread,
// whatever NVTX API made them (the injection in preload/nvtx converts the
// calls' attributes and strings; nothing here knows NVTX's types):
// - a push/pop range is a region entered and left on its thread, one
//   stack per thread and domain, as NVTX defines;
// - a start/end range is a region on the thread that started it. Its end
//   there closes it even when ranges opened after it are still open: those
//   are left and entered again around it, so regions still nest on the
//   thread. An end on another thread is carried out by the starting thread
//   at its next NVTX call, or when it ends;
// - a mark is a region entered and left at once.
// Each encloses the code run meanwhile (trace/traced_region.h), so samples
// inside a range have it in their calling context, and its enter carries
// the caller's stack, Python frames included.
//
// Region names: the message ("(unnamed)" without one), after the domain
// for a domain of the program's ("io: read batch"), and with the
// category's name (or number) after it ("step [training]").
//
// Not the signal path: called from the program's threads like any library
// code; may lock and allocate.
#pragma once

#include <cstdint>
#include <string>

namespace hybridprof::nvtx {

// A domain: its name, categories and registered strings. Created by the
// program, never freed (NVTX handles may outlive a domain's destruction
// in a program's other threads).
struct Domain;
Domain* default_domain();
Domain* create_domain(const std::string& name);
// A registered string: its handle stays valid for the process.
const std::string* register_string(Domain* domain, const std::string& text);
void name_category(Domain* domain, uint32_t category, const std::string& name);

// What a range or mark says: a message (`text`, or none) and its category
// (0: none). The message is text of any lifetime, or, `registered`, a
// registered string's characters (register_string's: they stay for the
// process, so their address names them). Sixteen bytes, passed by value:
// the injection's entry points then jump to push() and the others instead
// of calling them, a call level less under every traced call (see
// enter_region in trace/traced_region.h).
struct Label {
  const char* text = nullptr;
  uint32_t category = 0;
  bool registered = false;
};

// NVTX's return values: the push's level (0 for the outermost) and the
// pop's; -1 for a pop with nothing pushed in the domain on the thread.
int push(Domain* domain, Label label);
int pop(Domain* domain);
// A start/end range's id (never 0); end() of an id not open does nothing.
uint64_t start(Domain* domain, Label label);
void end(uint64_t id);
void mark(Domain* domain, Label label);

}  // namespace hybridprof::nvtx
