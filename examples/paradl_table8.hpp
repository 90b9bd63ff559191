#pragma once
// ParaDL Table VIII: ResNet-50 and VGG16 on 32 and 64 ABCI GPUs with spatial+data, filter+data,
// filter and channel parallelism, one ImageNet epoch (1,281,167 images). Shared by
// examples/paradl_table8.cpp and test/validation/paradl_table8.cpp.
//
// Compute comes from FLOPs at one efficiency for every row: 50% of the V100's 15.7 TFLOP/s fp32
// peak (ParaDL trained in fp32 with Chainer). Batches follow §V-C: for ResNet-50 spatial+data
// runs 256 images per node and filter+data 64; for VGG16 both hybrids run the same count per
// node (32: the largest power of two for which filter+data fits 16 GiB under eq. 20); pure
// filter and channel runs use a global batch of 32. Hybrids put 4 GPUs (one node) in the inner
// group and data parallelism across nodes.
#include <array>
#include <span>

#include <strata/strata.hpp>

namespace table8 {

struct paper_row {
  const char* model;
  int gpus;
  const char* strategy;
  double comp, comm, total;  // ParaDL's projection, seconds per epoch
  int rank;                  // ParaDL's projected rank
};

// The "ParaDL" half of Table VIII for 32 and 64 GPUs.
inline constexpr std::array<paper_row, 16> paper{{
    {"resnet50", 32, "spatial+data", 130, 205, 335, 1},
    {"resnet50", 32, "filter+data", 144, 528, 672, 2},
    {"resnet50", 32, "filter", 321, 13591, 13912, 3},
    {"resnet50", 32, "channel", 321, 13591, 13912, 3},
    {"resnet50", 64, "spatial+data", 65, 95, 150, 1},
    {"resnet50", 64, "filter+data", 72, 159, 231, 2},
    {"resnet50", 64, "filter", 262, 18469, 18731, 3},
    {"resnet50", 64, "channel", 262, 18469, 18731, 3},
    {"vgg16", 32, "spatial+data", 328, 5265, 5593, 2},
    {"vgg16", 32, "filter+data", 730, 1770, 2500, 1},
    {"vgg16", 32, "filter", 694, 18542, 19236, 3},
    {"vgg16", 32, "channel", 694, 18542, 19236, 3},
    {"vgg16", 64, "spatial+data", 164, 2882, 3046, 2},
    {"vgg16", 64, "filter+data", 365, 922, 1287, 1},
    {"vgg16", 64, "filter", 13275, 20822, 34097, 3},
    {"vgg16", 64, "channel", 13275, 20822, 34097, 3},
}};

inline constexpr double imagenet = 1'281'167;

/// strata's projection for row `r`: seconds per epoch.
inline strata::report predict(const paper_row& r) {
  using namespace strata;
  static const auto resnet = zoo::resnet50();
  static const auto vgg = zoo::vgg16();
  const bool is_resnet = r.model[0] == 'r';
  const std::span<const layer> net = is_resnet ? resnet.view() : vgg.view();
  const cluster abci = presets::abci(r.gpus);
  const int nodes = r.gpus / 4;
  const std::string_view s = r.strategy;
  training t{.batch = 32, .dataset = imagenet, .efficiency = 0.5};
  if (s == "spatial+data") {
    t.batch = (is_resnet ? 256 : 32) * nodes;
    return analytic::evaluate(net, parallel::data_spatial{.p1 = nodes, .inner = {.ph = 4}}, abci,
                              t);
  }
  if (s == "filter+data") {
    t.batch = (is_resnet ? 64 : 32) * nodes;
    return analytic::evaluate(net, parallel::data_filter{.p1 = nodes, .p2 = 4}, abci, t);
  }
  if (s == "filter") return analytic::evaluate(net, parallel::filter{.p = r.gpus}, abci, t);
  return analytic::evaluate(net, parallel::channel{.p = r.gpus}, abci, t);
}

/// Rank of row i among the rows of its (model, gpus) block, by predicted epoch time; equal
/// times share a rank, as in the paper.
inline int predicted_rank(std::size_t i) {
  const paper_row& me = paper[i];
  const double mine = predict(me).epoch_time().count();
  int rank = 1;
  for (const paper_row& o : paper) {
    if (std::string_view(o.model) != me.model || o.gpus != me.gpus) continue;
    if (predict(o).epoch_time().count() < mine * (1 - 1e-9)) ++rank;
  }
  return rank;
}

}  // namespace table8
