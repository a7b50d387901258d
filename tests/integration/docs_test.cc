// The manual (docs/) kept honest: every option each tool's --help lists is
// documented, every notice or warning the source can record has a
// troubleshooting entry, and every command of the getting-started
// chapter's console examples runs as written.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

namespace fs = std::filesystem;

// Every chapter of the manual, one text.
std::string manual() {
  std::string all;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(HP_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md") all += read_text(entry.path().string()) + "\n";
  return all;
}

// The string literals of C++ `code`, in order (escapes kept as written).
std::vector<std::string> string_literals(const std::string& code) {
  std::vector<std::string> literals;
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '\'') {  // a character literal: '"' is not a string
      i = code.find('\'', i + (code[i + 1] == '\\' ? 3 : 2));
      if (i == std::string::npos) break;
      continue;
    }
    if (code[i] != '"') continue;
    std::string text;
    for (++i; i < code.size() && code[i] != '"'; ++i) {
      if (code[i] == '\\' && i + 1 < code.size()) text += code[i++];
      text += code[i];
    }
    literals.push_back(text);
  }
  return literals;
}

class Docs : public IntegrationTest {};

TEST_F(Docs, EveryOptionOfEveryToolIsInTheManual) {
  const std::string docs = manual();
  ASSERT_GT(docs.size(), 10000u) << "the manual in " << HP_SOURCE_DIR << "/docs";
  const fs::path bin = fs::path(launcher()).parent_path();
  // An option as --help lists it: at a line's start or after a comma,
  // bracket or space ("  -F, --freq HZ", "[--force]").
  const std::regex option(R"((?:^|[\s,\[|])(--[a-z][a-z0-9-]*|-[A-Za-z])(?=[\s,=\]|]|$))");
  size_t checked = 0;
  for (const char* tool : {"hybridprof", "hybridprof-report", "hybridprof-merge", "hybridprof-convert"}) {
    const RunResult help = run({(bin / tool).string(), "--help"});
    ASSERT_EQ(help.exit_code, 0) << help.describe();
    std::set<std::string> options;
    for (std::sregex_iterator it(help.out.begin(), help.out.end(), option), end; it != end; ++it)
      options.insert((*it)[1]);
    EXPECT_GE(options.size(), 3u) << tool;
    for (const std::string& o : options) {
      // In the manual as itself, not inside a longer option (-F in -Fx).
      const std::regex mention("(^|[^A-Za-z0-9-])" + o + "([^A-Za-z0-9-]|$)");
      EXPECT_TRUE(std::regex_search(docs, mention)) << tool << " " << o << " is not documented in docs/";
      ++checked;
    }
  }
  EXPECT_GT(checked, 40u);
}

// A notice or warning is a string the runtime records (raw::Notice), the
// finalizer or the symbol cache warns with (warnings.push_back), or a tool
// fails with: a site whose text is not passed on from elsewhere holds a
// literal of its own, and one of its literals (10 characters or more)
// must be quoted in docs/troubleshooting.md.
TEST_F(Docs, EveryNoticeHasATroubleshootingEntry) {
  const std::string entries = read_text(std::string(HP_SOURCE_DIR) + "/docs/troubleshooting.md");
  ASSERT_FALSE(entries.empty()) << "docs/troubleshooting.md";
  const std::regex site(R"(raw::Notice\{|warnings(->|\.|_\.)push_back\(|return fail\(|die_plainly\(\{)");
  size_t sites = 0;
  for (const char* dir : {"src", "preload", "tools", "symbolizer"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(HP_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".cc") continue;
      std::ifstream in(entry.path());
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      for (size_t i = 0; i < lines.size(); ++i) {
        if (!std::regex_search(lines[i], site)) continue;
        // The statement: up to its ';', at most 6 lines.
        std::string statement;
        for (size_t j = i; j < lines.size() && j < i + 6; ++j) {
          if (lines[j].find_first_not_of(" \t") != std::string::npos &&
              lines[j].compare(lines[j].find_first_not_of(" \t"), 2, "//") == 0)
            continue;  // a comment line: its apostrophes are not character literals
          statement += lines[j] + "\n";
          if (lines[j].find(';') != std::string::npos) break;
        }
        std::vector<std::string> texts;
        for (std::string t : string_literals(statement)) {
          while (!t.empty() && std::string(" :(,.").find(t.front()) != std::string::npos) t.erase(0, 1);
          while (!t.empty() && std::string(" :(,.").find(t.back()) != std::string::npos) t.pop_back();
          if (t.size() >= 10 && t.find('\\') == std::string::npos) texts.push_back(t);
        }
        if (texts.empty()) continue;  // passes on a message made elsewhere
        ++sites;
        bool quoted = false;
        for (const std::string& t : texts) quoted = quoted || entries.find(t) != std::string::npos;
        EXPECT_TRUE(quoted) << entry.path().string() << ":" << i + 1 << ": no troubleshooting entry quotes \""
                            << texts.front() << "\"";
      }
    }
  }
  EXPECT_GT(sites, 20u);
}

// The getting-started chapter's console examples, each "$ " line run by
// bash in a fresh directory, in order, as a user would type them.
TEST_F(Docs, TheGettingStartedExamplesRun) {
  const std::string chapter = read_text(std::string(HP_SOURCE_DIR) + "/docs/getting-started.md");
  std::vector<std::string> commands;
  bool console = false;
  std::istringstream lines(chapter);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) {
      console = line == "```console";
      continue;
    }
    if (console && line.rfind("$ ", 0) == 0) commands.push_back(line.substr(2));
  }
  ASSERT_GE(commands.size(), 4u);
  RunOptions options;
  options.working_directory = scratch.path();
  options.timeout_seconds = 180;
  // The tools of this build first; a python3 with mpi4py (the MPI fixtures')
  // before the user's.
  std::string path = fs::path(launcher()).parent_path().string();
  if (std::string(HP_MPI4PY_PYTHON).size()) path += ":" + fs::path(HP_MPI4PY_PYTHON).parent_path().string();
  options.env["PATH"] = path + ":" + std::getenv("PATH");
  options.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
  options.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  for (const std::string& c : commands) {
    if (c.find("mpirun") != std::string::npos && (!have_program("mpirun") || !std::string(HP_MPI4PY_PYTHON).size()))
      continue;  // no MPI here: the MPI example is the MPI tests' to check
    const RunResult r = run({"bash", "-c", c}, options);
    EXPECT_EQ(r.exit_code, 0) << "$ " << c << "\n" << r.describe();
  }
  // What the examples say they make.
  for (const char* made : {"run/traces.otf2", "flame.svg", "run.json"})
    EXPECT_TRUE(fs::exists(scratch / made)) << made;
}

}  // namespace
}  // namespace hybridprof::integration
