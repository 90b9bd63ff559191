// strata: evaluate a training scenario (JSON) and print its time and memory report.
// Usage: strata [FILE | -] [--format json|table]. Without FILE it runs a built-in scenario.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "strata/io/scenario.hpp"
#include "strata/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"strata: predict iteration time and per-device memory of distributed training"};
  std::string input;
  std::string format = "json";
  bool print_default = false;
  app.add_option("scenario", input, "scenario JSON file, or - for standard input")
      ->option_text("FILE|-");
  app.add_option("--format", format, "report format")->check(CLI::IsMember({"json", "table"}));
  app.add_flag("--print-default", print_default, "print the built-in scenario and exit");
  app.set_version_flag("--version", std::to_string(STRATA_VERSION_MAJOR) + "." +
                                        std::to_string(STRATA_VERSION_MINOR) + "." +
                                        std::to_string(STRATA_VERSION_PATCH));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (print_default) {
    std::cout << strata::io::default_scenario << '\n';
    return 0;
  }
  std::string text;
  if (input.empty()) {
    text = strata::io::default_scenario;
  } else if (input == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream f(input);
    if (!f) {
      std::cerr << "strata: error: cannot open scenario file '" << input << "'\n";
      return 2;
    }
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  try {
    const strata::io::scenario s = strata::io::parse_scenario_text(text);
    if (format == "table")
      std::cout << strata::io::report_table(s);
    else
      std::cout << strata::io::report_json(s).dump(2) << '\n';
  } catch (const strata::plan_error& e) {
    std::cerr << "strata: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "strata: error: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
