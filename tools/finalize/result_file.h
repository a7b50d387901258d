// A finalizer's Result in a file: the ranks of an MPI job that wrote the
// job's archive themselves leave it for the launcher, which reports it.
#pragma once

#include <string>

#include "finalize/finalizer.h"

namespace hybridprof::finalize {

// Written whole, then renamed into place: a reader never sees half of it.
bool save_result(const std::string& path, const Result& result);
// False when there is no such file or it is not one of these.
bool load_result(const std::string& path, Result* result);

}  // namespace hybridprof::finalize
