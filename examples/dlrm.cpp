// DLRM on H100s (Lin et al. §V-B1, §VI-A): a single-GPU step, an 8-GPU plan with its two
// all-to-alls, and Table IV-style sharder selection on generated heavy and normal tasks.
#include <cstdio>
#include <strata/analytic/dlrm.hpp>
#include <strata/hardware/presets.hpp>
#include <strata/search/sharders.hpp>

int main() {
  using namespace strata;
  const device_profile prof = datasheet_profile(presets::h100_sxm5_80gb);
  const cluster node = presets::dgx_h100(1);
  const embedding_bag_model& el = h100_embedding_bag;

  // one GPU: 8 generated tables (a normal mix), batch 2048, fused (TBE-style) updates
  dlrm small{.tables = generate_tables(8, table_mix::normal, 64, 7, 2048)};
  const auto one = analytic::dlrm_step(small, {.batch = 2048}, node.dev, prof, el);
  std::printf("single GPU: %zu tables, step %.3f ms (embeddings %.3f + %.3f ms), %.2f GiB\n",
              small.tables.size(), one.iteration_time * 1e3, one.embedding_forward * 1e3,
              one.embedding_backward * 1e3, one.peak_memory() / (1024.0 * 1024 * 1024));

  // Table IV-style selection, 4 and 8 GPUs, heavy and normal tasks (13 x GPUs tables)
  for (int gpus : {4, 8}) {
    for (table_mix mix : {table_mix::heavy, table_mix::normal}) {
      dlrm m{.tables = generate_tables(13 * gpus, mix, 64, static_cast<std::uint64_t>(gpus), 4096)};
      const auto sel = search::select_sharder(m, {.batch = 4096}, gpus, node, prof, el);
      std::printf("%d GPUs, %s task (%zu tables):", gpus,
                  mix == table_mix::heavy ? "heavy" : "normal", m.tables.size());
      for (const auto& c : sel.candidates) {
        if (c.feasible)
          std::printf(" %s %.3f ms;", std::string(search::to_string(c.which)).c_str(),
                      c.report.iteration_time * 1e3);
        else
          std::printf(" %s infeasible;", std::string(search::to_string(c.which)).c_str());
      }
      const auto& best = sel.candidates[static_cast<std::size_t>(sel.best)];
      std::printf(
          "\n  chosen %s: %.3f ms (all-to-all %.3f ms x 2, busiest rank %d), spread %.1f %%\n",
          std::string(search::to_string(best.which)).c_str(), best.report.iteration_time * 1e3,
          best.report.all_to_all_forward * 1e3, best.report.busiest_rank, sel.spread() * 100);
    }
  }
}
