// Compiling this file is the test: policy types compose into the same runtime plan that
// parallel::nd spells by hand, recipe types carry their frameworks' rules, and the ZeRO stage's
// rules are Rajbhandari et al.'s.
#include <strata/concepts.hpp>
#include <strata/strata.hpp>

using namespace strata;
using namespace strata::parallel;

// ZeRO (Rajbhandari et al. 2020 Fig. 1): P_os shards the optimizer states, P_os+g also the
// gradients, P_os+g+p also the weights.
static_assert(!zero_stage{0}.shards_optimizer() && !zero_stage{0}.gathers_updated_weights());
static_assert(zero_stage{1}.shards_optimizer() && !zero_stage{1}.shards_gradients() &&
              zero_stage{1}.gathers_updated_weights());
static_assert(zero_stage{2}.shards_gradients() && !zero_stage{2}.shards_weights() &&
              zero_stage{2}.gathers_updated_weights());
static_assert(zero_stage{3}.shards_weights() && !zero_stage{3}.gathers_updated_weights());
static_assert(!zero_stage{4}.valid() && !zero_stage{-1}.valid());
// 7.5B parameters over 64 ranks at stage 2 with K = 12: 2 Psi + (2 + K) Psi / N_d = 16.64 GB.
static_assert(zero_states(7.5e9, 64, 2, 2, 2, 12).weights == 15e9);
static_assert(zero_states(7.5e9, 64, 2, 2, 2, 12).gradients == 15e9 / 64);

// GPT-3 175B with SC'21's recipe (Narayanan et al. 2021) as policy types and as parallel::nd:
// the same plan, so the same time and memory.
constexpr training gpt3_setup{.batch = 1536, .sequence = 2048};
constexpr pipeline_parallel interleaved{
    .degree = 8, .virtual_stages = 2, .kind = schedule::interleaved};
constexpr strata::plan typed{zoo::gpt3_175b(),
                             presets::dgx_a100(128),
                             gpt3_setup,
                             tensor_parallel{.degree = 8},
                             interleaved,
                             data_parallel{.degree = 16},
                             recomputation<recompute::full>{}};
constexpr transformer_plan by_hand{zoo::gpt3_175b(), presets::dgx_a100(128),
                                   nd{.tensor = {.degree = 8},
                                      .pipeline = interleaved,
                                      .data = {.degree = 16},
                                      .recomputation = recompute::full},
                                   gpt3_setup};
static_assert(iteration_time(typed) == iteration_time(by_hand));
static_assert(peak_memory(typed) == peak_memory(by_hand));

// zero<N> and data_parallel compose in either order.
static_assert(compose(data_parallel{.degree = 4}, zero<2>{}).data.zero == 2);
static_assert(compose(zero<2>{}, data_parallel{.degree = 4}).data.zero == 2);
static_assert(compose(micro_batch{4}).micro_batch == 4);

// The concepts, met and refused.
static_assert(Policy<tensor_parallel> && Policy<zero<3>> && !Policy<nd> && !Policy<int>);
static_assert(Model<transformer> && Model<decltype(zoo::resnet50())> && !Model<int>);
static_assert(frameworks::Recipe<recipes::huggingface> && frameworks::Recipe<recipes::fsdp> &&
              !frameworks::Recipe<int> && !frameworks::Recipe<frameworks::sharding>);
static_assert(sim::Executor<sim::event_executor, transformer_plan>);
static_assert(sim::Executor<sim::event_executor, decltype(typed)>);
static_assert(!sim::Executor<sim::event_executor, int>);

// Recipe types keep their frameworks' rules: DeepSpeed is Megatron's kernels on DeepSpeed's
// engine, FSDP is eager PyTorch without autocast on FSDP's units; the values are the types'.
static_assert(std::is_base_of_v<recipes::megatron, recipes::deepspeed> &&
              std::is_base_of_v<recipes::pytorch_eager, recipes::fsdp>);
static_assert(recipes::huggingface{}.workspace == frameworks::huggingface.workspace &&
              recipes::huggingface{}.name == frameworks::huggingface.name);
static_assert(frameworks::deepspeed.data.engine == frameworks::data_engine::deepspeed &&
              frameworks::deepspeed.modules == frameworks::megatron.modules &&
              frameworks::deepspeed.pipe_buffers);
static_assert(frameworks::fsdp.eager && !frameworks::fsdp.autocast &&
              frameworks::fsdp.data.engine == frameworks::data_engine::fsdp);
static_assert(frameworks::pytorch_eager_modules.modules ==
                  frameworks::module_style::eager_modules &&
              frameworks::pytorch_eager_modules.workspace == frameworks::pytorch_eager.workspace);
