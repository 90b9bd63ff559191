// Device presets against their datasheets (test/data/gpu_presets.csv), the shipped datasheet
// files (tools/devices/*.json) against the presets, the datasheet reader's errors, and a
// profile's device against the cluster's (issue 36, "any device").
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "strata/io/device_file.hpp"
#include "strata/io/transformer_scenario.hpp"

namespace unit_devices {

using namespace strata;
using Catch::Contains;
using nlohmann::json;

namespace {

std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cell);
      cell.clear();
    } else {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json rtx4090_sheet() {
  return json::parse(R"({"name": "my-4090", "memory_GiB": 24, "memory_bandwidth_GBps": 1008,
    "tflops": {"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "bf16": 165.2, "fp8": 330.3},
    "sms": 128, "compute_capability": "8.9"})");
}

std::string device_error(const json& j) {
  try {
    (void)io::device_from_json(j, "device");
  } catch (const plan_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("every device preset matches its datasheet row (gpu_presets.csv)") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/gpu_presets.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  REQUIRE(line.rfind("key,memory,memory_unit,bandwidth_GBps,bf16_tflops", 0) == 0);
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto c = csv_cells(line);
    REQUIRE(c.size() == 10);
    INFO(c[0]);
    const auto* e = presets::find_device(c[0]);
    REQUIRE(e != nullptr);
    CHECK(seen.insert(c[0]).second);
    CHECK_FALSE(c[9].empty());  // a source per row
    const device& d = *e->dev;
    const double unit = c[2] == "GiB" ? 1073741824.0 : c[2] == "GB" ? 1e9 : 1.0;
    CHECK((c[2] == "GiB" || c[2] == "GB" || c[2] == "B"));
    CHECK(d.memory.count() == Approx(std::stod(c[1]) * unit).epsilon(1e-12));
    CHECK(d.memory_bandwidth.count() == Approx(std::stod(c[3]) * 1e9).epsilon(1e-12));
    CHECK(d.bf16.count() == Approx(std::stod(c[4]) * 1e12).epsilon(1e-12));
    CHECK(d.fp16.count() == Approx(std::stod(c[5]) * 1e12).epsilon(1e-12));
    CHECK(d.fp8.count() == Approx(std::stod(c[6]) * 1e12).epsilon(1e-12));
    CHECK(d.int8.count() == Approx(std::stod(c[7]) * 1e12).epsilon(1e-12));
    CHECK(d.sms == std::stoi(c[8]));
    // dense, not sparse: FP8 at most twice the 16-bit peak (datasheets round: L40S 733 vs 2 x
    // 362.05)
    if (d.fp8.count() > 0) CHECK(d.fp8.count() <= 2.0 * d.peak(dtype::bf16).count() * 1.02);
  }
  CHECK(seen.size() == std::size(presets::device_catalogue));
  // the 24 GB cards fine-tuners own exist now
  CHECK(presets::find_device("rtx4090")->dev->memory == 24_GiB);
  CHECK(presets::find_device("nope") == nullptr);
}

TEST_CASE("tools/devices/*.json are the presets, one file each") {
  std::set<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(STRATA_DEVICES_DIR))
    if (f.path().extension() == ".json") files.insert(f.path().stem().string());
  CHECK(files.size() == std::size(presets::device_catalogue));
  for (const auto& e : presets::device_catalogue) {
    const std::string key(e.key);
    INFO(key);
    REQUIRE(files.count(key) == 1);
    const json j = json::parse(slurp(std::string(STRATA_DEVICES_DIR) + "/" + key + ".json"));
    CHECK(j ==
          io::device_to_json(*e.dev, e.key, e.source));  // regenerate: tools/devices/generate.py
    const device d = io::device_from_json(j, key);
    CHECK(io::same_figures(d, *e.dev));
    CHECK(d.name == e.dev->name);
    CHECK(d.sms == e.dev->sms);
    CHECK(d.arch == e.dev->arch);
    CHECK(d.int8.count() == Approx(e.dev->int8.count()).epsilon(1e-12));
    CHECK(d.l2.count() == Approx(e.dev->l2.count()).epsilon(1e-12));
    CHECK(d.link.count() == Approx(e.dev->link.count()).epsilon(1e-12));
    CHECK(d.clock_mhz == e.dev->clock_mhz);
    CHECK(d.power_w == e.dev->power_w);
  }
}

