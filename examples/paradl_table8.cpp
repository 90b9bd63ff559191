// Reproduces ParaDL Table VIII's projected ranking and prints strata's comp/comm/total next to
// the paper's ParaDL and empirical columns (seconds per ImageNet epoch).
#include <cstdio>

#include "paradl_table8.hpp"

int main() {
  std::printf("%-9s %4s %-13s %6s | %8s %8s %8s %4s | %8s %8s %8s %4s\n", "", "", "", "", "strata",
              "", "", "", "ParaDL", "", "", "");
  std::printf("%-9s %4s %-13s %6s | %8s %8s %8s %4s | %8s %8s %8s %4s\n", "model", "gpus",
              "strategy", "batch", "comp", "comm", "total", "rank", "comp", "comm", "total",
              "rank");
  int agree = 0;
  for (std::size_t i = 0; i < table8::paper.size(); ++i) {
    const auto& row = table8::paper[i];
    const strata::report r = table8::predict(row);
    const double it = r.iterations;
    const int rank = table8::predicted_rank(i);
    agree += rank == row.rank;
    std::printf("%-9s %4d %-13s %6d | %8.0f %8.0f %8.0f %4d | %8.0f %8.0f %8.0f %4d\n", row.model,
                row.gpus, row.strategy, r.batch, r.time.compute().count() * it,
                r.time.communication().count() * it, r.epoch_time().count(), rank, row.comp,
                row.comm, row.total, row.rank);
  }
  std::printf("ranks equal to ParaDL's projection: %d of %zu\n", agree, table8::paper.size());
}
