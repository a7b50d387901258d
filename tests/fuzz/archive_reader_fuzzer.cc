// libFuzzer target: hybridprof-report's reading of an archive, on hostile
// OTF2 files. The input replaces one file of a small valid archive
// (fuzz_archive.h): its first byte picks the file (the high bit: delete it
// instead), the rest is the file's new content. The archive is then read
// and reported as hybridprof-report does. A std::exception is the expected
// answer to a corrupt archive (the tool prints it as one error line);
// crashes, sanitizer reports, leaks in our code and hangs are bugs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_archive.h"
#include "otf2/archive_reader.h"
#include "profile.h"
#include "text_report.h"

namespace {

namespace fs = std::filesystem;
using namespace hybridprof;

struct File {
  std::string path;
  std::string content;  // as the base archive has it
};

// The base archive in a scratch directory, removed at exit.
class Archive {
 public:
  Archive() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hybridprof-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    scratch_ = pattern;
    directory_ = scratch_ + "/archive";
    fuzz::write_base_archive(directory_);
    for (const std::string& name : fuzz::archive_files(directory_)) {
      std::ifstream in(directory_ + "/" + name, std::ios::binary);
      files_.push_back({directory_ + "/" + name, std::string(std::istreambuf_iterator<char>(in), {})});
    }
  }
  ~Archive() {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
  const std::string& directory() const { return directory_; }
  const std::vector<File>& files() const { return files_; }

 private:
  std::string scratch_, directory_;
  std::vector<File> files_;
};

void write_file(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

// What hybridprof-report does with an archive (report::run_report, minus
// the command line), in the views that read it differently.
void read_and_report(const std::string& directory) {
  otf2::ArchiveReader reader(directory);
  const report::SampleCounts counts = report::count_samples(reader);
  std::ostringstream out;
  report::Options options;
  report::print_report(out, reader.archive(), counts, options);
  options.full_paths = options.python_only = options.python_functions = options.ml = true;
  options.step = "Model.step";
  report::print_report(out, reader.archive(), counts, options);
  report::print_folded(out, reader.archive(), counts, {.python_only = false, .python_functions = true});
}

// One libFuzzer feature per file and per way of changing it (libFuzzer's
// extra counters): a seed for each file then stays in the corpus, although
// all of them read back the same archive, and so do the mutations of each.
__attribute__((section("__libfuzzer_extra_counters"))) uint8_t file_features[128];

}  // namespace

// OTF2 3.0 leaks its archive and file objects when it fails to open a
// corrupt anchor (tests/unit/report/lsan.supp); not ours to fix.
extern "C" const char* __lsan_default_suppressions() { return "leak:libopen-trace-format2\n"; }
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
// OTF2 3.0 mallocs arrays as long as a definition's count says (up to 32
// GB) before it finds that the file holds less: outside a sanitizer that
// memory is never touched. Here such a malloc fails, and OTF2 reports the
// archive corrupt. Our code allocates with new, which still dies past 2 GB,
// as do its allocations that are really used (-rss_limit_mb).
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=2048"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Archive archive;
  if (size == 0) return 0;
  const size_t index = (data[0] & 0x7f) % archive.files().size();
  const bool remove = data[0] & 0x80;
  const File& file = archive.files()[index];
  file_features[(index * 2 + remove) % sizeof file_features] = 1;
  if (remove) {
    fs::remove(file.path);
  } else {
    write_file(file.path, reinterpret_cast<const char*>(data + 1), size - 1);
  }
  try {
    read_and_report(archive.directory());
  } catch (const std::exception&) {
    // A corrupt archive, said so: what the tool should do.
  }
  write_file(file.path, file.content.data(), file.content.size());
  return 0;
}
