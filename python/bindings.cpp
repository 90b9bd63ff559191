// strata._strata: the Python module's native part (docs/python.md). Every function reads a
// scenario as the CLI does and calls the same library functions (io/transformer_request.hpp,
// io/scenario.hpp, io/dlrm_scenario.hpp, sim/, search/batch.hpp), so a report from Python equals
// the CLI's for the same scenario; errors raise strata.Error with the CLI's sentence.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#if __has_include(<dlfcn.h>)
#include <dlfcn.h>
#endif

// The shipped Hugging Face configs an "hf_id" names (io/hf_config.hpp searches the folder
// STRATA_HF_CONFIGS_DIR names after $STRATA_HF_CONFIGS): `hf_configs` next to this module, where
// an installed package has it (pip, `cmake --install`), else the source tree's
// (STRATA_PYTHON_SOURCE_HF_CONFIGS, compiled in for the build tree; python/CMakeLists.txt).
namespace strata_python {
inline std::filesystem::path hf_configs_dir() {
  static const std::filesystem::path dir = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
#if __has_include(<dlfcn.h>)
    static const char anchor = 0;  // an address inside this module
    Dl_info info{};
    if (dladdr(&anchor, &info) != 0 && info.dli_fname != nullptr) {
      const fs::path here = fs::absolute(info.dli_fname, ec).parent_path() / "hf_configs";
      if (!ec && fs::is_directory(here, ec)) return here;
    }
#endif
#ifdef STRATA_PYTHON_SOURCE_HF_CONFIGS
    return fs::path(STRATA_PYTHON_SOURCE_HF_CONFIGS);
#else
    return fs::path();  // none: hf_config.hpp skips an empty path
#endif
  }();
  return dir;
}
}  // namespace strata_python
#define STRATA_HF_CONFIGS_DIR ::strata_python::hf_configs_dir()

#include "shipped_profiles.hpp"
#include "strata/io/device_file.hpp"
#include "strata/io/dlrm_scenario.hpp"
#include "strata/io/evaluate.hpp"
#include "strata/io/fit.hpp"
#include "strata/io/messages.hpp"
#include "strata/io/model_list.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/simulate.hpp"
#include "strata/io/step_scenario.hpp"
#include "strata/io/transformer_request.hpp"
#include "strata/search/batch.hpp"
#include "strata/version.hpp"

namespace py = pybind11;
using json = nlohmann::json;

namespace {

/// What Python sees as strata.Error (a ValueError): the CLI's error sentence without its
/// "strata: error: " prefix.
struct python_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs `body`, turning every C++ exception into strata.Error with the CLI's wording
// (tools/cli/main.cpp, `guarded`).
template <class F>
auto guarded(const std::string& field, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const py::error_already_set&) {
    throw;
  } catch (const python_error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw python_error(
        strata::io::error_text(field, "out of memory: the input is too large to evaluate"));
  } catch (const std::exception& e) {
    throw python_error(strata::io::error_text(field, e.what()));
  }
}

// ---- JSON <-> Python -------------------------------------------------------------------------

py::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return py::none();
    case json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case json::value_t::number_integer:
      return py::int_(j.get<long long>());
    case json::value_t::number_unsigned:
      return py::int_(j.get<unsigned long long>());
    case json::value_t::number_float:
      return py::float_(j.get<double>());
    case json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case json::value_t::array: {
      py::list out;
      for (const auto& x : j) out.append(to_python(x));
      return out;
    }
    case json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = to_python(*it);
      return out;
    }
    default:
      return py::none();
  }
}

json from_python(py::handle h, const std::string& path, int depth = 0) {
  if (depth > strata::io::detail::max_json_depth)
    throw strata::plan_error(path + ": nested deeper than " +
                             std::to_string(strata::io::detail::max_json_depth) + " levels");
  if (h.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) {
    try {
      return h.cast<long long>();
    } catch (const py::cast_error&) {
      return h.cast<double>();  // beyond 64 bits: the range checks will name it
    }
  }
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) {
    json out = json::object();
    for (auto item : h.cast<py::dict>()) {
      if (!py::isinstance<py::str>(item.first))
        throw strata::plan_error(path + ": keys must be strings (got " +
                                 py::repr(item.first).cast<std::string>() + ")");
      const auto key = item.first.cast<std::string>();
      out[key] = from_python(item.second, path + "." + key, depth + 1);
    }
    return out;
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    json out = json::array();
    std::size_t i = 0;
    for (auto x : h)
      out.push_back(from_python(x, path + "[" + std::to_string(i++) + "]", depth + 1));
    return out;
  }
  if (py::hasattr(h, "to_dict")) return from_python(h.attr("to_dict")(), path, depth);
  // NumPy scalars and other numbers
  const auto obj = py::reinterpret_borrow<py::object>(h);
  if (py::hasattr(h, "__index__")) return py::int_(obj).cast<long long>();
  if (py::hasattr(h, "__float__")) return py::float_(obj).cast<double>();
  throw strata::plan_error(path + ": cannot be written as JSON (a Python " +
                           py::str(py::type::of(h).attr("__name__")).cast<std::string>() + ")");
}

