#pragma once
/// @file io/svg.hpp
/// @brief Pictures without Python: self-contained SVG drawn from strata's own results.
///
/// - `timeline_svg`: one simulated iteration (the same `sim::simulator` and `sim::result` that
///   `chrome_trace` writes), one band per rank: a row per stream that ran work (compute,
///   pipeline sends, data-parallel flows, host), each (micro-batch, chunk) block coloured by
///   kind and numbered, the compute stream's idle time hatched as the bubble, and the rank's
///   memory as a step line against the device's capacity.
/// - `memory_bars_svg`: a stacked bar per pipeline stage (weights, gradients, optimizer states,
///   activations, ...) against the device capacity; `stage_memory_bars` fills it from
///   `analytic::stage_memory`, the closed form the report's peak is the largest of.
/// The files need no script, font or network: open them in a browser or embed them in a page.
/// @code
/// const auto run = strata::sim::simulate(net, plan, cluster, setup, profile);
/// std::ofstream("timeline.svg") << strata::io::timeline_svg(run.graph, run.run);
/// std::ofstream("memory.svg")
///     << strata::io::memory_bars_svg(strata::io::stage_memory_bars(net, plan, setup),
///                                    cluster.dev.memory.count());
/// @endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/analytic/memory.hpp"
#include "strata/error.hpp"
#include "strata/sim/core.hpp"

