#include <catch2/catch.hpp>
#include <strata/strata.hpp>

namespace unit_model {

using namespace strata;

TEST_CASE("zoo parameter counts equal the references") {
  CHECK(zoo::resnet50().params() == 25'557'032);   // torchvision
  CHECK(zoo::resnet152().params() == 60'192'808);  // torchvision
  CHECK(zoo::vgg16().params() == 138'357'544);     // torchvision
  CHECK(zoo::vgg19().params() == 143'667'240);     // torchvision
  // Megatron-LM 2.5B: 54 (12 h^2 + 13 h) + (51200 + 1024) h + 2 h, h = 1920
  CHECK(zoo::megatron_2_5b().params() ==
        54.0 * (12.0 * 1920 * 1920 + 13 * 1920) + (51200.0 + 1024) * 1920 + 2 * 1920);
  // CosmoFlow: convs 528 + 4128 + 16448 + 65664 + 262400, fc 16384*128+128, 128*64+64, 64*4+4
  CHECK(zoo::cosmoflow().params() == 2'454'964);
  CHECK(zoo::vgg16().size() == 38);  // ParaDL Table IV: 38 layers
  CHECK(zoo::vgg19().size() == 44);  // 16 conv + 16 ReLU + 5 pools + 7 classifier layers
  CHECK(zoo::cosmoflow().size() == 20);
}

TEST_CASE("ResNet-50 forward FLOPs") {
  // 4.09 GMACs per 224x224 image for convolutions and fc (widely quoted), so ~8.2 GFLOP;
  // batch norm, ReLU and pooling add ~0.05 GFLOP.
  CHECK(zoo::resnet50().fw_flops() / 1e9 == Approx(8.25).margin(0.1));
  CHECK(zoo::resnet50().bw_flops() > 1.9 * zoo::resnet50().fw_flops());
}

TEST_CASE("layers in ParaDL notation") {
  const shape in{.c = 3, .h = 224, .w = 224};
  const layer c = conv{.filters = 64, .kernel = 7, .stride = 2, .padding = 3}.apply(in);
  CHECK(c.params == 3 * 64 * 49);
  CHECK(c.out == shape{64, 1, 112, 112});
  CHECK(c.x() == 3.0 * 224 * 224);
  CHECK(c.y() == 64.0 * 112 * 112);
  CHECK(c.C() == 3);
  CHECK(c.F() == 64);
  // 2 C K^2 F per output position: 2 * 3 * 49 * 64 * 112^2
  CHECK(c.fw_flops == 2.0 * 3 * 49 * 64 * 112 * 112);
  const layer fc = linear{.features = 10}.apply(shape{.c = 4, .h = 2, .w = 2});
  CHECK(fc.params == 16 * 10 + 10);
  CHECK(fc.out == shape{10, 1, 1, 1});
  const layer r = relu{}.apply(in);
  CHECK(r.F() == r.C());
  CHECK_FALSE(r.has_weights());
  const layer p3 = max_pool{.kernel = 2, .stride = 2}.apply(shape{.c = 4, .d = 8, .h = 8, .w = 8});
  CHECK(p3.out == shape{4, 4, 4, 4});
}

TEST_CASE("bad layers are rejected") {
  CHECK_THROWS_WITH(conv{.filters = 0}.apply(shape{}), Catch::Contains("at least one filter"));
  const conv big{.filters = 1, .kernel = 5, .padding = 0};
  const shape small{.h = 3, .w = 3};
  CHECK_THROWS_WITH(big.apply(small), Catch::Contains("larger than its"));
  const attention att{.heads = 7};
  const shape qkv{.c = 3 * 64, .w = 16};
  CHECK_THROWS_WITH(att.apply(qkv), Catch::Contains("multiple of the head count"));
  CHECK_THROWS_WITH(zoo::cosmoflow(300), Catch::Contains("128 x 2^k"));
}

}  // namespace unit_model
