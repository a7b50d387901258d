// hybridprof-convert: an archive in other viewers' formats (see --help).
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "chrome_trace.h"
#include "common/build_identity.h"
#include "convert_options.h"
#include "json_file.h"

int main(int argc, char** argv) {
  namespace hc = hybridprof::convert;
  hc::Options options;
  try {
    options = hc::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::invalid_argument& e) {
    std::cerr << "hybridprof-convert: " << e.what() << "\n" << hc::kUsage;
    return 2;
  }
  if (options.help) {
    std::cout << hc::kUsage;
    return 0;
  }
  if (options.version) {
    std::cout << hybridprof::version_line("hybridprof-convert") << '\n';
    return 0;
  }
  try {
    hc::JsonFile out(options.output);
    const hc::ChromeTraceCounts n = hc::write_chrome_trace(options.archive, options.selection, out);
    out.commit();
    std::cerr << "hybridprof-convert: " << options.output << ": " << n.slices << " slices, " << n.samples
              << " samples, " << n.flow_starts << " messages\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hybridprof-convert: " << e.what() << "\n";
    return 1;
  }
}
