// GPT-3 175B on 1024 A100-80GB (128 DGX A100 nodes) with the SC'21 recipe (Narayanan et al.
// 2021): tensor parallelism 8 inside each node, 8 pipeline stages with 2 interleaved chunks
// each, 16 data-parallel replicas, batch 1536 of 2048 tokens, micro-batch 1, fp16 with full
// recomputation and Megatron's unfused attention. The A100 profile is the one that reproduces
// SC'21 Table 1 (docs/validation.md).
#include <strata/strata.hpp>

#include "transformer_report.hpp"

using namespace strata;

int main() {
  const parallel::nd sc21{
      .tensor = {.degree = 8},
      .pipeline = {.degree = 8, .virtual_stages = 2, .kind = parallel::schedule::interleaved},
      .data = {.degree = 16},
      .recomputation = parallel::recompute::full,
      .micro_batch = 1};
  const training setup{.batch = 1536,
                       .sequence = 2048,
                       .precision = precision_mode::fp16_mixed,
                       .flash_attention = false};
  const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
  const auto r = analytic::evaluate(zoo::gpt3_175b(), sc21, presets::dgx_a100(128), setup, a100);
  example::print("GPT-3 175B, 1024 x A100-80GB, t=8 p=8 (v=2) d=16, B=1536, full recompute", r);
  // the same with today's recipe: sequence parallelism, selective recomputation, flash attention
  parallel::nd today = sc21;
  today.tensor.sequence = true;
  today.recomputation = parallel::recompute::selective;
  training modern = setup;
  modern.precision = precision_mode::bf16_mixed;
  modern.flash_attention = true;
  example::print("  ... with sequence parallelism, selective recompute, flash attention",
                 analytic::evaluate(zoo::gpt3_175b(), today, presets::dgx_a100(128), modern, a100));
}