/// A scenario: a dict (or an object with `to_dict()`, e.g. strata.Scenario), JSON text, or
/// the path of a scenario file.
json scenario_json(py::handle h) {
  if (py::isinstance<py::str>(h) || py::hasattr(h, "__fspath__")) {
    const std::string text = py::str(h).cast<std::string>();
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{' && !py::hasattr(h, "__fspath__"))
      return strata::io::detail::parse_json(text);
    return strata::io::detail::parse_json(
        strata::io::detail::read_file(text, "scenario", "scenario file"));
  }
  return from_python(h, "scenario");
}

json checked(json j) {
  strata::io::check_finite(j, "");
  return j;
}

// ---- evaluate --------------------------------------------------------------------------------

/// What a search (a transformer's plans, a parameter-server system) reports its progress to:
/// it stops after `time_limit` s (0: none) and, when it holds the GIL (`signals`), on Ctrl-C
/// (Python's signal handlers run here).
std::function<bool(double)> search_progress(double time_limit, bool signals) {
  if (!(time_limit >= 0) || !std::isfinite(time_limit))
    throw python_error("time_limit: must be a number of seconds (0: none)");
  const auto start = std::chrono::steady_clock::now();
  return [start, time_limit, signals](double f) {
    if (signals && PyErr_CheckSignals() != 0) throw py::error_already_set();
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (time_limit > 0 && spent > time_limit)
      throw strata::plan_error(strata::io::search_stopped("time_limit", time_limit, f));
    return true;
  };
}

py::object evaluate(py::handle scenario, const std::string& format, double time_limit,
                    int explain) {
  if (explain < 0) throw python_error("explain: must be a plan's rank, 1 or more (0: none)");
  if (format != "json" && format != "table" && format != "csv")
    throw python_error("format: must be \"json\", \"table\" or \"csv\"");
  auto progress = search_progress(time_limit, true);
  const json j = guarded("scenario", [&] { return scenario_json(scenario); });
  auto text = [](const std::string& t) {
    strata::io::check_finite_text(t);
    return py::object(py::str(t));
  };
  return guarded("scenario", [&]() -> py::object {
    namespace io = strata::io;  // io/evaluate.hpp: as the command line evaluates it
    io::evaluate_request req{.format = format == "table" ? io::report_format::table
                                       : format == "csv" ? io::report_format::csv
                                                         : io::report_format::json,
                             .time_limit = time_limit > 0,
                             .names = "",
                             .explain = explain};
    req.progress = std::move(progress);
    const auto r = io::evaluate_scenario(j, req, strata_cli::h100_sxm_profile);
    if (req.format != io::report_format::json) return text(r.table);
    return to_python(checked(r.report));
  });
}

// ---- sweep -----------------------------------------------------------------------------------

strata::io::transformer_request search_request(py::handle scenario) {
  const json j = scenario_json(scenario);
  if (!strata::io::is_transformer_scenario(j) || !j.contains("search"))
    throw strata::plan_error("search: a sweep needs a transformer scenario with \"search\"");
  return strata::io::parse_transformer_request(j, strata_cli::h100_sxm_profile);
}

/// Every candidate of the search, evaluated in one batch: a dict of NumPy arrays.
py::dict sweep_columns(const strata::io::transformer_request& q, int threads) {
  namespace s = strata::search;
  const auto& sc = q.scenario;
  std::vector<strata::parallel::nd> plans;
  s::batch_report r;
  {
    py::gil_scoped_release free_python;  // pure C++ from here: other Python threads may run
    s::for_each_plan(
        sc.net, sc.machine, sc.setup, sc.profile, sc.space,
        [&](const strata::parallel::nd& p, const auto&, const auto&) { plans.push_back(p); });
    r = s::evaluate_batch(sc.net, sc.machine, sc.setup, sc.profile, plans, {.threads = threads});
  }
  for (Eigen::Index i = 0; i < r.size(); ++i)
    if (!std::isfinite(r.iteration_s(i)) || !std::isfinite(r.memory_bytes(i)))
      throw strata::plan_error(
          "report: the prediction is not a finite number (the inputs are too extreme)");
  const auto n = static_cast<py::ssize_t>(plans.size());
  auto ints = [&](auto field) {
    py::array_t<int> a(n);
    auto w = a.mutable_unchecked<1>();
    for (py::ssize_t i = 0; i < n; ++i) w(i) = field(plans[static_cast<std::size_t>(i)]);
    return a;
  };
  auto doubles = [&](const Eigen::ArrayXd& col, double scale = 1) {
    py::array_t<double> a(n);
    auto w = a.mutable_unchecked<1>();
    for (py::ssize_t i = 0; i < n; ++i) w(i) = col(static_cast<Eigen::Index>(i)) * scale;
    return a;
  };
  using nd = strata::parallel::nd;
  py::dict out;
  out["tensor"] = ints([](const nd& p) { return p.tensor.degree; });
  py::array_t<bool> sp(n), fits(n);
  {
    auto w = sp.mutable_unchecked<1>();
    auto f = fits.mutable_unchecked<1>();
    for (py::ssize_t i = 0; i < n; ++i) {
      w(i) = plans[static_cast<std::size_t>(i)].tensor.sequence;
      f(i) = r.fits(static_cast<Eigen::Index>(i));
    }
  }
  out["sequence_parallel"] = sp;
  out["context"] = ints([](const nd& p) { return p.context.degree; });
  out["expert"] = ints([](const nd& p) { return p.expert.degree; });
  out["pipeline"] = ints([](const nd& p) { return p.pipeline.degree; });
  out["virtual_stages"] = ints([](const nd& p) { return p.pipeline.virtual_stages; });
  out["data"] = ints([](const nd& p) { return p.data.degree; });
  out["zero"] = ints([](const nd& p) { return p.data.zero; });
  out["micro_batch"] = ints([](const nd& p) { return p.micro_batch; });
  py::list rc;
  for (const auto& p : plans) rc.append(py::str(std::string(to_string(p.recomputation))));
  out["recompute"] = py::module_::import("numpy").attr("asarray")(rc);
  out["iteration_s"] = doubles(r.iteration_s);
  for (std::size_t k = 0; k < s::batch_time_terms.size(); ++k)
    out[s::batch_time_terms[k]] = doubles(r.time.col(static_cast<Eigen::Index>(k)));
  // peak: the tensors of the fullest stage; required: that plus the runtime's headroom, what
  // `fits` compares with the card
  out["peak_GiB"] = doubles(r.memory_bytes, 1.0 / (1024.0 * 1024.0 * 1024.0));
  out["required_GiB"] = doubles(r.required_bytes, 1.0 / (1024.0 * 1024.0 * 1024.0));
  out["tokens_per_s"] = doubles(r.tokens_per_s);
  out["mfu"] = doubles(r.mfu);
  out["gpu_hours_per_iteration"] = doubles(r.gpu_hours_per_iteration);
  out["fits"] = fits;
  return out;
}

py::object sweep(py::handle scenario, bool columns, bool front, int threads, double time_limit) {
  if (threads < 0) throw python_error("threads: must be 0 (one per core) or more");
  if (columns && front) throw python_error("columns: give either columns=True or front=True");
  // the columns' enumeration runs without the GIL: no Ctrl-C there
  auto progress = search_progress(time_limit, !columns);
  auto q = guarded("scenario", [&] { return search_request(scenario); });
  q.scenario.space.progress = std::move(progress);
  return guarded("scenario", [&]() -> py::object {
    if (columns) return sweep_columns(q, threads);
    const json report = checked(strata::io::transformer_request_json(q));
    // the requested values no plan could use, said (a UserWarning) rather than dropped:
    // `evaluate` lists them under "unused"
    if (report.contains("unused"))
      for (const auto& u : report["unused"]) {
        const std::string w = "search: not used: " + u.get<std::string>();
        if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0) throw py::error_already_set();
      }
    return to_python(report[front ? "pareto" : "best"]);
  });
}

