// Compiling this file is the test: transformer plans are constant expressions.
#include <strata/strata.hpp>
#include <type_traits>

using namespace strata;
using namespace strata::literals;

// Released parameter counts.
static_assert(zoo::llama3_8b().parameters() == 8'030'261'248);
static_assert(zoo::mixtral_8x7b().active_parameters() == 12'879'925'248);

// Korthikanti et al. Table 2 at compile time: GPT-3, t = 8, s = 2048, b = 1: 23 s b h.
static_assert(analytic::layer_activation_bytes(zoo::gpt3_175b(), 2048, 1, 8, false,
                                               parallel::recompute::none,
                                               false) == 23.0 * 2048 * 12288);

// ZeRO (Rajbhandari et al. Fig. 1): 7.5B parameters on 64 ranks, stage 3: 1.875 GB.
static_assert(analytic::zero_model_states(7.5e9, 64, 3) == 1.875_GB);

// GPT-3 175B with SC'21's recipe (Megatron-LM of 2021) on 1024 A100 fits in 80 GiB and runs an
// iteration within 10 % of what Narayanan et al. SC'21 eq. (4) gives at their reported 140 TFLOP/s
// per GPU: 8 B s P / (n X) = 8 x 1536 x 2048 x 175e9 / (1024 x 140e12) = 30.7 s (strata: 30.0 s);
// the same without pipeline parallelism does not fit.
constexpr training gpt3_setup{
    .batch = 1536, .sequence = 2048, .framework = frameworks::megatron_2021};
constexpr transformer_plan gpt3{
    zoo::gpt3_175b(), presets::dgx_a100(128),
    parallel::nd{
        .tensor = {.degree = 8},
        .pipeline = {.degree = 8, .virtual_stages = 2, .kind = parallel::schedule::interleaved},
        .data = {.degree = 16},
        .recomputation = parallel::recompute::full},
    gpt3_setup};
static_assert(peak_memory(gpt3) <= 80_GiB);
static_assert(iteration_time(gpt3) > 27.6_s && iteration_time(gpt3) < 33.8_s);
constexpr transformer_plan gpt3_flat{zoo::gpt3_175b(), presets::dgx_a100(128),
                                     parallel::nd{.tensor = {.degree = 8}, .data = {.degree = 128}},
                                     training{.batch = 1024, .sequence = 2048}};
static_assert(peak_memory(gpt3_flat) > 80_GiB);

// The framework recipe is part of the constant expression: Llama-3.2 1B as Hugging Face trains
// it on one H100 (micro-batch 2, sequence 2048) peaks at 32.2 GB (measured: 32,225,667,072 B,
// test/data/h100_hf_steps.csv).
constexpr training hf_setup = [] {
  training t{.batch = 2, .sequence = 2048};
  t.framework = frameworks::huggingface;
  return t;
}();
constexpr transformer_plan hf_llama{
    zoo::llama3_2_1b(),
    make_cluster("one H100", presets::h100_sxm5_80gb, {level{"node", 1, {1_us, 450_GBps}}}),
    parallel::nd{.micro_batch = 2}, hf_setup};
static_assert(peak_memory(hf_llama) > 32.1_GB && peak_memory(hf_llama) < 32.3_GB);
static_assert(peak_memory(hf_llama) <= 80_GiB);

// One plan template: the values pick the kind.
constexpr plan deduced{
    zoo::llama2_7b(), presets::dgx_a100_40gb(1),
    parallel::nd{.data = {.degree = 8, .zero = 3}, .recomputation = parallel::recompute::full},
    training{.batch = 64, .sequence = 4096}};
static_assert(std::is_same_v<decltype(deduced), const transformer_plan>);
static_assert(peak_memory(deduced) <= 40_GiB);