TEST_CASE("a datasheet: inline, by path, or over a preset's device") {
  const device d = io::device_from_json(rtx4090_sheet(), "device");
  CHECK(d.name == "my-4090");
  CHECK(d.memory == 24_GiB);
  CHECK(d.peak(dtype::bf16) == 165.2_TFLOPS);
  CHECK(d.arch == 89);
  CHECK(io::same_figures(d, presets::rtx4090_24gb));
  // compute capability as a number, memory in GB
  json k = rtx4090_sheet();
  k.erase("memory_GiB");
  k["memory_GB"] = 48;
  k["compute_capability"] = 12.0;
  CHECK(io::device_from_json(k, "device").memory == 48_GB);
  CHECK(io::device_from_json(k, "device").arch == 120);
  // in a cluster, by levels or over a preset
  json c{{"device", rtx4090_sheet()},
         {"levels", json::array({{{"fanout", 2}, {"bandwidth_GBps", 32}, {"kind", "pcie"}}})}};
  CHECK(io::detail::parse_cluster(c).dev.memory == 24_GiB);
  const cluster p = io::detail::parse_cluster(
      json::parse(R"({"preset": "l40s-x8", "devices": 8, "device": "rtx4090"})"));
  CHECK(p.dev.name == presets::rtx4090_24gb.name);
  CHECK(p.name == "8 x L40S with RTX-4090-24GB");  // the report's "cluster" says so
  CHECK(p.devices() == 8);
  CHECK(p.levels[0].kind == link_kind::pcie);
  // a file
  const std::string file = "strata_test_device_sheet.json";
  std::ofstream(file) << rtx4090_sheet().dump();
  c["device"] = file;
  CHECK(io::detail::parse_cluster(c).dev.name == "my-4090");
  std::ofstream(file) << R"({"name": "x", "memory_GiB": 24, "memory_bandwidth_GBps": 1008,
    "tflops": {"fp32": 82.6, "bf16": -1}})";
  CHECK_THROWS_WITH(io::detail::parse_cluster(c),
                    "cluster.device: 'strata_test_device_sheet.json': device.tflops.bf16: must lie "
                    "in [0.0, 1000000.0] TFLOP/s (got -1)");
  std::remove(file.c_str());
  c["device"] = "missing_sheet.json";
  CHECK_THROWS_WITH(io::detail::parse_cluster(c), Contains("cluster.device: cannot open device"));
  c["device"] = "rtx9090";
  CHECK_THROWS_WITH(io::detail::parse_cluster(c),
                    Contains("cluster.device: unknown device \"rtx9090\" (known: v100-16gb"));
}

TEST_CASE("each bad datasheet field is one named error") {
  const auto with = [](const char* key, json v) {
    json j = rtx4090_sheet();
    j[key] = std::move(v);
    return device_error(j);
  };
  const auto rate = [](const char* key, json v) {
    json j = rtx4090_sheet();
    j["tflops"][key] = std::move(v);
    return device_error(j);
  };
  const auto without = [](const char* key) {
    json j = rtx4090_sheet();
    j.erase(key);
    return device_error(j);
  };
  CHECK(without("name") == "device.name: missing (required)");
  CHECK(without("memory_GiB") ==
        "device.memory_GiB: missing (required: memory_GiB, memory_GB or memory_bytes)");
  CHECK(with("memory_GB", 24) ==
        "device.memory_GiB: give the memory once: memory_GiB, memory_GB or memory_bytes");
  CHECK(with("memory_GiB", 0) == "device.memory_GiB: must lie in [0.001, 1000000.0] GiB (got 0)");
  CHECK(with("memory_GiB", "24") == "device.memory_GiB: must be a number of GiB (got \"24\")");
  CHECK(without("memory_bandwidth_GBps") == "device.memory_bandwidth_GBps: missing (required)");
  CHECK(without("tflops") == "device.tflops: missing (required)");
  CHECK(rate("fp32", 0) == "device.tflops.fp32: must lie in [1e-06, 1000000.0] TFLOP/s (got 0)");
  CHECK(rate("fp4", 1) == "device.tflops.fp4: unknown field (did you mean \"fp8\"?)");
  CHECK(with("sms", 1.5) == "device.sms: must be an integer (got 1.5)");
  CHECK(with("compute_capability", "sm_89") ==
        "device.compute_capability: must be a CUDA compute capability \"major.minor\" such as "
        "\"8.9\" (got \"sm_89\")");
  CHECK(with("memory", 24) == "device.memory: unknown field (did you mean \"memory_GB\"?)");
  CHECK(with("name", "") == "device.name: must have 1 to 64 characters");
  CHECK(with("link_GBps", -1) == "device.link_GBps: must lie in [0.0, 1000000.0] GB/s (got -1)");
  CHECK_THROWS_WITH(io::detail::parse_device(json(5), "profile.datasheet"),
                    Contains("profile.datasheet: must be a device name (got 5)"));
}

