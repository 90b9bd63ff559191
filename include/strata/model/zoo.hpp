#pragma once
/// @file model/zoo.hpp
/// @brief Reference models: ResNet-50/152, VGG16/19, CosmoFlow and ParaDL's 2.5B Megatron-LM.
///
/// Parameter counts equal the references: torchvision ResNet-50 25,557,032, ResNet-152
/// 60,192,808 and VGG16 138,357,544; Megatron-LM 2.5B (54 layers, h = 1920, 20 heads,
/// sequence 1024, vocabulary 51,200) 2,490,408,960. Each function is `constexpr`, so a model
/// is built at compile time only where it is used.
/// @code
/// constexpr auto net = strata::zoo::resnet50();
/// static_assert(net.params() == 25'557'032);
/// @endcode

#include <array>
#include <cstddef>

#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::zoo {

namespace detail {

/// torchvision ResNet v1.5 with bottleneck blocks (stride on the 3x3 convolution), 224 x 224.
/// Layers: stem (conv, bn, relu, maxpool); per block conv-bn-relu x2, conv-bn, add, relu and,
/// in each stage's first block, a 1x1 conv + bn downsample; global average pool; fc.
template <int B1, int B2, int B3, int B4>
constexpr std::size_t resnet_layers = 4 + 10 * (B1 + B2 + B3 + B4) + 2 * 4 + 2;

template <int B1, int B2, int B3, int B4>
constexpr model<resnet_layers<B1, B2, B3, B4>> resnet(std::string_view name) {
  constexpr std::size_t n = resnet_layers<B1, B2, B3, B4>;
  model_builder<n> b(name, shape{3, 1, 224, 224});
  b.add(conv{.filters = 64, .kernel = 7, .stride = 2, .padding = 3})
      .add(batch_norm{})
      .add(relu{})
      .add(max_pool{.kernel = 3, .stride = 2, .padding = 1});
  constexpr std::array<int, 4> blocks{B1, B2, B3, B4};
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage;
    for (int i = 0; i < blocks[static_cast<std::size_t>(stage)]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      const shape block_in = b.current;
      b.add(conv{.filters = width, .kernel = 1, .padding = 0})
          .add(batch_norm{})
          .add(relu{})
          .add(conv{.filters = width, .kernel = 3, .stride = stride, .padding = 1})
          .add(batch_norm{})
          .add(relu{})
          .add(conv{.filters = 4 * width, .kernel = 1, .padding = 0})
          .add(batch_norm{});
      const shape main_out = b.current;
      if (i == 0) {
        b.at(block_in)
            .add(conv{.filters = 4 * width, .kernel = 1, .stride = stride, .padding = 0})
            .add(batch_norm{});
      }
      b.at(main_out).add(elementwise{1.0}).add(relu{});  // residual add, then ReLU
    }
  }
  b.add(global_avg_pool{}).add(linear{.features = 1000});
  return b.template trim<n>();
}

/// torchvision VGG at 224 x 224 from its configuration (Simonyan & Zisserman Table 1): each
/// entry a conv3x3 + ReLU with that many filters, 0 a 2 x 2 max pool; then the classifier
/// fc-relu-dropout-fc-relu-dropout-fc (7 layers). The adaptive 7 x 7 average pool is the identity
/// at this input size and is left out.
template <std::size_t C>
constexpr std::size_t vgg_layers(const std::array<int, C>& cfg) {
  std::size_t n = 7;
  for (int f : cfg) n += f == 0 ? 1 : 2;
  return n;
}

template <auto Cfg>
constexpr model<vgg_layers(Cfg)> vgg(std::string_view name) {
  constexpr std::size_t n = vgg_layers(Cfg);
  model_builder<n> b(name, shape{3, 1, 224, 224});
  for (int f : Cfg) {
    if (f == 0) {
      b.add(max_pool{.kernel = 2, .stride = 2});
    } else {
      b.add(conv{.filters = f, .kernel = 3, .stride = 1, .padding = 1, .bias = true}).add(relu{});
    }
  }
  b.add(linear{.features = 4096}).add(relu{}).add(elementwise{1.0});
  b.add(linear{.features = 4096}).add(relu{}).add(elementwise{1.0});
  b.add(linear{.features = 1000});
  return b.template trim<n>();
}

