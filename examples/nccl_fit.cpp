// Fits Lin et al.'s collective model to measured all-reduce curves (nccl-tests on 8-GPU nodes),
// on every other message size, and predicts the sizes it did not see. Prints the held-out errors
// next to strata's alpha-beta algorithms on the DGX presets.
// Usage: example_nccl_fit [path/to/nccl_tests_allreduce_busbw.csv]
#include <cstdio>
#include <fstream>
#include <strata/calibrate/lin_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/strata.hpp>
#include <string>

using namespace strata;
using comm::collective;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "test/data/nccl_tests_allreduce_busbw.csv";
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return 2;
  }
  const calibrate::csv_table table = calibrate::read_csv(in);
  struct curve {
    const char* system;
    cluster machine;
  };
  std::printf("%-18s | %-28s | %-13s | %-13s | %-13s\n", "system", "Lin et al. held out",
              "a-b ring", "a-b tree", "a-b in-switch");
  std::printf("%-18s | %6s %6s %6s %6s | %6s %6s | %6s %6s | %6s %6s\n", "", "GMAE", "MAPE", "max",
              "points", "GMAE", "MAPE", "GMAE", "MAPE", "GMAE", "MAPE");
  for (const curve& c : {curve{"Azure ND H100 v5", presets::dgx_h100(1)},
                         curve{"Azure ND H200 v5", presets::dgx_h100(1)},
                         curve{"Azure ND A100 v4", presets::dgx_a100(1)}}) {
    const auto all = calibrate::measurements_from_csv(
        table, collective::all_reduce, 8,
        [&](const auto& row) {
          return row.at("kind") == "measured curve" && row.at("system") == c.system;
        },
        /*snap_sizes=*/true);
    std::vector<calibrate::measurement> train, held_out;
    for (std::size_t i = 0; i < all.size(); ++i) (i % 2 == 0 ? train : held_out).push_back(all[i]);
    const comm::lin_model model = calibrate::fit_lin_model(train, collective::all_reduce, 8);
    const auto lin = calibrate::evaluate_fit(held_out, [&](bytes s) { return model.time(s); });
    const group g{0, 8, 1};
    auto ab = [&](auto algorithm) {
      return calibrate::evaluate_fit(all, [&](bytes s) {
        return decltype(algorithm)::time(collective::all_reduce, c.machine, g, s);
      });
    };
    const auto r = ab(comm::ring{}), t = ab(comm::tree{}), n = ab(comm::in_switch{});
    std::printf(
        "%-18s | %5.1f%% %5.1f%% %5.1f%% %6zu | %5.0f%% %5.0f%% | %5.0f%% %5.0f%% | %5.0f%% "
        "%5.0f%%\n",
        c.system, 100 * lin.gmae, 100 * lin.mape, 100 * lin.max, lin.points, 100 * r.gmae,
        100 * r.mape, 100 * t.gmae, 100 * t.mape, 100 * n.gmae, 100 * n.mape);
    std::printf("%-18s   t_s %.1f us, m1 %.0f B, m2 %.0f B, BW_max %.1f GB/s\n", "", model.ts * 1e6,
                model.m1, model.m2, model.bw_max / 1e9);
  }
}
