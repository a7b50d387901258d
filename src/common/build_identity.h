// Which hybridprof this is: its version and the git commit it was built
// from ("unknown" outside a git checkout; "-modified" after the hash when
// the tree had changes). Generated at every build (cmake/build_identity.cmake).
#pragma once

#include <string>

namespace hybridprof {

const char* build_version();
const char* build_commit();

// "TOOL 0.1.0 (commit 0123456789ab)": what each tool's --version prints.
inline std::string version_line(const std::string& tool) {
  return tool + " " + build_version() + " (commit " + build_commit() + ")";
}

}  // namespace hybridprof
