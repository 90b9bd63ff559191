#pragma once
// The GPTs of Korthikanti et al. 2022 with their Megatron configurations, as the rows of
// test/data/korthikanti2022_fig1_memory.csv and korthikanti2022_table5_time.csv give them (the
// two files share these columns): fp16, unfused attention, vocabulary 51,200.
#include <map>
#include <strata/strata.hpp>
#include <string>

namespace strata_test {

struct korthikanti_case {
  strata::transformer model;
  strata::parallel::nd strategy;
  strata::training setup;
};

inline korthikanti_case korthikanti_row(const std::map<std::string, std::string>& row) {
  using namespace strata;
  auto num = [&](const char* k) { return std::stoi(row.at(k)); };
  const std::string rc = row.at("recompute");
  const int v = num("vp_interleave");
  training setup{.batch = num("global_batch"),
                 .precision = precision_mode::fp16_mixed,
                 .flash_attention = false};
  // Megatron-LM of 2022 waited for each pipeline send (overlap_p2p_comm came in 2023-05)
  setup.framework.overlap_p2p = false;
  return {transformer{.name = "GPT",
                      .layers = num("layers"),
                      .hidden = num("hidden"),
                      .heads = num("heads"),
                      .ffn = num("ffn_hidden"),
                      .vocabulary = 51200,
                      .sequence = num("seq_len")},
          parallel::nd{
              .tensor = {.degree = num("tp"), .sequence = row.at("sequence_parallel") == "yes"},
              .pipeline = {.degree = num("pp"),
                           .virtual_stages = v,
                           .kind = v > 1 ? parallel::schedule::interleaved
                                         : parallel::schedule::one_f_one_b},
              .data = {.degree = num("dp")},
              .recomputation = rc == "selective" ? parallel::recompute::selective
                               : rc == "full"    ? parallel::recompute::full
                                                 : parallel::recompute::none,
              .micro_batch = num("micro_batch")},
          setup};
}

}  // namespace strata_test
