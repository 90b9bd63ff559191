// Replays saved fuzz inputs (seed corpora and the inputs of every crash found) through the same
// entry points as the libFuzzer targets, with any compiler: `fuzz_regression TARGET DIR...`.
// Exits non-zero when an input throws something other than strata::plan_error (the entry points
// catch only that); a crash or a sanitizer report fails the run as well.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "targets.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_regression TARGET DIR... (TARGET: %s)\n",
                 strata_fuzz::target_names);
    return 2;
  }
  const std::string target = argv[1];
  int (*run)(const std::uint8_t*, std::size_t) = strata_fuzz::named(target);
  if (run == nullptr) {
    std::fprintf(stderr, "fuzz_regression: unknown target '%s'\n", target.c_str());
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (int i = 2; i < argc; ++i) {
    std::error_code ec;
    if (std::filesystem::is_directory(argv[i], ec)) {
      for (const auto& e : std::filesystem::directory_iterator(argv[i]))
        if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
    } else {
      files.emplace_back(argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  int failed = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    try {
      run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "FAIL %s: %s\n", f.string().c_str(), e.what());
      ++failed;
    }
  }
  std::printf("%zu inputs replayed through %s, %d failed\n", files.size(), target.c_str(), failed);
  return failed == 0 ? 0 : 1;
}
