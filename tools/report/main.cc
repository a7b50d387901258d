// hybridprof-report: summarises a hybridprof OTF2 archive (see --help).
#include <iostream>
#include <string>
#include <vector>

#include "text_report.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return hybridprof::report::run_report(args, std::cout, std::cerr);
}