TEST_CASE("a profile's device: the cluster's, or refused; the report says how efficiencies carry") {
  const std::string h100 = slurp(STRATA_PROFILES_DIR "/h100_sxm.json");
  REQUIRE_FALSE(h100.empty());
  json s = json::parse(R"({"model": "gpt2-124m",
    "cluster": {"device": "rtx4090", "levels": [{"fanout": 1, "bandwidth_GBps": 32}]},
    "training": {"batch": 8, "sequence": 1024}})");
  // capacity, the fit verdict and MFU come from the cluster's device
  auto sc = io::parse_transformer_scenario(s, h100);
  auto r = io::transformer_report_json(sc);
  CHECK(r["memory_GiB"]["capacity"].get<double>() == Approx(24.0));
  CHECK(r["efficiencies"] ==
        "datasheet of RTX-4090-24GB, GEMM efficiency fitted on H100-SXM5-80GB");
  const auto ev = analytic::evaluate(sc.net, sc.strategy, sc.machine, sc.setup, sc.profile);
  CHECK(ev.peak == presets::rtx4090_24gb.bf16);
  // the shipped H100 fit, carried on purpose
  s["profile"] = "h100";
  r = io::transformer_report_json(io::parse_transformer_scenario(s, h100));
  CHECK(r["efficiencies"] ==
        "fitted on H100-SXM5-80GB, rescaled to RTX-4090-24GB (rates keep "
        "their fraction of the peaks)");
  // a profile file measured on the RTX 4090 ...
  const std::string file = "strata_test_rtx4090_profile.json";
  std::ofstream(file) << io::to_json(datasheet_profile(presets::rtx4090_24gb)).dump();
  s["profile"] = file;
  r = io::transformer_report_json(io::parse_transformer_scenario(s, h100));
  CHECK(r["efficiencies"] == "fitted on RTX-4090-24GB (profile file)");
  CHECK(r["memory_GiB"]["capacity"].get<double>() == Approx(24.0));
  // ... on an L40S cluster: refused, not silently priced and sized as an L40S
  s["cluster"] = json::parse(R"({"preset": "l40s-x8", "devices": 1})");
  CHECK_THROWS_WITH(io::parse_transformer_scenario(s, h100),
                    Contains("profile: 'strata_test_rtx4090_profile.json' describes "
                             "\"RTX-4090-24GB\" (24.00 GiB, 1008 GB/s, 165.2 TFLOP/s bf16) but "
                             "the cluster's device is \"L40S-48GB\" (44.70 GiB, 864 GB/s, 362.1 "
                             "TFLOP/s bf16)"));
  // ... and with the preset's device replaced by it, the capacity is the card's
  s["cluster"]["device"] = "rtx4090";
  r = io::transformer_report_json(io::parse_transformer_scenario(s, h100));
  CHECK(r["memory_GiB"]["capacity"].get<double>() == Approx(24.0));
  std::remove(file.c_str());
}

}  // namespace unit_devices

