// hybridprof-report --help names every section the report prints: the
// headings of reports on real runs (samples, MPI, OpenMP with idle
// workers, processes and threads) are each in the help.
#include <string>
#include <vector>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

// A heading's name: the text before its explanation ("OpenMP idle (worker
// waiting for work): ..." -> "OpenMP idle").
std::string heading_name(const std::string& line) {
  const size_t cut = std::min(line.find(" ("), line.find(':'));
  return line.substr(0, cut);
}

class ReportSections : public IntegrationTest {};

TEST_F(ReportSections, TheHelpNamesEverySectionTheReportPrints) {
  const RunResult help = run({report_tool(), "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.describe();
  std::vector<std::string> reports;
  const std::string plain = scratch / "plain";
  ASSERT_EQ(profile({"-o", plain}, {fixture("split_workload"), "1", "0.1"}).exit_code, 0);
  reports.push_back(run({report_tool(), plain}).out);
  if (have_program("mpirun")) {
    RunOptions options;
    options.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    options.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    options.env["OMPI_MCA_rmaps_base_oversubscribe"] = "1";
    options.env["OMP_WAIT_POLICY"] = "active";
    const std::string job = scratch / "job";
    const RunResult r = run({"mpirun", "-np", "2", "-x", "OMP_WAIT_POLICY", launcher(), "-o", job, "--",
                             fixture("mpi_openmp"), "3"},
                            options);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    reports.push_back(run({report_tool(), job}).out);
  }
  int headings = 0;
  for (const std::string& report : reports) {
    for (const std::string& line : split_lines(report)) {
      // Headings start at the margin; tables and their lines are indented.
      if (line.empty() || line[0] == ' ' || line.rfind("hybridprof", 0) == 0 || !std::isupper(line[0])) continue;
      const std::string name = heading_name(line);
      if (name.find(' ') == std::string::npos && name.size() > 12) continue;  // a wrapped explanation's word
      ++headings;
      EXPECT_NE(help.out.find("\n  " + name), std::string::npos) << "'" << name << "' is not in --help";
    }
  }
  EXPECT_GE(headings, 5);
}

}  // namespace
}  // namespace hybridprof::integration
