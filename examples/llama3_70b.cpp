// Llama-3 70B on 512 H100-80GB (64 DGX H100 nodes): tensor parallelism 8 with sequence
// parallelism inside each node, 4 pipeline stages (interleaved, 5 chunks of 4 layers), 16
// data-parallel replicas with the distributed optimizer (ZeRO-1), 1024 sequences of 8192
// tokens (8.4M tokens) per iteration, bf16, flash attention, selective recomputation. GEMMs
// use the efficiency fitted on the H100 (`tools/profiles/h100_sxm.json`).
#include <strata/strata.hpp>

#include "transformer_report.hpp"

using namespace strata;

int main() {
  const parallel::nd s{
      .tensor = {.degree = 8, .sequence = true},
      .pipeline = {.degree = 4, .virtual_stages = 5, .kind = parallel::schedule::interleaved},
      .data = {.degree = 16, .zero = 1},
      .recomputation = parallel::recompute::selective,
      .micro_batch = 1};
  const training setup{.batch = 1024, .sequence = 8192};
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  example::print("Llama-3 70B, 512 x H100, t=8 (SP) p=4 (v=5) d=16 ZeRO-1, 1024 x 8192 tokens",
                 analytic::evaluate(zoo::llama3_70b(), s, presets::dgx_h100(64), setup, h100));
  // without sequence parallelism and recomputation the activations grow 2.7x
  parallel::nd no_sp = s;
  no_sp.tensor.sequence = false;
  no_sp.recomputation = parallel::recompute::none;
  example::print("  ... without sequence parallelism or recomputation",
                 analytic::evaluate(zoo::llama3_70b(), no_sp, presets::dgx_h100(64), setup, h100));
}