namespace strata::io {

struct timeline_options {
  std::string title;          ///< drawn above the picture (escaped)
  double width = 1100;        ///< pixels of the time axis
  double row_height = 16;     ///< pixels per stream row
  double memory_height = 34;  ///< pixels of a rank's memory row (0: no memory rows)
};

/// One bar of `memory_bars_svg`: named parts in bytes, stacked bottom-up, and an optional
/// marker (bytes; negative: none), e.g. the simulator's peak for the same stage.
struct memory_bar {
  std::string label;
  std::vector<std::pair<std::string, double>> parts;
  double marker = -1;
};

namespace detail::svg {

/// Text for an SVG element or attribute: the five XML special characters escaped.
inline std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // control characters are not allowed in XML 1.0
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

/// A number with `digits` decimals (finite by construction of the callers).
inline std::string num(double x, int digits = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

/// What a task is, for its colour: decided by its class and the name the executors give it
/// (sim/transformer.hpp: "forward layer 3 mb 2.0 @1", "send gradients 2.0 @1", ...).
enum class kind { forward, backward, optimizer, collective, pipeline_send, data_parallel, host };

inline bool has(std::string_view name, std::string_view word) {
  return name.find(word) != std::string_view::npos;
}

inline kind kind_of(const sim::task_view& t) {
  const std::string_view n = t.name;
  if (t.cls == sim::task_class::other) return kind::host;
  if (t.cls == sim::task_class::communication) {
    if (has(n, "send")) return kind::pipeline_send;
    if (has(n, "gradient") || has(n, "all-gather") || has(n, "reduce") || has(n, "bucket"))
      return kind::data_parallel;
    return kind::collective;
  }
  if (has(n, "optimizer") || has(n, "update")) return kind::optimizer;
  if (has(n, "backward") || n.rfind("bw", 0) == 0) return kind::backward;
  return kind::forward;
}

inline const char* name_of(kind k) {
  switch (k) {
    case kind::forward:
      return "forward";
    case kind::backward:
      return "backward";
    case kind::optimizer:
      return "optimizer step";
    case kind::collective:
      return "tensor/context/expert collectives";
    case kind::pipeline_send:
      return "pipeline send";
    case kind::data_parallel:
      return "data-parallel reduction / gather";
    case kind::host:
      return "host (kernel issue)";
  }
  return "";
}

/// Colour of a kind; `light` for chunks > 0 of an interleaved schedule.
inline const char* colour_of(kind k, bool light) {
  switch (k) {
    case kind::forward:
      return light ? "#9db8e3" : "#3f6fb5";
    case kind::backward:
      return light ? "#a6d9a9" : "#3a9a4a";
    case kind::optimizer:
      return "#8064a2";
    case kind::collective:
      return "#a0785a";
    case kind::pipeline_send:
      return "#e08a2c";
    case kind::data_parallel:
      return "#c8414b";
    case kind::host:
      return "#b8b8b8";
  }
  return "#000000";
}

/// The micro-batch tag of a task name: "2.1 @3" in "forward layer 0 mb 2.1 @3" (micro-batch 2,
/// chunk 1, stage 3); empty when the name has none.
inline std::string_view tag_of(std::string_view name) {
  const auto at = name.find(" mb ");
  if (at != std::string_view::npos) return name.substr(at + 4);
  // "send activations 2.1 @3"
  const auto stage = name.find(" @");
  if (stage == std::string_view::npos) return {};
  auto b = name.rfind(' ', stage - 1);
  return b == std::string_view::npos ? std::string_view{} : name.substr(b + 1);
}

/// A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks over `span`.
inline double tick_step(double span, int n) {
  const double raw = span / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

/// Seconds in the unit that suits `span`: (factor, unit name).
inline std::pair<double, const char*> time_unit(double span) {
  if (span >= 1) return {1.0, "s"};
  if (span >= 1e-3) return {1e3, "ms"};
  return {1e6, "us"};
}

inline constexpr double gib = 1024.0 * 1024.0 * 1024.0;

/// One band of `timeline_svg`: a device's stream rows (resource indices; device -1: the shared
/// resources) and the row whose idle time is drawn as the bubble.
struct timeline_band {
  int device;
  std::vector<int> rows;
  int compute = -1;  // the row whose idle time is the bubble
};

/// What the parts of `timeline_svg` share: the run, its bands and memory samples, the
/// picture's geometry and the document written so far.
struct timeline_canvas {
  const sim::simulator& g;
  const sim::result& r;
  const timeline_options& o;
  std::vector<timeline_band> bands{};
  std::vector<std::vector<std::pair<double, double>>> mem{};  // per device: (time, bytes) steps
  std::vector<double> band_y{};                               // the top of each band
  double left = 190, right = 120, top = 0, rh = 0, scale = 0;
  double axis_y = 0, height = 0, total_width = 0;
  double factor = 1;       // seconds to the axis unit
  const char* unit = "s";  // the axis unit
  std::string s{};         // the document

  /// The x coordinate of time `t` (seconds).
  [[nodiscard]] double x_of(double t) const { return left + t * scale; }
  /// Whether band `b` has a memory row under its streams.
  [[nodiscard]] bool has_memory_row(const timeline_band& b) const {
    return b.device >= 0 && o.memory_height > 0 && !mem[static_cast<std::size_t>(b.device)].empty();
  }
};

/// Refuses a run with nothing to draw, options out of range, or a result of another simulation.
inline void timeline_check(const sim::simulator& g, const sim::result& r,
                           const timeline_options& o) {
  if (!(r.makespan > 0) || !std::isfinite(r.makespan))
    throw plan_error(
        "timeline: the simulated iteration takes no time, so there is nothing to draw");
  if (!(o.width >= 100 && o.width <= 100000) || !(o.row_height >= 4 && o.row_height <= 200) ||
      !(o.memory_height >= 0 && o.memory_height <= 400))
    throw plan_error("timeline: width, row height or memory height out of range");
  if (r.tasks.size() != g.tasks().size())
    throw plan_error("timeline: the result does not belong to this simulation");
}

/// The bands and memory samples: the resources that serve as a task's first resource for some
/// time, grouped by device (shared resources last), and each device's memory step function.
inline void timeline_rows(timeline_canvas& c) {
  const auto& tasks = c.g.tasks();
  const auto& res = c.g.resources();
  std::vector<double> busy(res.size(), 0.0), compute_busy(res.size(), 0.0);
  int devices = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto f = static_cast<std::size_t>(tasks[i].resources.front());
    const double len = c.r.tasks[i].end - c.r.tasks[i].start;
    busy[f] += len;
    if (tasks[i].cls == sim::task_class::compute) compute_busy[f] += len;
  }
  for (const auto& x : res) devices = std::max(devices, x.device + 1);
  for (int dev = 0; dev <= devices; ++dev) {  // dev == devices: shared resources
    timeline_band b{dev == devices ? -1 : dev, {}, -1};
    for (std::size_t k = 0; k < res.size(); ++k) {
      const int owner = res[k].device < 0 ? -1 : res[k].device;
      if (owner != b.device || !(busy[k] > 0)) continue;
      b.rows.push_back(static_cast<int>(k));
      if (res[k].kind == sim::discipline::fifo && compute_busy[k] > 0 &&
          (b.compute < 0 || compute_busy[k] > compute_busy[static_cast<std::size_t>(b.compute)]))
        b.compute = static_cast<int>(k);
    }
    if (!b.rows.empty()) c.bands.push_back(std::move(b));
  }
  // memory per device: the samples' step function and the capacity
  c.mem.resize(static_cast<std::size_t>(devices));
  for (const auto& m : c.r.memory)
    if (m.device >= 0 && m.device < devices)
      c.mem[static_cast<std::size_t>(m.device)].push_back({m.time, m.bytes});
}

/// The geometry: margins, the time scale, each band's top, the axis and the picture's size.
inline void timeline_layout(timeline_canvas& c) {
  c.top = c.o.title.empty() ? 44 : 64;
  c.rh = c.o.row_height;
  c.scale = c.o.width / c.r.makespan;
  double y = c.top;
  for (const auto& b : c.bands) {
    c.band_y.push_back(y);
    y += 14 + c.rh * static_cast<double>(b.rows.size());
    if (c.has_memory_row(b)) y += c.o.memory_height + 4;
    y += 10;
  }
  c.axis_y = y;
  c.height = y + 40;
  c.total_width = c.left + c.o.width + c.right;
}

/// The document's head: the svg element, the bubble's hatch pattern, the background and the
/// title.
inline void timeline_head(timeline_canvas& c) {
  std::string& s = c.s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(c.total_width, 0) +
       "\" height=\"" + num(c.height, 0) + "\" viewBox=\"0 0 " + num(c.total_width, 0) + " " +
       num(c.height, 0) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n";
  s += "<defs><pattern id=\"bubble\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fbe3e3\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d9534f\" stroke-width=\"2\"/>"
       "</pattern></defs>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  if (!c.o.title.empty())
    s += "<text x=\"" + num(c.left, 0) + "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" +
         escape(c.o.title) + "</text>\n";
}

/// The legend: the kinds present, the bubble, the memory line.
inline void timeline_legend(timeline_canvas& c) {
  std::string& s = c.s;
  std::vector<bool> present(7, false);
  for (const auto& t : c.g.tasks()) present[static_cast<std::size_t>(kind_of(t))] = true;
  double lx = c.left;
  const double ly = c.top - 22;
  auto entry = [&](const std::string& fill, const std::string& label) {
    s += "<rect x=\"" + num(lx, 0) + "\" y=\"" + num(ly, 0) +
         "\" width=\"12\" height=\"10\" fill=\"" + fill + "\"/><text x=\"" + num(lx + 16, 0) +
         "\" y=\"" + num(ly + 9, 0) + "\">" + escape(label) + "</text>\n";
    lx += 28 + 6.2 * static_cast<double>(label.size());
  };
  for (int k = 0; k < 7; ++k)
    if (present[static_cast<std::size_t>(k)])
      entry(colour_of(static_cast<kind>(k), false), name_of(static_cast<kind>(k)));
  entry("url(#bubble)", "idle compute stream (bubble)");
  if (c.o.memory_height > 0 && !c.r.memory.empty()) {
    s += "<line x1=\"" + num(lx, 0) + "\" y1=\"" + num(ly + 5, 0) + "\" x2=\"" + num(lx + 12, 0) +
         "\" y2=\"" + num(ly + 5, 0) + "\" stroke=\"#6a1b9a\" stroke-width=\"2\"/><text x=\"" +
         num(lx + 16, 0) + "\" y=\"" + num(ly + 9, 0) + "\">memory</text>\n";
  }
}

/// The grid and the time axis, in the unit that suits the iteration.
inline void timeline_axis(timeline_canvas& c) {
  const double makespan = c.r.makespan;
  const auto [factor, unit] = time_unit(makespan);
  c.factor = factor;
  c.unit = unit;
  const double step = tick_step(makespan, 10);
  for (int k = 0; k * step <= makespan * (1 + 1e-9); ++k) {
    const double t = k * step, x = c.x_of(t);
    c.s += "<line x1=\"" + num(x) + "\" y1=\"" + num(c.top - 4) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(c.axis_y) + "\" stroke=\"#e4e4e4\"/><text x=\"" + num(x) + "\" y=\"" +
           num(c.axis_y + 14) + "\" text-anchor=\"middle\">" +
           num(t * factor, step * factor < 1 ? 2 : (step * factor < 10 ? 1 : 0)) + "</text>\n";
  }
  c.s += "<text x=\"" + num(c.left + c.o.width / 2) + "\" y=\"" + num(c.axis_y + 30) +
         "\" text-anchor=\"middle\">time (" + unit + "); iteration " + num(makespan * factor, 2) +
         " " + unit + "</text>\n";
}

/// The bubble: the compute stream's idle intervals in [0, makespan] hatched on the row at `ry`
/// (tasks `v` in start order), and its idle share written after the row.
inline void timeline_bubble(timeline_canvas& c, const std::vector<int>& v, double ry) {
  double idle = 0, cursor = 0;
  auto gap = [&](double from, double to) {
    if (!(to > from)) return;
    idle += to - from;
    if ((to - from) * c.scale < 0.3) return;  // counted, too thin to draw
    c.s += "<rect x=\"" + num(c.x_of(from)) + "\" y=\"" + num(ry + 1) + "\" width=\"" +
           num((to - from) * c.scale) + "\" height=\"" + num(c.rh - 2) +
           "\" fill=\"url(#bubble)\"/>\n";
  };
  for (int i : v) {
    const auto& rec = c.r.tasks[static_cast<std::size_t>(i)];
    if (!(rec.end > rec.start)) continue;
    gap(cursor, rec.start);
    cursor = std::max(cursor, rec.end);
  }
  gap(cursor, c.r.makespan);
  c.s += "<text x=\"" + num(c.left + c.o.width + 6) + "\" y=\"" + num(ry + c.rh * 0.72) +
         "\" fill=\"#b52b27\">idle " + num(100 * idle / c.r.makespan) + " %</text>\n";
}

/// The digits a string starts with ("2" of "2.1 @3").
inline std::string leading_digits(std::string_view x) {
  std::size_t len = 0;
  while (len < x.size() && x[len] >= '0' && x[len] <= '9') ++len;
  return std::string(x.substr(0, len));
}

/// One block [a, e] on the row at `ry`, of kind `kk`: titled with the first task's name (or,
/// when it `joined` several tasks, its kind and tag), numbered with its micro-batch when wide.
inline void timeline_block(timeline_canvas& c, const sim::task_view& t0, std::string_view tag,
                           double a, double e, kind kk, bool joined, double ry) {
  // micro-batch and chunk from the tag: "m.c @s" (sim/transformer.hpp) or "m"
  // (sim/paradl.hpp)
  const std::string micro = leading_digits(tag);
  const std::string chunk = micro.size() < tag.size() && tag[micro.size()] == '.'
                                ? leading_digits(tag.substr(micro.size() + 1))
                                : std::string();
  const bool light = !chunk.empty() && chunk != "0";
  const double w = std::max((e - a) * c.scale, 1.0);  // a short send stays visible
  c.s += "<rect x=\"" + num(c.x_of(a), 2) + "\" y=\"" + num(ry + 1) + "\" width=\"" + num(w, 2) +
         "\" height=\"" + num(c.rh - 2) + "\" fill=\"" + colour_of(kk, light) +
         "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>" +
         escape(joined ? std::string(name_of(kk)) + " " + std::string(tag) : t0.name) + ": " +
         num(a * c.factor, 3) + "-" + num(e * c.factor, 3) + " " + c.unit + "</title></rect>\n";
  if (!micro.empty() && w >= 7.0 * static_cast<double>(micro.size()) + 3 && kk != kind::host)
    c.s += "<text x=\"" + num(c.x_of(a) + w / 2) + "\" y=\"" + num(ry + c.rh * 0.72) +
           "\" text-anchor=\"middle\" font-size=\"" + num(std::min(10.0, c.rh * 0.65)) +
           "\" fill=\"" + (light ? "#1a1a1a" : "#ffffff") + "\">" + micro + "</text>\n";
}

/// The blocks of the row at `ry` (tasks `v` in start order): consecutive tasks of one
/// micro-batch tag drawn as one when they are of one kind, or when a task of another kind is
/// under a pixel wide (a layer's collectives between its kernels at the scale of a long
/// iteration); the block takes the kind that ran longest.
inline void timeline_blocks(timeline_canvas& c, const std::vector<int>& v, double ry) {
  const auto& tasks = c.g.tasks();
  const double join = 0.5 / c.scale;
  for (std::size_t k = 0; k < v.size();) {
    const auto& t0 = tasks[static_cast<std::size_t>(v[k])];
    const kind first = kind_of(t0);
    const std::string_view tag = tag_of(t0.name);
    const double a = c.r.tasks[static_cast<std::size_t>(v[k])].start;
    double e = c.r.tasks[static_cast<std::size_t>(v[k])].end;
    double kind_time[7] = {};
    kind_time[static_cast<int>(first)] += e - a;
    std::size_t n = k + 1;
    while (n < v.size()) {
      const auto& tn = tasks[static_cast<std::size_t>(v[n])];
      const auto& rn = c.r.tasks[static_cast<std::size_t>(v[n])];
      const kind kn = kind_of(tn);
      if (tag_of(tn.name) != tag || rn.start > e + join ||
          (kn != first && (rn.end - rn.start) * c.scale >= 1.0))
        break;
      kind_time[static_cast<int>(kn)] += rn.end - rn.start;
      e = std::max(e, rn.end);
      ++n;
    }
    const auto kk = static_cast<kind>(std::max_element(kind_time, kind_time + 7) - kind_time);
    if (e > a) timeline_block(c, t0, tag, a, e, kk, n - k > 1, ry);
    k = n;
  }
}

/// A device's memory row at `by`: a step line from 0 to the capacity (or the peak when no
/// capacity is set), the capacity dashed, the peak and the capacity written after the row.
inline void timeline_memory_row(timeline_canvas& c, int device, double by) {
  const auto& ms = c.mem[static_cast<std::size_t>(device)];
  const double cap = c.g.memory_capacity(device);
  const double left = c.left, width = c.o.width;
  double peak = 0;
  for (const auto& [t, bytes] : ms) peak = std::max(peak, bytes);
  const bool has_cap = std::isfinite(cap) && cap > 0;
  const double top_bytes = std::max(has_cap ? cap : 0.0, peak) * 1.02;
  const double my = by + 4, mh = c.o.memory_height;
  auto y_of = [&](double bytes) {
    return top_bytes > 0 ? my + mh - mh * bytes / top_bytes : my + mh;
  };
  std::string& s = c.s;
  s += "<text x=\"16\" y=\"" + num(my + mh * 0.5 + 4) + "\">memory</text>\n";
  s += "<rect x=\"" + num(left) + "\" y=\"" + num(my) + "\" width=\"" + num(width) +
       "\" height=\"" + num(mh) + "\" fill=\"#faf7fc\" stroke=\"#e0d6ea\"/>\n";
  if (has_cap)
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y_of(cap)) + "\" x2=\"" + num(left + width) +
         "\" y2=\"" + num(y_of(cap)) + "\" stroke=\"#c8414b\" stroke-dasharray=\"5,3\"/>\n";
  std::string path = "M" + num(left) + "," + num(y_of(0));
  double last_x = left, last_y = y_of(0);
  for (const auto& [t, bytes] : ms) {
    const double x = c.x_of(t), yy = y_of(bytes);
    if (std::abs(x - last_x) < 0.05 && std::abs(yy - last_y) < 0.05) continue;
    path += " H" + num(x) + " V" + num(yy);
    last_x = x;
    last_y = yy;
  }
  path += " H" + num(left + width);
  s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#6a1b9a\" stroke-width=\"1.5\"/>\n";
  s += "<text x=\"" + num(left + width + 6) + "\" y=\"" + num(my + 12) +
       "\" fill=\"#6a1b9a\">peak " + num(peak / gib, 2) + " GiB</text>\n";
  if (has_cap)
    s += "<text x=\"" + num(left + width + 6) + "\" y=\"" + num(my + 26) +
         "\" fill=\"#c8414b\">of " + num(cap / gib, 1) + " GiB</text>\n";
}

/// The tasks of each resource (by their first resource), in start order.
inline std::vector<std::vector<int>> timeline_tasks_by_row(const timeline_canvas& c) {
  const auto& tasks = c.g.tasks();
  std::vector<std::vector<int>> by_row(c.g.resources().size());
  for (std::size_t i = 0; i < tasks.size(); ++i)
    by_row[static_cast<std::size_t>(tasks[i].resources.front())].push_back(static_cast<int>(i));
  auto start_of = [&](int i) { return c.r.tasks[static_cast<std::size_t>(i)].start; };
  for (auto& v : by_row)
    std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return start_of(a) < start_of(b); });
  return by_row;
}