/// Configurations D (VGG16) and E (VGG19).
inline constexpr std::array<int, 18> vgg_d{64, 64,  0,   128, 128, 0,   256, 256, 256,
                                           0,  512, 512, 512, 0,   512, 512, 512, 0};
inline constexpr std::array<int, 21> vgg_e{64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                                           512, 512, 512, 512, 0,   512, 512, 512, 512, 0};

}  // namespace detail

[[nodiscard]] constexpr auto resnet50() { return detail::resnet<3, 4, 6, 3>("resnet50"); }
[[nodiscard]] constexpr auto resnet152() { return detail::resnet<3, 8, 36, 3>("resnet152"); }

/// torchvision VGG16 (configuration D) at 224 x 224: 13 conv3x3 + ReLU, 5 max pools and the
/// classifier, 38 layers, as ParaDL Table IV counts them.
[[nodiscard]] constexpr model<38> vgg16() { return detail::vgg<detail::vgg_d>("vgg16"); }

/// torchvision VGG19 (configuration E) at 224 x 224: 16 conv3x3 + ReLU, 5 max pools and the
/// classifier, 44 layers, 143,667,240 parameters (Proteus Table II rounds to 137 M for its model).
[[nodiscard]] constexpr model<44> vgg19() { return detail::vgg<detail::vgg_e>("vgg19"); }

/// CosmoFlow as in the MLPerf HPC reference: 4 input channels, five 3-D conv(k = 2, "same") +
/// LeakyReLU + max-pool stages with 16, 32, 64, 128, 256 filters, then fc 128, 64, 4: 20 layers
/// and 2,454,964 parameters, ParaDL Table IV's "~2M, 20 layers". ParaDL trains on 512^3
/// samples; for inputs larger than 128^3 the first pools widen to 4 x 4 x 4 so the flattened
/// features stay 4^3 x 256 (our assumption: the paper does not list its layers).
/// `extent` must be 128 x 2^k with 0 <= k <= 5.
[[nodiscard]] constexpr model<20> cosmoflow(int extent = 512) {
  // Each 4x4x4 pool halves the extent once more than a 2x2x2 pool would.
  int wide_pools = 0;
  int e = 128;
  while (e < extent && wide_pools < 5) {
    e *= 2;
    ++wide_pools;
  }
  if (e != extent)
    throw plan_error("CosmoFlow input extent must be 128 x 2^k with 0 <= k <= 5 (128, 256, 512)");
  model_builder<20> b("cosmoflow", shape{4, extent, extent, extent});
  for (int i = 0; i < 5; ++i) {
    const int pool = i < wide_pools ? 4 : 2;
    b.add(conv{.filters = 16 << i, .kernel = 2, .stride = 1, .padding = -1, .bias = true})
        .add(elementwise{1.0})  // LeakyReLU
        .add(max_pool{.kernel = pool, .stride = pool});
  }
  b.add(linear{.features = 128}).add(elementwise{1.0});
  b.add(linear{.features = 64}).add(elementwise{1.0});
  b.add(linear{.features = 4});
  return b.trim<20>();
}

/// A GPT-style decoder in ParaDL's layer notation: token + position embedding, then per block
/// LN, QKV, attention core, projection, residual add, LN, fc 4h, GELU, fc h, residual add; a final
/// LN and the output projection tied to the embedding.
template <int Layers>
constexpr model<10 * Layers + 3> gpt_layers(std::string_view name, int hidden, int heads, int seq,
                                            int vocab) {
  constexpr std::size_t n = 10 * Layers + 3;
  model_builder<n> b(name, shape{1, 1, 1, seq});
  b.add(embedding{.vocabulary = vocab, .dim = hidden, .positions = seq});
  for (int i = 0; i < Layers; ++i) {
    b.add(layer_norm{})
        .add(token_linear{.features = 3 * hidden})
        .add(attention{.heads = heads})
        .add(token_linear{.features = hidden})
        .add(elementwise{1.0})
        .add(layer_norm{})
        .add(token_linear{.features = 4 * hidden})
        .add(elementwise{8.0})  // GELU
        .add(token_linear{.features = hidden})
        .add(elementwise{1.0});
  }
  b.add(layer_norm{}).add(token_linear{.features = vocab, .bias = false, .tied = true});
  return b.template trim<n>();
}

