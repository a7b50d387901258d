// Seeds for archive_reader_fuzzer: each file of the fuzzer's base archive
// (fuzz_archive.h) as it is, behind the byte that picks it.
// Usage: archive_seeds <corpus directory>   (emptied first)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz_archive.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  const std::string corpus = argv[1];
  const std::string archive = corpus + ".archive";
  fs::remove_all(corpus);
  fs::remove_all(archive);
  fs::create_directories(corpus);
  hybridprof::fuzz::write_base_archive(archive);
  const auto files = hybridprof::fuzz::archive_files(archive);
  for (size_t i = 0; i < files.size(); ++i) {
    std::ifstream in(archive + "/" + files[i], std::ios::binary);
    std::ofstream out(corpus + "/" + std::to_string(i), std::ios::binary);
    out << static_cast<char>(i) << in.rdbuf();
  }
  fs::remove_all(archive);
  std::printf("%s: %zu files\n", corpus.c_str(), files.size());
  return files.empty() ? 1 : 0;
}