// ---- which_gpus ------------------------------------------------------------------------------

/// The scenario on every device preset (io/fit.hpp): one dict per device, smallest memory first.
py::object which_gpus(py::handle scenario) {
  const json j = guarded("scenario", [&] { return scenario_json(scenario); });
  return guarded("scenario", [&]() -> py::object {
    const auto f = strata::io::which_gpus(j, strata_cli::h100_sxm_profile);
    return to_python(checked(strata::io::fit_rows_json(f)));
  });
}

// ---- simulate --------------------------------------------------------------------------------

py::object simulate(py::handle scenario, bool overlap, std::optional<int> buckets,
                    std::optional<double> gamma, std::optional<std::string> schedule,
                    std::optional<int> max_in_flight, bool trace, bool details) {
  // the CLI's option checks (strata simulate --buckets, --gamma, --schedule, --max-in-flight)
  if (buckets && (*buckets < 1 || *buckets > (1 << 20)))
    throw python_error("buckets: must be an integer in [1, 1048576]");
  if (gamma && (!std::isfinite(*gamma) || *gamma < 0 || *gamma > 100))
    throw python_error("gamma: must be a number in [0, 100]");
  if (max_in_flight && (*max_in_flight < 0 || *max_in_flight > (1 << 20)))
    throw python_error("max_in_flight: must be an integer in [0, 1048576]");
  if (schedule && *schedule != "gpipe" && *schedule != "1f1b")
    throw python_error("schedule: must be \"gpipe\" or \"1f1b\"");
  const json tj = guarded("scenario", [&] { return scenario_json(scenario); });
  return guarded("scenario", [&]() -> py::object {
    // the one simulate path the command line takes (io/simulate.hpp)
    const auto sim = strata::io::simulate_scenario(tj,
                                                   {.overlap = overlap,
                                                    .buckets = buckets,
                                                    .max_in_flight = max_in_flight,
                                                    .gamma = gamma,
                                                    .schedule = schedule,
                                                    .trace = trace,
                                                    .details = details,
                                                    .names = ""},
                                                   strata_cli::h100_sxm_profile);
    strata::io::check_finite(sim.report, "");
    if (!trace) return to_python(sim.report);
    strata::io::check_finite(sim.trace, "trace");
    return py::make_tuple(to_python(sim.report), to_python(sim.trace));
  });
}

}  // namespace

