// Yan et al.'s performance model on the Table 1 configurations, the optimizer's choice, and the
// spread of the 20-machine search space (Fig. 15).
#include <algorithm>
#include <cstdio>
#include <strata/search/yan_optimizer.hpp>

#include "yan_table1.hpp"

using namespace strata;

template <std::size_t N>
void show(const char* name, const std::vector<yan::layer_view>& net,
          const std::array<table1::row, N>& rows, double samples, const yan::costs& c) {
  std::printf("%s\n  %-8s %8s %6s %12s %12s %12s %12s\n", name, "W/R/PS", "measured", "est.",
              "epoch (s)", "reads (s)", "compute (s)", "comm (s)");
  std::vector<double> t;
  for (const auto& r : rows) t.push_back(table1::estimate(net, r, samples, c).epoch());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto e = table1::estimate(net, rows[i], samples, c);
    const auto rank = 1 + std::count_if(t.begin(), t.end(), [&](double v) { return v < t[i]; });
    char label[32];
    std::snprintf(label, sizeof label, "%d/%d/%d", rows[i].workers, rows[i].replicas,
                  rows[i].servers);
    std::printf("  %-8s %8d %6ld %12.1f %12.1f %12.1f %12.1f\n", label, rows[i].measured_rank,
                static_cast<long>(rank), e.epoch(), e.weight_reads, e.compute, e.communication);
  }
  std::printf("  Kendall's tau vs measured ranks: %.3f\n", table1::tau(net, rows, samples, c));
  const auto best = search::optimize_yan(net, c, {.machines = 20}, samples);
  std::printf("  optimizer (20 machines): %d/%d/%d, P(l) x H(l) x R(l) =", best.system.workers,
              best.system.replicas, best.system.servers);
  for (const auto& l : best.split) std::printf(" %dx%dx%d", l.partitions, l.threads, l.replicas);
  std::printf(", epoch %.1f s\n", best.epoch);
  // Fig. 15: every <W/R/PS> that fits 20 machines, all layers on all workers, 16 threads.
  double lo = 1e300, hi = 0;
  for (int ps = 1; ps < 20; ++ps)
    for (int w = 1; ps + w <= 20; ++w)
      for (int r = 1; ps + r * w <= 20; ++r) {
        const double e = table1::estimate(net, {w, r, ps, 0}, samples, c).epoch();
        lo = std::min(lo, e);
        hi = std::max(hi, e);
      }
  std::printf("  20-machine space: best %.1f s, worst %.1f s, ratio %.1fx\n", lo, hi, hi / lo);
}

int main() {
  const yan::costs c = yan::e5_2450();
  show("MNIST", yan::fold(zoo::mnist_adam().view()), table1::mnist, table1::mnist_samples, c);
  show("ImageNet-22K", yan::fold(zoo::imagenet22k_adam().view()), table1::imagenet,
       table1::imagenet_samples, c);
}
