#pragma once
/// @file analytic/dlrm_host.hpp
/// @brief The host side of an eager DLRM training loop: what the CPU spends issuing each phase's
/// PyTorch operators, in Lin et al.'s terms (T1-T5 per operator, shared by every workload; seed
/// §IV, Algorithm 1 line 9), and the blocking copies that make it wait for the GPU.
///
/// The loop is facebookresearch/dlrm's `dlrm_s_pytorch.py` as Lin et al. ran it for their
/// measured single-GPU steps (moderato/dlrm, `--use-gpu --pin-memory`, timed between CUDA events
/// after a synchronize):
/// - `dlrm_wrap` copies the indices, the offsets and the dense features to the GPU, each
///   `.to(device)` blocking the host until its copy ends;
/// - the bottom MLP (`nn.Linear` + `nn.ReLU` per layer), the lookups (one `LookupFunction` for
///   all tables with `--batched-emb`; one `nn.EmbeddingBag` per table otherwise);
/// - the dot interaction: `cat`, `view`, `bmm` with a transpose, two index lists built as CPU
///   tensors every step, `Z[:, li, lj]` (copying them to the GPU waits for the GPU), `cat`;
/// - the top MLP (its last layer a sigmoid), the loss after `T.to(device)` (another wait) and
///   `E.detach().cpu()` (a wait for the loss);
/// - `optimizer.zero_grad()` (one `zero_` per MLP tensor), `E.backward()` (one autograd node per
///   forward operator and an `AccumulateGrad` per MLP tensor), `optimizer.step()` (SGD: one
///   `add_` per MLP tensor; the batched tables update themselves inside their backward).
/// Between two waits the CPU runs ahead of the GPU; the GPU can start an operator only once the
/// CPU has launched it (`lower_dlrm`).
/// @code
/// const auto h = strata::analytic::eager_host(model, strata::embedding_gradient::fused, 8, 800,
///                                              4096, 4096, strata::analytic::lin_pytorch1);
/// h.total();  // s of host time per step
/// @endcode

#include <cstddef>
#include <initializer_list>

#include "strata/model/dlrm.hpp"
#include "strata/model/embedding_bag.hpp"

namespace strata::analytic {

/// One operator's host time in Lin et al.'s terms: T2 from its start to its first launch, T5
/// between two launches, T3 after the last (an operator without kernels spends T5 in all).
struct op_overhead {
  double t2 = 0, t5 = 0, t3 = 0;
  int launches = 1;
};

/// Lin et al.'s overhead statistics: T1 between two operators, T4 per launch, and T2 / T5 / T3
/// of each operator the DLRM loop runs.
struct eager_overheads {
  double t1 = 0;  ///< s between two operators
  double t4 = 0;  ///< s per launch (cudaLaunchKernel, cudaMemcpyAsync)
  op_overhead linear, elementwise, cat, bmm, view, index, loss, copy, lookup, zero, add;
  op_overhead linear_backward, elementwise_backward, view_backward, accumulate_grad, index_backward,
      bmm_backward, loss_backward, lookup_backward;