PYBIND11_MODULE(_strata, m) {
  m.doc() = "strata: predicted iteration time and per-device memory of distributed training";
  m.attr("__version__") = std::to_string(STRATA_VERSION_MAJOR) + "." +
                          std::to_string(STRATA_VERSION_MINOR) + "." +
                          std::to_string(STRATA_VERSION_PATCH);
  py::register_exception<python_error>(m, "Error", PyExc_ValueError);
  m.def("evaluate", &evaluate, py::arg("scenario"), py::arg("format") = "json",
        py::arg("time_limit") = 0.0, py::arg("explain") = 0,
        R"(Evaluates a scenario (dict, JSON text, file path or strata.Scenario) as `strata FILE`
does; returns the report as a dict (format="table" or "csv": the text). A search (a
transformer's plans, a parameter-server system) stops after time_limit seconds (0: none) with
strata.Error, as `--time-limit` does, and on Ctrl-C. explain=N: a search's table also breaks
down its N-th plan, as `--explain N` does.)");
  m.def("sweep", &sweep, py::arg("scenario"), py::arg("columns") = false, py::arg("front") = false,
        py::arg("threads") = 0, py::arg("time_limit") = 0.0,
        R"(Runs the scenario's "search": the ranked plans (dicts, fastest first), the Pareto
front (front=True), or every candidate as NumPy columns (columns=True, batch-evaluated on
`threads` threads, 0: one per core). A listed value no plan could use is a UserWarning
("search: not used: micro_batch 3: ..."), as `evaluate` lists it under "unused". The search
stops after time_limit seconds (0: none) with strata.Error, and on Ctrl-C (not while columns
are enumerated).)");
  m.def(
      "list_gpus", [] { return to_python(strata::io::device_catalogue_json()); },
      R"(The device presets as datasheets (dicts: name, key, memory, memory_bandwidth_GBps,
tflops per precision, sms, ..., source), as `strata --list-gpus --format json` prints them; any
of them, edited, can be a scenario's "device" (docs/devices.md).)");
  m.def(
      "list_models", [] { return to_python(strata::io::model_catalogue_json()); },
      R"(The models a scenario can name (dicts: model, kind "transformer", "cnn" or "hf_id",
parameters; "refused", "not_planned" or "sliding_window" where they apply), as `strata
--list-models --format json` prints them.)");
  m.def("which_gpus", &which_gpus, py::arg("scenario"),
        R"(Evaluates a transformer scenario (one plan; one GPU without a "cluster") on every device
preset, as `strata fit FILE --format json` does: a list of dicts (device, name, capacity_GiB,
required_GiB, peak_GiB, margin_GiB, fits, iteration_s, tokens_per_s, mfu, profile,
efficiencies), smallest memory first.)");
  m.def("simulate", &simulate, py::arg("scenario"), py::arg("overlap") = false,
        py::arg("buckets") = py::none(), py::arg("gamma") = py::none(),
        py::arg("schedule") = py::none(), py::arg("max_in_flight") = py::none(),
        py::arg("trace") = false, py::arg("details") = false,
        R"(Simulates one iteration event by event as `strata simulate` does; returns the report,
or (report, trace) with trace=True (a Chrome-trace / Perfetto dict). details=True adds each
stream's utilization and the critical path, as `--details` does.)");
}