/// Band `bi`: its rank's name, a row per stream (name, background, bubble, blocks), then its
/// memory row.
inline void timeline_band_draw(timeline_canvas& c, std::size_t bi,
                               const std::vector<std::vector<int>>& by_row) {
  const auto& res = c.g.resources();
  const auto& b = c.bands[bi];
  double by = c.band_y[bi];
  c.s += "<text x=\"8\" y=\"" + num(by + 10) + "\" font-weight=\"bold\">" +
         (b.device < 0 ? std::string("shared") : "rank " + std::to_string(b.device)) + "</text>\n";
  by += 14;
  for (std::size_t ri = 0; ri < b.rows.size(); ++ri) {
    const int row = b.rows[ri];
    const auto R = static_cast<std::size_t>(row);
    const double ry = by + c.rh * static_cast<double>(ri);
    c.s +=
        "<text x=\"16\" y=\"" + num(ry + c.rh * 0.72) + "\">" + escape(res[R].name) + "</text>\n";
    c.s += "<rect x=\"" + num(c.left) + "\" y=\"" + num(ry + 1) + "\" width=\"" + num(c.o.width) +
           "\" height=\"" + num(c.rh - 2) + "\" fill=\"#f7f7f7\"/>\n";
    const auto& v = by_row[R];
    // the bubble: the compute stream's idle intervals in [0, makespan]
    if (row == b.compute) timeline_bubble(c, v, ry);
    timeline_blocks(c, v, ry);
  }
  by += c.rh * static_cast<double>(b.rows.size());
  // memory: a step line from 0 to the capacity (or the peak when no capacity is set)
  if (c.has_memory_row(b)) timeline_memory_row(c, b.device, by);
}

}  // namespace detail::svg