/// ParaDL Table IV's 2.5B Megatron-LM: the Megatron-LM paper's 2.5B configuration (54 layers,
/// hidden 1920, 20 heads, sequence 1024, vocabulary padded to 51,200).
[[nodiscard]] constexpr auto megatron_2_5b() {
  return gpt_layers<54>("megatron-2.5b", 1920, 20, 1024, 51200);
}

/// Yan et al. §6.1's MNIST network (Adam): "2 convolutional layers, 2 linear layers, and a
/// 10-way softmax output layer", about 2.5 million connections. The layers are not listed; we
/// take LeNet's convolutions (20 and 50 filters of 5 x 5, each followed by 2 x 2 max pooling) and
/// two 500-wide linear layers: 288,000 + 1,600,000 + 400,000 + 250,000 + 5,000 = 2,543,000
/// connections (multiply-adds per sample).
[[nodiscard]] constexpr model<7> mnist_adam() {
  return sequential("mnist-adam", shape{.c = 1, .h = 28, .w = 28},
                    conv{.filters = 20, .kernel = 5, .padding = 0, .bias = true},
                    max_pool{.kernel = 2, .stride = 2},
                    conv{.filters = 50, .kernel = 5, .padding = 0, .bias = true},
                    max_pool{.kernel = 2, .stride = 2}, linear{.features = 500},
                    linear{.features = 500}, linear{.features = 10});
}

/// Yan et al. §6.1's ImageNet-22K network (Adam): 256 x 256 inputs, "5 convolutional layers,
/// 2 linear layers, and a 22000-way softmax output layer", over 2 billion connections. The layers
/// are not listed; ours follows Krizhevsky et al.'s shape, widened to 2.0 billion connections,
/// with 36.9 million weights (148 MB): a quarter of them fits a server's 40 MB of L3 cache, a
/// half does not, which is Yan et al.'s explanation of ImageNet-22K's super-linear model-parallel
/// speed-up (§6.2.1).
[[nodiscard]] constexpr model<11> imagenet22k_adam() {
  return sequential(
      "imagenet22k-adam", shape{.c = 3, .h = 256, .w = 256},
      conv{.filters = 128, .kernel = 7, .stride = 2, .padding = 3, .bias = true},  // 128 x 128
      max_pool{.kernel = 2, .stride = 2},                                          // 64 x 64
      conv{.filters = 256, .kernel = 5, .stride = 2, .padding = 2, .bias = true},  // 32 x 32
      max_pool{.kernel = 2, .stride = 2},                                          // 16 x 16
      conv{.filters = 384, .kernel = 3, .padding = 1, .bias = true},
      conv{.filters = 384, .kernel = 3, .padding = 1, .bias = true},
      conv{.filters = 256, .kernel = 3, .padding = 1, .bias = true},
      max_pool{.kernel = 3, .stride = 3},  // 5 x 5
      linear{.features = 1536}, linear{.features = 1024}, linear{.features = 22000});
}

// ---- Inception-v3 (issue 16: Li et al.'s Fig. 2 workload) -----------------------------------

namespace detail {
/// torchvision's BasicConv2d: convolution without bias, batch norm, ReLU (a `kernel_w` gives a
/// rectangular kernel: Inception-v3's 1 x 7, 7 x 1, 1 x 3 and 3 x 1).
template <std::size_t C>
constexpr void basic_conv(model_builder<C>& b, int filters, int kernel, int stride = 1,
                          int padding = -1, int kernel_w = 0) {
  b.add(conv{.filters = filters,
             .kernel = kernel,
             .stride = stride,
             .padding = padding,
             .kernel_w = kernel_w})
      .add(batch_norm{})
      .add(relu{});
}
/// Branches start from `in`; the block's output is their channels concatenated.
constexpr shape concat(shape in, int channels, int h, int w) { return shape{channels, in.d, h, w}; }
}  // namespace detail

