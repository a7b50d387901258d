// The OTF2 archive the archive reader's fuzzer starts from: small, but with
// something of every kind the report reads (samples, traced calls, MPI,
// OpenMP, a device stream, clock offsets), so that a fuzz input replacing
// one of its files lands where the reading code has work to do. Written by
// the fuzzer itself and by its seed generator, which must agree on it.
#pragma once

#include <string>
#include <vector>

namespace hybridprof::fuzz {

// Writes the archive into `directory` (absent or empty).
void write_base_archive(const std::string& directory);

// The archive's files, relative to `directory`, sorted: a fuzz input's
// first byte picks one of them.
std::vector<std::string> archive_files(const std::string& directory);

}  // namespace hybridprof::fuzz
