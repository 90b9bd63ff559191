#pragma once
/// @file parallel/data.hpp
/// @brief Data parallelism for transformers, with ZeRO (`parallel/zero.hpp`). ParaDL's CNN data
/// parallelism is `parallel/cnn/data.hpp`.
///
/// - compute: the global batch split over the replicas (data x expert ranks for dense weights);
/// - collectives: gradients reduced in buckets as the last micro-batch's backward releases them
///   (PyTorch DDP, Megatron's grad buffers), a share `overlap` of the backward hiding them, the
///   last bucket never; ZeRO-2/3 reduce-scatter after every micro-batch; ZeRO-3 gathers each
///   layer's weights before its forward and backward, one layer ahead (the first is exposed);
///   ZeRO-1/2 gather the updated weights behind the next forward; under an interleaved
///   schedule both hide behind the other micro-batches' chunks as well (`behind_chunks`);
/// - memory: a bucket of gradients in flight (ZeRO-0), two layers' gathered weights (ZeRO-3).

#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/parallel/slot.hpp"
#include "strata/parallel/zero.hpp"
#include "strata/units.hpp"

namespace strata::parallel {

struct data_parallel {
  static constexpr policy_slot slot = policy_slot::data;  ///< `parallel/policy.hpp`
  int degree = 1;
  int zero = 0;
  double overlap = 1.0;      ///< fraction of the backward pass the reduction may hide behind
  double bucket = 25e6 * 4;  ///< bucket bytes (PyTorch DDP: 25 MB of fp32 = 100 MB here)
  /// Hybrid sharding (FSDP's HYBRID_SHARD, ZeRO++'s hpZ, MiCS): ZeRO shards over groups of this
  /// many consecutive data-parallel ranks and the groups hold replicas, whose gradient shards
  /// are all-reduced across groups; 0: one group of all `degree` ranks.
  int shard_group = 0;

  /// What the ZeRO stage shards and when its collectives run (`zero_stage`).
  [[nodiscard]] constexpr zero_stage sharding() const { return {zero}; }

  /// Ranks one ZeRO shard group spans.
  [[nodiscard]] constexpr int shards() const { return shard_group > 0 ? shard_group : degree; }

  /// The times of the data-parallel collectives of one stage's gradients or weights.
  struct collective_times {
    seconds all_reduce{}, reduce_scatter{}, all_gather{};
  };
  /// What of `comm`, one step's traffic in buckets of `share` each, stays exposed beside
  /// `work`, one micro-batch's compute on the stage, under a schedule of p stages and v chunks
  /// per stage. The buckets follow the stage's chunks in the order the compute needs them
  /// (forward: chunk 0 first; backward: the last chunk first), so the traffic of the first c + 1
  /// chunks, (c + 1) / v of it, hides behind the (c p + 1) / v micro-batches of work that come
  /// before the point where its last bucket is due or released: with interleaving (Megatron's
  /// 1F1B runs each chunk for p micro-batches in a row) micro-batch 0's chunk c starts c p units
  /// after its chunk 0, and the last micro-batch's chunk c ends c p units before its chunk 0. The
  /// expression is linear in c, so the first and the last chunk bound it; with v = 1 it is
  /// comm - work. One bucket is never hidden. (Megatron-Core's interleaved 1F1B calls a chunk's
  /// grad_sync_func after its last micro-batch's backward and its param_sync_func from the
  /// chunk before's first forward: core/pipeline_parallel/schedules.py.)
  [[nodiscard]] static constexpr seconds behind_chunks(seconds comm, seconds work, double share,
                                                       int p, int v) {
    const double k = v;
    return max(max(comm / k - work / k, comm - ((k - 1) * p + 1) / k * work), share * comm);
  }

  /// What data parallelism and its ZeRO stage add to an iteration: the collectives' time not
  /// hidden behind compute, per iteration of m micro-batches of `forward` and
  /// `backward` seconds each; `layer_share` = 1 / the stage's layers, `bucket_share` = one bucket
  /// over the stage's gradients; p and v: the pipeline's stages and chunks per stage.
  [[nodiscard]] constexpr seconds time(int m, collective_times c, seconds forward, seconds backward,
                                       double layer_share, double bucket_share, int p = 1,
                                       int v = 1) const {
    const double ov = overlap;
    const zero_stage z{zero};
    seconds t{};
    if (!z.shards_gradients()) {  // one reduction a step, behind the last backward(s)
      const seconds reduce = z.shards_optimizer() ? c.reduce_scatter : c.all_reduce;
      t = behind_chunks(reduce, ov * backward, bucket_share, p, v);
    } else if (!z.shards_weights()) {  // a reduce-scatter per micro-batch
      t = m * max(c.reduce_scatter - ov * backward, bucket_share * c.reduce_scatter);
    } else {  // and the weights gathered before each layer in both passes
      t = m *
          (max(c.all_gather - ov * forward, layer_share * c.all_gather) +
           max(c.all_gather + c.reduce_scatter - ov * backward, layer_share * c.reduce_scatter));
    }
    if (z.gathers_updated_weights())
      t += behind_chunks(c.all_gather, ov * forward, bucket_share, p, v);
    return t;
  }

  constexpr void check() const {
    if (degree < 1) throw plan_error(limits::degree_below_one);
    check_zero_stage(zero);
    if (!(overlap >= 0 && overlap <= 1)) throw plan_error(limits::overlap_out_of_range);
    if (!(bucket > 0)) throw plan_error("data parallelism: the bucket size must be positive");
    if (shard_group < 0 || (shard_group > 0 && degree % shard_group != 0))
      throw plan_error(limits::shard_group_must_divide_data);
  }
};

}  // namespace strata::parallel
