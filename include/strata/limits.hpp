#pragma once
/// @file limits.hpp
/// @brief The sentences for ParaDL Table III's limits on p and the other plan mistakes.
///
/// A check throws `plan_error(limits::name)` on one line. At run time `what()` is the sentence.
/// In a constant expression the throw cannot be evaluated: GCC and Clang both stop and print the
/// throwing line, so the variable's name states the mistake in the compile error, e.g.
/// `throw plan_error(limits::filter_degree_exceeds_fewest_filters);`.

namespace strata::limits {

inline constexpr const char* degree_below_one = "a parallel degree must be at least 1";
inline constexpr const char* degrees_exceed_max_devices =
    "the parallel degrees multiply to more than 2^24 devices";
inline constexpr const char* plan_exceeds_cluster =
    "the strategy needs more devices than the cluster has";
/// ParaDL Table III: p <= B.
inline constexpr const char* data_degree_exceeds_batch =
    "data parallelism: the degree p must not exceed the mini-batch B (ParaDL Table III: p <= B)";
/// ParaDL Table III: p <= min_l F_l.
inline constexpr const char* filter_degree_exceeds_fewest_filters =
    "filter parallelism: the degree p must not exceed the fewest filters F_l of any layer "
    "(ParaDL Table III: p <= min F_l)";
/// ParaDL Table III: p <= min_l C_l.
inline constexpr const char* channel_degree_exceeds_fewest_channels =
    "channel parallelism: the degree p must not exceed the fewest input channels C_l of any "
    "layer after the first (ParaDL Table III: p <= min C_l)";
/// ParaDL Table III: p = pw x ph <= min_l (W_l x H_l).
inline constexpr const char* spatial_degree_exceeds_smallest_extent =
    "spatial parallelism: the degree p = ph x pw x pd must not exceed the smallest spatial "
    "extent W_l x H_l of any layer (ParaDL Table III)";
inline constexpr const char* spatial_split_exceeds_dimension =
    "spatial parallelism: ph, pw and pd must not exceed the height, width and depth of every "
    "split layer";
/// ParaDL Table III: p <= G.
inline constexpr const char* pipeline_degree_exceeds_layers =
    "pipeline parallelism: the degree p must not exceed the number of layers G (ParaDL Table "
    "III: p <= G)";
inline constexpr const char* pipeline_segments_below_one =
    "pipeline parallelism: the segment count S must be at least 1";
inline constexpr const char* pipeline_segments_exceed_batch =
    "pipeline parallelism: the segment count S must not exceed the batch B";

// ---- transformer plans (parallel/nd.hpp) ----
inline constexpr const char* degrees_must_match_devices =
    "tensor x pipeline x data x context x expert degrees must equal the cluster's device count";
inline constexpr const char* tensor_degree_must_divide_heads =
    "tensor parallelism: the degree must divide the attention heads";
inline constexpr const char* tensor_degree_must_divide_hidden =
    "tensor parallelism: the degree must divide the hidden size";
inline constexpr const char* tensor_degree_must_divide_kv_heads =
    "tensor parallelism: the degree must divide the key/value heads";
inline constexpr const char* tensor_degree_must_divide_ffn =
    "tensor parallelism: the degree must divide the MLP width";
/// Megatron-LM turns sequence parallelism off (with a warning) when the tensor degree is 1:
/// there are no tensor-parallel ranks to split the sequence over.
inline constexpr const char* sequence_parallel_needs_tensor_degree =
    "sequence parallelism needs a tensor degree above 1 (it splits the norms' and dropouts' "
    "tokens over the tensor-parallel ranks)";
inline constexpr const char* micro_batch_must_divide_replica_batch =
    "the micro-batch must divide each data-parallel replica's share of the global batch";
inline constexpr const char* global_batch_must_divide_replicas =
    "the global batch must split evenly over the data-parallel (x expert) replicas";
inline constexpr const char* pipeline_degree_exceeds_transformer_layers =
    "pipeline parallelism: the degree must not exceed the number of layers";
inline constexpr const char* pipeline_layers_must_split_evenly =
    "pipeline parallelism: the layers (after any first/last-stage counts) must split evenly "
    "over the stages and their virtual chunks";
inline constexpr const char* pipeline_split_given_twice =
    "pipeline parallelism: give either first/last-stage layer counts or account_for_embedding / "
    "account_for_loss, not both";
inline constexpr const char* pipeline_chunk_without_layers =
    "pipeline parallelism: with the embedding and the loss counted as layers, every chunk must "
    "still hold at least one transformer layer";
inline constexpr const char* interleaving_needs_pipeline =
    "pipeline parallelism: virtual stages > 1 need the interleaved schedule and a pipeline "
    "degree > 1";
inline constexpr const char* interleaving_needs_micro_batch_multiple =
    "pipeline parallelism: the interleaved schedule needs the micro-batch count to be a "
    "multiple of the pipeline degree";
inline constexpr const char* expert_degree_must_divide_experts =
    "expert parallelism: the degree must divide the number of experts";
inline constexpr const char* expert_load_cv_with_expert_parallel =
    "expert parallelism: an uneven expert load (expert_load_cv > 0) is priced for the experts of "
    "one GPU only; the busiest of several expert ranks is not modelled";
inline constexpr const char* context_degree_must_divide_sequence =
    "context parallelism: twice the degree must divide the sequence length";
inline constexpr const char* zero_stage_out_of_range = "ZeRO stage must be 0, 1, 2 or 3";
inline constexpr const char* deepspeed_zero_with_pipeline =
    "DeepSpeed: ZeRO stages 2 and 3 are incompatible with pipeline parallelism (its pipeline "
    "engine accepts ZeRO-1 only)";
inline constexpr const char* fsdp_has_no_zero1 =
    "FSDP has no ZeRO-1 mode: its sharding strategies are NO_SHARD (zero 0), SHARD_GRAD_OP "
    "(zero 2) and FULL_SHARD (zero 3)";
inline constexpr const char* megatron_2021_has_no_zero =
    "megatron-2021: Megatron-LM as SC'21 ran it has no ZeRO stage (its distributed optimizer, "
    "--use-distributed-optimizer, came in 2022): give zero 0 or the megatron recipe";
inline constexpr const char* offload_needs_deepspeed =
    "offload: optimizer and parameter offload are modelled for the DeepSpeed engine only "
    "(ZeRO-Offload, ZeRO-Infinity)";
inline constexpr const char* offload_optimizer_needs_zero =
    "offload: ZeRO-Offload moves the optimizer partitions, so it needs a ZeRO stage of 1 or more";
inline constexpr const char* offload_parameters_needs_zero3 =
    "offload: parameter offload (ZeRO-Infinity) needs ZeRO stage 3";
inline constexpr const char* offload_needs_host =
    "offload: the cluster gives no host link, host memory bandwidth or NVMe bandwidth (set "
    "cluster.host)";
inline constexpr const char* shard_group_must_divide_data =
    "data parallelism: the shard group (hybrid sharding) must divide the data-parallel degree";
inline constexpr const char* overlap_out_of_range =
    "data parallelism: the overlapped fraction must lie in [0, 1]";
inline constexpr const char* sequence_exceeds_positions =
    "the training sequence is longer than the model's learned position table";

}  // namespace strata::limits
