// The text hybridprof-report prints, section by section.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "options.h"
#include "otf2/archive_reader.h"
#include "profile.h"

namespace hybridprof::report {

void print_summary(std::ostream&, const otf2::Archive&, const SampleCounts&);
// Function names cut to `name_width` characters (function_names.h; 0: whole).
void print_flat_profile(std::ostream&, const otf2::Archive&, const SampleCounts&, size_t top,
                        FrameView view = {}, size_t name_width = 70);
void print_hottest_paths(std::ostream&, const otf2::Archive&, const SampleCounts&, size_t top, bool full_paths,
                         FrameView view = {});
void print_processes_and_threads(std::ostream&, const otf2::Archive&, const SampleCounts&, size_t top);
void print_report(std::ostream&, const otf2::Archive&, const SampleCounts&, const Options&);
void print_folded(std::ostream&, const otf2::Archive&, const SampleCounts&, FrameView view = {});

// The whole tool: parse args, read the archive, print. Returns the exit
// status; any failure is one line on `err` ("hybridprof-report: error: ...").
int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace hybridprof::report