/// The timeline of one simulated iteration as a self-contained SVG document (see the file's
/// comment). Throws `plan_error` when the run took no time (nothing to draw).
[[nodiscard]] inline std::string timeline_svg(const sim::simulator& g, const sim::result& r,
                                              const timeline_options& o = {}) {
  namespace d = detail::svg;
  d::timeline_check(g, r, o);
  d::timeline_canvas c{g, r, o};
  // rows: the resources that serve as a task's first resource for some time, grouped by device
  d::timeline_rows(c);
  d::timeline_layout(c);
  c.s.reserve(g.tasks().size() * 40 + 4096);
  d::timeline_head(c);
  d::timeline_legend(c);
  d::timeline_axis(c);
  const auto by_row = d::timeline_tasks_by_row(c);
  for (std::size_t bi = 0; bi < c.bands.size(); ++bi) d::timeline_band_draw(c, bi, by_row);
  c.s += "</svg>\n";
  return std::move(c.s);
}

/// Stacked memory bars (one per entry of `bars`, parts in bytes) against `capacity` bytes (a
/// dashed line; pass 0 for none), as a self-contained SVG document.
[[nodiscard]] inline std::string memory_bars_svg(const std::vector<memory_bar>& bars,
                                                 double capacity, const std::string& title = {},
                                                 const std::string& marker_label = {}) {
  namespace d = detail::svg;
  if (bars.empty()) throw plan_error("memory bars: there is no bar to draw");
  if (!(capacity >= 0) || !std::isfinite(capacity))
    throw plan_error("memory bars: the capacity must be a finite number of bytes, 0 for none");
  double top_bytes = capacity;
  std::vector<std::string> names;  // the parts, in first-seen order, for colours and the legend
  for (const auto& b : bars) {
    double sum = 0;
    for (const auto& [name, bytes] : b.parts) {
      if (!(bytes >= 0) || !std::isfinite(bytes))
        throw plan_error("memory bars: '" + b.label + "' part '" + name +
                         "' must be a finite, non-negative number of bytes");
      sum += bytes;
      if (bytes > 0 && std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
    }
    top_bytes = std::max({top_bytes, sum, std::isfinite(b.marker) ? b.marker : 0.0});
  }
  if (!(top_bytes > 0)) throw plan_error("memory bars: every bar is empty");
  static constexpr const char* palette[] = {"#3f6fb5", "#e08a2c", "#3a9a4a", "#c8414b", "#8064a2",
                                            "#a0785a", "#d17fbf", "#7f7f7f", "#b5b536", "#2fb3c4"};
  auto colour = [&](const std::string& name) {
    const auto i =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    return palette[i % std::size(palette)];
  };
  const double gib_top = top_bytes / d::gib * 1.08;
  const double step = d::tick_step(gib_top, 6);
  const double left = 60, top = title.empty() ? 20 : 40, plot_h = 300;
  const double bar_w = std::clamp(480.0 / static_cast<double>(bars.size()), 14.0, 70.0);
  const double gap = bar_w * 0.45;
  const double plot_w = static_cast<double>(bars.size()) * (bar_w + gap) + gap;
  const double legend_x = left + plot_w + 20, width = legend_x + 230;
  const double height =
      std::max(top + plot_h + 50, top + 18.0 * static_cast<double>(names.size() + 3));
  auto y_of = [&](double bytes) { return top + plot_h - plot_h * (bytes / d::gib) / gib_top; };

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + d::num(width, 0) + "\" height=\"" +
       d::num(height, 0) + "\" viewBox=\"0 0 " + d::num(width, 0) + " " + d::num(height, 0) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  if (!title.empty())
    s += "<text x=\"" + d::num(left, 0) + "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" +
         d::escape(title) + "</text>\n";
  for (int k = 0; k * step <= gib_top; ++k) {
    const double yy = y_of(k * step * d::gib);
    s += "<line x1=\"" + d::num(left) + "\" y1=\"" + d::num(yy) + "\" x2=\"" +
         d::num(left + plot_w) + "\" y2=\"" + d::num(yy) + "\" stroke=\"#e4e4e4\"/><text x=\"" +
         d::num(left - 6) + "\" y=\"" + d::num(yy + 4) + "\" text-anchor=\"end\">" +
         d::num(k * step, step < 1 ? 1 : 0) + "</text>\n";
  }
  s += "<text x=\"14\" y=\"" + d::num(top + plot_h / 2) + "\" transform=\"rotate(-90 14 " +
       d::num(top + plot_h / 2) + ")\" text-anchor=\"middle\">GiB per device</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double x = left + gap + static_cast<double>(i) * (bar_w + gap);
    double acc = 0;
    for (const auto& [name, bytes] : b.parts) {
      if (!(bytes > 0)) continue;
      const double y0 = y_of(acc + bytes), h = y_of(acc) - y0;
      s += "<rect x=\"" + d::num(x) + "\" y=\"" + d::num(y0, 2) + "\" width=\"" + d::num(bar_w) +
           "\" height=\"" + d::num(h, 2) + "\" fill=\"" + colour(name) + "\"><title>" +
           d::escape(b.label + ": " + name + " " + d::num(bytes / d::gib, 2) + " GiB") +
           "</title></rect>\n";
      acc += bytes;
    }
    s += "<text x=\"" + d::num(x + bar_w / 2) + "\" y=\"" + d::num(y_of(acc) - 4) +
         "\" text-anchor=\"middle\">" + d::num(acc / d::gib, 1) + "</text>\n";
    s += "<text x=\"" + d::num(x + bar_w / 2) + "\" y=\"" + d::num(top + plot_h + 16) +
         "\" text-anchor=\"middle\">" + d::escape(b.label) + "</text>\n";
    if (b.marker >= 0 && std::isfinite(b.marker))
      s += "<line x1=\"" + d::num(x - 3) + "\" y1=\"" + d::num(y_of(b.marker)) + "\" x2=\"" +
           d::num(x + bar_w + 3) + "\" y2=\"" + d::num(y_of(b.marker)) +
           "\" stroke=\"#111111\" stroke-width=\"2\"/>\n";
  }
  if (capacity > 0) {
    const double yc = y_of(capacity);
    s += "<line x1=\"" + d::num(left) + "\" y1=\"" + d::num(yc) + "\" x2=\"" +
         d::num(left + plot_w) + "\" y2=\"" + d::num(yc) +
         "\" stroke=\"#c8414b\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\"/>\n";
  }
  s += "<line x1=\"" + d::num(left) + "\" y1=\"" + d::num(top + plot_h) + "\" x2=\"" +
       d::num(left + plot_w) + "\" y2=\"" + d::num(top + plot_h) + "\" stroke=\"#333333\"/>\n";
  // legend, top part first (the stack's order read downwards)
  double ly = top + 4;
  if (capacity > 0) {
    s += "<line x1=\"" + d::num(legend_x) + "\" y1=\"" + d::num(ly + 5) + "\" x2=\"" +
         d::num(legend_x + 12) + "\" y2=\"" + d::num(ly + 5) +
         "\" stroke=\"#c8414b\" stroke-width=\"1.5\" stroke-dasharray=\"4,2\"/><text x=\"" +
         d::num(legend_x + 18) + "\" y=\"" + d::num(ly + 9) + "\">device capacity " +
         d::num(capacity / d::gib, 1) + " GiB</text>\n";
    ly += 18;
  }
  if (!marker_label.empty()) {
    s += "<line x1=\"" + d::num(legend_x) + "\" y1=\"" + d::num(ly + 5) + "\" x2=\"" +
         d::num(legend_x + 12) + "\" y2=\"" + d::num(ly + 5) +
         "\" stroke=\"#111111\" stroke-width=\"2\"/><text x=\"" + d::num(legend_x + 18) +
         "\" y=\"" + d::num(ly + 9) + "\">" + d::escape(marker_label) + "</text>\n";
    ly += 18;
  }
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    s += "<rect x=\"" + d::num(legend_x) + "\" y=\"" + d::num(ly) +
         "\" width=\"12\" height=\"10\" fill=\"" + colour(*it) + "\"/><text x=\"" +
         d::num(legend_x + 18) + "\" y=\"" + d::num(ly + 9) + "\">" + d::escape(*it) + "</text>\n";
    ly += 18;
  }
  s += "</svg>\n";
  return s;
}

/// One bar per pipeline stage: `analytic::stage_memory` of the stage at its peak moment, split
/// into the report's terms.
[[nodiscard]] inline std::vector<memory_bar> stage_memory_bars(const transformer& m,
                                                               const parallel::nd& s,
                                                               const training& t) {
  std::vector<memory_bar> out;
  const analytic::plan_keeps keeps = analytic::keeps_of(m, s, t);
  for (int i = 0; i < s.pipeline.degree; ++i) {
    const memory_breakdown x = analytic::stage_memory(analytic::stage_terms(m, s, t, i, keeps), t);
    out.push_back({"stage " + std::to_string(i),
                   {{"weights", x.weights.count()},
                    {"gradients", x.gradients.count()},
                    {"optimizer states", x.optimizer_states.count()},
                    {"activations", (x.activations + x.embedding_activations).count()},
                    {"weight copies", x.weight_casts.count()},
                    {"logits (loss)", x.logits.count()},
                    {"buffers", x.buffers.count()},
                    {"batch, workspace, other", (x.batch + x.workspace + x.other).count()}},
                   -1});
  }
  return out;
}

}  // namespace strata::io