  /// Host time of `n` calls of `o`, T1 included.
  [[nodiscard]] constexpr double of(const op_overhead& o, double n = 1) const {
    if (o.launches == 0) return n * (t1 + o.t5);
    return n * (t1 + o.t2 + o.launches * t4 + (o.launches - 1) * o.t5 + o.t3);
  }
};

/// The means Lin et al. measured on their HiPC'22 DLRM traces (PyTorch 1.x on their V100, TITAN
/// Xp and P100 machines; owensgroup/ml_perf_model@5b2522a `analysis/notebooks/overheads_study.
/// ipynb`, digitized in test/data/lin_overheads_t1_t5.csv), in us: T1 7.7; T4 4 (their model's
/// constant, `analysis/utils.py`). Operators their figure shows: linear 33 / 29 / 10.6 (two
/// launches), relu 20.5 / - / 8.6, cat's T2 24.5, view 4.4, index's T5 12.5, to's T2 16, zero_
/// 3.8 / - / 2.1, add_'s T2 5.4, LookupFunction 72 / - / 27, AddmmBackward0 33.5 / 30 / 29,
/// ReluBackward0 16.2 / - / 8.6, TBackward0 3.1, AccumulateGrad 9.4 / - / 6.2, IndexBackward0
/// - / 14.5 / 13, BmmBackward0 - / 19.2 / 33.5, binary_cross_entropy's T5 16.5 and its backward's
/// 14.2, LookupFunctionBackward's T3 57. A figure the file lacks is taken from the nearest
/// operator it has, named here: cat's and the index's T3 and the loss's T2 / T3 are relu's; bmm
/// forward is one of linear's GEMMs (T2 33, T3 10.6); the index's T2 is relu's; `.to` has no T3
/// (its wait is the copy itself); add_'s T3 is zero_'s; IndexBackward0's and the loss backward's
/// T2 are ReluBackward0's; BmmBackward0's T2 is AddmmBackward0's; LookupFunctionBackward's T2 is
/// LookupFunction's. The MSE loss is priced as the binary cross-entropy they traced.
inline constexpr eager_overheads lin_pytorch1{
    .t1 = 7.7e-6,
    .t4 = 4e-6,
    .linear = {33e-6, 29e-6, 10.6e-6, 2},
    .elementwise = {20.5e-6, 0, 8.6e-6, 1},
    .cat = {24.5e-6, 0, 8.6e-6, 1},
    .bmm = {33e-6, 0, 10.6e-6, 1},
    .view = {0, 4.4e-6, 0, 0},
    .index = {20.5e-6, 12.5e-6, 8.6e-6, 3},  // two index copies, the gather
    .loss = {20.5e-6, 16.5e-6, 8.6e-6, 2},
    .copy = {16e-6, 0, 0, 1},
    .lookup = {72e-6, 0, 27e-6, 1},
    .zero = {3.8e-6, 0, 2.1e-6, 1},
    .add = {5.4e-6, 0, 2.1e-6, 1},
    .linear_backward = {33.5e-6, 30e-6, 29e-6, 3},  // input and weight gradients, bias sum
    .elementwise_backward = {16.2e-6, 0, 8.6e-6, 1},
    .view_backward = {0, 3.1e-6, 0, 0},
    .accumulate_grad = {9.4e-6, 0, 6.2e-6, 1},
    .index_backward = {16.2e-6, 14.5e-6, 13e-6, 2},  // zeros, index_put_
    .bmm_backward = {33.5e-6, 19.2e-6, 33.5e-6, 2},
    .loss_backward = {16.2e-6, 14.2e-6, 8.6e-6, 2},
    .lookup_backward = {72e-6, 0, 57e-6, 1}};

/// Host time of one phase of the loop: its first operator (after which the GPU can start the
/// phase) and the rest.
struct host_phase {
  double first = 0, rest = 0;
  [[nodiscard]] constexpr double total() const { return first + rest; }
};

/// The host side of one step, phase by phase (one rank), and what it copies to the GPU.
struct dlrm_host {
  host_phase inputs;  ///< the three blocking `.to(device)` calls (issue only)
  host_phase bottom_forward, embedding_forward;
  host_phase interaction_forward;  ///< up to the index lists' copies (a wait)
  host_phase top_forward;          ///< the gather, `cat`, the top MLP, `T.to(device)` (a wait)
  host_phase loss;                 ///< the loss and `E.detach().cpu()` (a wait)
  host_phase zero_grad, top_backward, interaction_backward, embedding_backward, bottom_backward;
  host_phase optimizer;
  double input_bytes = 0;  ///< the dense features, indices and offsets, copied at the start
  [[nodiscard]] constexpr double total() const {
    double s = 0;
    for (const host_phase* p :
         {&inputs, &bottom_forward, &embedding_forward, &interaction_forward, &top_forward, &loss,
          &zero_grad, &top_backward, &interaction_backward, &embedding_backward, &bottom_backward,
          &optimizer})
      s += p->total();
    return s;
  }
};

namespace detail {
/// A phase of `n` repetitions of `ops` (host times of one repetition's operators, in order).
constexpr host_phase repeated(std::initializer_list<double> ops, double n) {
  double one = 0;
  for (const double t : ops) one += t;
  return {*ops.begin(), n * one - *ops.begin()};
}
}  // namespace detail

/// The host side of one step of `dlrm_s_pytorch.py` over `model` on a rank holding `tables` of
/// its tables (`lookups` per sample over them) with `b` of the `B` samples: the lookups batched
/// (`fused`) or one `nn.EmbeddingBag` per table (priced as a `LookupFunction` each, the nearest
/// operator Lin et al. traced). `input_bytes`: its samples' dense features (fp32) and its tables'
/// int32 indices and offsets for all B samples, as the batched loader builds them.
inline dlrm_host eager_host(const dlrm& model, embedding_gradient gradient, std::size_t tables,
                            double lookups, double b, double B, const eager_overheads& o) {
  const double nb = static_cast<double>(model.bottom.size());
  const double nt = static_cast<double>(model.top.size());
  const double tensors = 2 * (nb + nt);  // weights and biases of the MLPs
  const double t = static_cast<double>(tables);
  const bool batched = gradient == embedding_gradient::fused;
  const auto of = [&](const op_overhead& op) { return o.of(op); };
  dlrm_host h;
  // each copy blocks the host until it ends: the copies follow all three calls' host time
  h.inputs = {3 * of(o.copy), 0};
  h.bottom_forward = detail::repeated({of(o.linear), of(o.elementwise)}, nb);
  h.embedding_forward = batched  ? host_phase{of(o.lookup), 0}
                        : tables ? host_phase{of(o.lookup), (t - 1) * of(o.lookup)}
                                 : host_phase{};
  // cat, view, transpose, bmm, two index lists (CPU tensors, priced as views)
  h.interaction_forward = {of(o.cat), 3 * of(o.view) + of(o.bmm) + 2 * of(o.view)};
  // the gather (two index copies and its kernel), cat, the top MLP, the labels' copy
  h.top_forward = {of(o.index), of(o.cat) + nt * (of(o.linear) + of(o.elementwise)) + of(o.copy)};
  h.loss = {of(o.loss), of(o.view) + of(o.copy)};
  h.zero_grad = detail::repeated({of(o.zero)}, tensors);
  // the loss's node, then per top layer its activation's, AddmmBackward0, TBackward0 and two
  // AccumulateGrads
  const double layer = of(o.elementwise_backward) + of(o.linear_backward) + of(o.view_backward) +
                       2 * of(o.accumulate_grad);
  h.top_backward = {of(o.loss_backward), nt * layer};
  // cat's (views), IndexBackward0, the two uses' sum, BmmBackward0, the transpose's, cat's, the
  // bottom output's two uses' sum
  h.interaction_backward = {
      of(o.view_backward),
      of(o.index_backward) + of(o.add) + of(o.bmm_backward) + 2 * of(o.view_backward) + of(o.add)};
  h.embedding_backward =
      batched  ? host_phase{of(o.lookup_backward), 0}
      : tables ? host_phase{of(o.lookup_backward), (t - 1) * of(o.lookup_backward) + t * of(o.add)}
               : host_phase{};
  // the first bottom layer computes no input gradient: one launch and one T5 fewer
  h.bottom_backward = {of(o.elementwise_backward), (nb - 1) * of(o.elementwise_backward) +
                                                       nb * (layer - of(o.elementwise_backward)) -
                                                       o.t4 - o.linear_backward.t5};
  h.optimizer = detail::repeated({of(o.add)}, tensors + (batched ? 0 : t));
  h.input_bytes = 4 * (b * model.dense_features + B * lookups + t * B + 1);
  return h;
}

}  // namespace strata::analytic