namespace unit_devices {

TEST_CASE(
    "a power limit: the arithmetic of a GPU held below its rated power, named in the report") {
  device h = presets::h100_sxm5_80gb;
  CHECK(h.power_w == 700);
  CHECK(power_clock_share(h) == 1.0);
  // (500 / 700)^0.445: ln(5 / 7) = -0.336472, x 0.445 = -0.149730, e^-0.149730 = 0.860940
  h.power_limit_w = 500;
  CHECK(power_clock_share(h) == Approx(0.860940).epsilon(1e-5));
  // pytorch/FBGEMM pull request 2546 timed bf16 GEMMs on H100s held at 500 W: 8192^3 at 585.23
  // TFLOP/s (the point the exponent rests on, with test/data/h100_gemm.csv's 679.76 at 700 W),
  // (65536, 8192, 7168) at 575.12 and (65536, 3584, 8192) at 546.31, 7-13 ms each. The profile
  // published H100 rows run with (datasheet peaks, the H100-fitted efficiency) held at 500 W
  // gives 603.7, 615.9 and 614.7: 3, 7 and 13 % fast, as it is at 700 W on its own 13-14 ms
  // GEMMs (h100_gemm.csv: 615-661 TFLOP/s measured)
  const device_profile rated = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  const device_profile held = datasheet_profile(h, h100_fitted_gemm);
  const auto tflops = [](const gemm_model& g, double m, double n, double k) {
    return 2 * m * n * k / g.time(m, n, k) / 1e12;
  };
  CHECK(tflops(rated.bf16, 8192, 8192, 8192) == Approx(698.2).epsilon(1e-3));
  CHECK(tflops(held.bf16, 8192, 8192, 8192) == Approx(603.7).epsilon(1e-3));
  CHECK(tflops(held.bf16, 65536, 8192, 7168) / 575.12 == Approx(1.071).epsilon(2e-3));
  CHECK(tflops(held.bf16, 65536, 3584, 8192) / 546.31 == Approx(1.125).epsilon(2e-3));
  // memory-bound kernels keep their rates; attention scales with the arithmetic
  CHECK(held.gelu.bandwidth == rated.gelu.bandwidth);
  CHECK(held.attention.training_rate == Approx(0.860940 * rated.attention.training_rate));
  // carried to another device and back, a limit is undone and applied, never compounded
  device h200 = presets::h200_sxm_141gb;
  const device_profile carried = rescale_profile(held, h200);
  CHECK(carried.bf16.peak == Approx(989e12));
  h200.power_limit_w = 500;
  CHECK(rescale_profile(held, h200).bf16.peak == Approx(0.860940 * 989e12));
  CHECK(at_power_limit(held, presets::h100_sxm5_80gb).bf16.peak == Approx(989.4e12));

  // a scenario's cluster holds its GPUs at a limit; the report names it
  const std::string shipped = slurp(STRATA_PROFILES_DIR "/h100_sxm.json");
  json s = json::parse(R"({"model": "gpt2-124m",
    "cluster": {"preset": "dgx-h100", "devices": 8, "power_limit_W": 500},
    "training": {"batch": 64, "sequence": 1024}, "parallel": {"data": 8}})");
  const auto r = io::transformer_report_json(io::parse_transformer_scenario(s, shipped));
  CHECK(r["efficiencies"] ==
        "fitted on H100-SXM5-80GB (profile h100); held at 500 W of its rated 700 W: arithmetic "
        "at 86.1 % of its rates");
  s["cluster"].erase("power_limit_W");
  const auto free = io::transformer_report_json(io::parse_transformer_scenario(s, shipped));
  CHECK(r["iteration_time_s"].get<double>() > 1.05 * free["iteration_time_s"].get<double>());
  CHECK(r["iteration_time_s"].get<double>() <
        1.0 / 0.860940 * free["iteration_time_s"].get<double>());

  // what it refuses, by name
  s["cluster"]["power_limit_W"] = 800;
  CHECK_THROWS_WITH(io::parse_transformer_scenario(s, shipped),
                    "cluster.power_limit_W: H100-SXM5-80GB: a power limit of 800 W is above its "
                    "rated 700 W");
  s["cluster"]["power_limit_W"] = 150;
  CHECK_THROWS_WITH(io::parse_transformer_scenario(s, shipped),
                    Contains("150 W is under a quarter of its rated 700 W"));
  s["cluster"] = json::parse(R"({"preset": "l40s-x8", "devices": 8, "power_limit_W": 300})");
  CHECK_THROWS_WITH(io::parse_transformer_scenario(s, shipped),
                    "cluster.power_limit_W: L40S-48GB has a power limit but no rated board "
                    "power: give its power_W");
  json sheet = rtx4090_sheet();
  sheet["power_W"] = 450;
  sheet["power_limit_W"] = 300;
  const device d = io::device_from_json(sheet, "device");
  CHECK(power_clock_share(d) == Approx(std::pow(300.0 / 450, 0.445)));
  CHECK(io::device_to_json(d)["power_limit_W"] == 300);
  sheet.erase("power_W");
  CHECK(device_error(sheet) ==
        "device.power_limit_W: my-4090 has a power limit but no rated board power: give its "
        "power_W");
}

}  // namespace unit_devices
