// A parallel policy of your own, as a type: hybrid sharding (PyTorch FSDP's HYBRID_SHARD, ZeRO++'s
// hpZ) written as one policy that shards the model states ZeRO-3-style inside groups of
// `group` data-parallel ranks and keeps replicas across the groups. It fills the plan's data
// slot, so the closed form, the event simulation and a search over its values all run it with
// nothing in the library touched.
#include <cstdio>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>
#include <strata/search/batch.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>
#include <vector>

using namespace strata;
using namespace strata::parallel;

struct hybrid_shard {
  static constexpr policy_slot slot = policy_slot::data;
  int ranks = 8;  ///< data-parallel ranks in all
  int group = 8;  ///< ranks one shard group spans (the rest are replicas)
  friend constexpr void apply(const hybrid_shard& p, nd& s) {
    s.data.degree = p.ranks;
    s.data.zero = 3;
    s.data.shard_group = p.group;
  }
};
static_assert(Policy<hybrid_shard>);

// Llama-3 8B under FSDP on 8 DGX H100 nodes: shard inside a node, replicate across nodes.
constexpr training setup{.batch = 512, .sequence = 4096, .framework = frameworks::fsdp};
constexpr strata::plan<transformer, hybrid_shard, micro_batch> hsdp{
    zoo::llama3_8b(), presets::dgx_h100(8), setup, hybrid_shard{64, 8}, micro_batch{2}};
static_assert(peak_memory(hsdp) <= 80_GiB, "Llama-3 8B with hybrid sharding fits an H100");
static_assert(hsdp.strategy().data.shards() == 8);

int main() {
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  const report r = evaluate(hsdp, h100);
  std::printf("Llama-3 8B, 64 x H100, FSDP hybrid shard (groups of 8): %.3f s, %.2f GiB\n",
              r.iteration_time().count(), to_gib(r.memory.total()));
  std::printf("  simulated: %.3f s\n", sim::simulate(hsdp, h100).iteration.count());
  // a search over the policy's legal values: every shard-group size that divides 64
  const std::vector<nd> plans = ranges::views::iota(1, 65) |
                                ranges::views::filter([](int g) { return 64 % g == 0; }) |
                                ranges::views::transform([](int g) {
                                  return compose(hybrid_shard{64, g}, micro_batch{2});
                                }) |
                                ranges::to<std::vector>();
  const search::batch_report b =
      search::evaluate_batch(zoo::llama3_8b(), presets::dgx_h100(8), setup, h100, plans);
  Eigen::Index best = -1;
  for (Eigen::Index i = 0; i < b.iteration_s.size(); ++i) {
    std::printf("  group %2d: %.3f s, %6.2f GiB required%s\n",
                plans[static_cast<std::size_t>(i)].data.shards(), b.iteration_s[i],
                b.required_bytes[i] / (1 << 30), b.fits[i] ? "" : " (does not fit)");
    if (b.fits[i] && (best < 0 || b.iteration_s[i] < b.iteration_s[best])) best = i;
  }
  std::printf("  fastest that fits: groups of %d\n",
              plans[static_cast<std::size_t>(best)].data.shards());
}
