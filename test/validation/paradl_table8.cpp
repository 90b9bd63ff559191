// ParaDL Table VIII (ResNet-50 and VGG16 at 32 and 64 ABCI GPUs): the projected ranking.
// Configuration and paper values: examples/paradl_table8.hpp; results: docs/validation.md.
#include <catch2/catch.hpp>
#include <string_view>

#include "paradl_table8.hpp"

TEST_CASE("ParaDL Table VIII: ResNet-50 ranking equals the paper's projection") {
  for (std::size_t i = 0; i < table8::paper.size(); ++i) {
    const auto& row = table8::paper[i];
    if (std::string_view(row.model) != "resnet50") continue;
    INFO(row.gpus << " GPUs, " << row.strategy);
    CHECK(table8::predicted_rank(i) == row.rank);
  }
}

TEST_CASE("ParaDL Table VIII: VGG16 ranks filter and channel last, tied") {
  for (std::size_t i = 0; i < table8::paper.size(); ++i) {
    const auto& row = table8::paper[i];
    if (std::string_view(row.model) != "vgg16") continue;
    INFO(row.gpus << " GPUs, " << row.strategy);
    const int rank = table8::predicted_rank(i);
    if (row.rank == 3) {
      CHECK(rank == 3);
    } else {
      // Known disagreement (docs/validation.md): the printed equations give spatial+data less
      // communication than filter+data for VGG16, so the two hybrids swap places.
      CHECK(rank == (std::string_view(row.strategy) == "spatial+data" ? 1 : 2));
    }
  }
}

TEST_CASE("ParaDL Table VIII: ResNet-50 hybrid compute within 5% of the paper's") {
  // One efficiency for all rows (50% of the V100 fp32 peak) lands ResNet-50's spatial+data
  // compute at 126 s and 63 s against ParaDL's 130 s and 65 s.
  for (std::size_t i : {0u, 4u}) {
    const auto& row = table8::paper[i];
    const strata::report r = table8::predict(row);
    CHECK(r.iteration.compute().count() * r.iterations == Approx(row.comp).epsilon(0.05));
  }
}
