// Li et al.'s Fig. 2 and Fig. 25 from strata's own Inception-v3 lowering: asynchronous SGD with
// parameter servers on p3.2xlarge-class workers (one V100, 10 Gb/s). A profiled trace of one
// worker is generated from the lowering (io::lowered_ps_trace), then Algorithm 3.1 predicts the
// throughput of 1-10 workers (sim::simulate_ps).
#include <cstdio>
#include <vector>

#include "strata/hardware/presets.hpp"
#include "strata/io/op_trace.hpp"
#include "strata/model/zoo.hpp"

int main() {
  using namespace strata;
  static constexpr auto net = zoo::inception_v3();
  const auto v100 = datasheet_profile(presets::v100_sxm2_16gb);
  // Assumptions (docs/li.md): 20 profiled steps whose computations vary by +-5 %; parsing at
  // 1 ns/B + 100 us per message on the worker's host CPU (GPU workers); 10 Gb/s = 1.25 GB/s.
  const sim::ps_config base{.bandwidth = 1.25e9,
                            .alpha = 1e-9,
                            .beta = 1e-4,
                            .parse_on_host = true,
                            .steps = 40,
                            .warmup = 5};
  std::printf("Inception-v3, V100 workers, 10 Gb/s, one parameter server (Li et al. Fig. 2)\n");
  std::printf("throughput, images/s, for 1..10 workers\n");
  for (int batch : {16, 32, 64, 128}) {
    const auto trace =
        io::lowered_ps_trace(net.view(), v100, {.batch = batch, .steps = 20, .variation = 0.05});
    const auto job = io::to_ps_job(trace, batch);
    std::vector<double> thr;
    for (int w = 1; w <= 10; ++w) {
      auto c = base;
      c.workers = w;
      thr.push_back(sim::simulate_ps(job, c).throughput);
    }
    // saturation: the first worker count whose next worker adds less than 5 %
    int saturated = 0;
    for (std::size_t w = 0; w + 1 < thr.size() && saturated == 0; ++w)
      if (thr[w + 1] < 1.05 * thr[w]) saturated = static_cast<int>(w) + 1;
    std::printf("batch %3d:", batch);
    for (double x : thr) std::printf(" %6.1f", x);
    if (saturated > 0)
      std::printf("  saturates at %d workers\n", saturated);
    else
      std::printf("  not saturated at 10 workers\n");
  }
  // Fig. 25: a second parameter server (layers placed on the least-loaded server, §5)
  std::printf("two parameter servers vs one, batch 64 (Li et al. Fig. 25)\n");
  for (int servers : {1, 2}) {
    const auto trace = io::lowered_ps_trace(
        net.view(), v100, {.batch = 64, .servers = servers, .steps = 20, .variation = 0.05});
    const auto job = io::to_ps_job(trace, 64, servers);
    std::printf("%d PS:", servers);
    for (int w : {1, 2, 4, 6, 8, 10}) {
      auto c = base;
      c.workers = w;
      std::printf(" W=%d %6.1f", w, sim::simulate_ps(job, c).throughput);
    }
    std::printf("\n");
  }
}