/// torchvision Inception-v3 (Szegedy et al. 2016) at 299 x 299, without the auxiliary classifier:
/// 23,834,568 parameters (94 BasicConv2d blocks and the 2048 x 1000 classifier). The 3 x 3
/// average pools of the branches are `max_pool{3, 1, 1}` (the same window, shape and cost);
/// concatenations cost nothing. 297 layers.
[[nodiscard]] constexpr model<297> inception_v3() {
  model_builder<297> b("inception_v3", shape{3, 1, 299, 299});
  using detail::basic_conv;
  basic_conv(b, 32, 3, 2, 0);  // 149
  basic_conv(b, 32, 3, 1, 0);  // 147
  basic_conv(b, 64, 3, 1, 1);
  b.add(max_pool{.kernel = 3, .stride = 2});  // 73
  basic_conv(b, 80, 1, 1, 0);
  basic_conv(b, 192, 3, 1, 0);                // 71
  b.add(max_pool{.kernel = 3, .stride = 2});  // 35
  auto block_a = [&](int pool_features) {     // InceptionA
    const shape in = b.current;
    basic_conv(b, 64, 1);
    b.at(in);
    basic_conv(b, 48, 1);
    basic_conv(b, 64, 5, 1, 2);
    b.at(in);
    basic_conv(b, 64, 1);
    basic_conv(b, 96, 3, 1, 1);
    basic_conv(b, 96, 3, 1, 1);
    b.at(in).add(max_pool{.kernel = 3, .stride = 1, .padding = 1});
    basic_conv(b, pool_features, 1);
    b.at(detail::concat(in, 224 + pool_features, in.h, in.w));
  };
  block_a(32);
  block_a(64);
  block_a(64);
  {  // InceptionB: 35 -> 17
    const shape in = b.current;
    basic_conv(b, 384, 3, 2, 0);
    const shape o = b.current;
    b.at(in);
    basic_conv(b, 64, 1);
    basic_conv(b, 96, 3, 1, 1);
    basic_conv(b, 96, 3, 2, 0);
    b.at(in).add(max_pool{.kernel = 3, .stride = 2});
    b.at(detail::concat(in, 384 + 96 + in.c, o.h, o.w));
  }
  auto block_c = [&](int c7) {  // InceptionC
    const shape in = b.current;
    basic_conv(b, 192, 1);
    b.at(in);
    basic_conv(b, c7, 1);
    basic_conv(b, c7, 1, 1, -1, 7);
    basic_conv(b, 192, 7, 1, -1, 1);
    b.at(in);
    basic_conv(b, c7, 1);
    basic_conv(b, c7, 7, 1, -1, 1);
    basic_conv(b, c7, 1, 1, -1, 7);
    basic_conv(b, c7, 7, 1, -1, 1);
    basic_conv(b, 192, 1, 1, -1, 7);
    b.at(in).add(max_pool{.kernel = 3, .stride = 1, .padding = 1});
    basic_conv(b, 192, 1);
    b.at(detail::concat(in, 768, in.h, in.w));
  };
  block_c(128);
  block_c(160);
  block_c(160);
  block_c(192);
  {  // InceptionD: 17 -> 8
    const shape in = b.current;
    basic_conv(b, 192, 1);
    basic_conv(b, 320, 3, 2, 0);
    const shape o = b.current;
    b.at(in);
    basic_conv(b, 192, 1);
    basic_conv(b, 192, 1, 1, -1, 7);
    basic_conv(b, 192, 7, 1, -1, 1);
    basic_conv(b, 192, 3, 2, 0);
    b.at(in).add(max_pool{.kernel = 3, .stride = 2});
    b.at(detail::concat(in, 320 + 192 + in.c, o.h, o.w));
  }
  auto block_e = [&]() {  // InceptionE
    const shape in = b.current;
    basic_conv(b, 320, 1);
    b.at(in);
    basic_conv(b, 384, 1);
    const shape mid = b.current;
    basic_conv(b, 384, 1, 1, -1, 3);
    b.at(mid);
    basic_conv(b, 384, 3, 1, -1, 1);
    b.at(in);
    basic_conv(b, 448, 1);
    basic_conv(b, 384, 3, 1, 1);
    const shape mid2 = b.current;
    basic_conv(b, 384, 1, 1, -1, 3);
    b.at(mid2);
    basic_conv(b, 384, 3, 1, -1, 1);
    b.at(in).add(max_pool{.kernel = 3, .stride = 1, .padding = 1});
    basic_conv(b, 192, 1);
    b.at(detail::concat(in, 2048, in.h, in.w));
  };
  block_e();
  block_e();
  b.add(global_avg_pool{}).add(linear{.features = 1000});
  return b.template trim<297>();
}

}  // namespace strata::zoo
