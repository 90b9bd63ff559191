// strata-mpi: a transformer search ("search" in the scenario) split over MPI ranks.
// Usage: mpirun -n R strata-mpi FILE [--timing] [--time-limit S]
//
// Rank 0 reads the scenario and broadcasts it; rank r sweeps the lowered-layer groups g with
// g % R == r (search::sweep_part), keeping its best plans and its Pareto front; rank 0 gathers
// them, merges (search::merge: the global best, the front of the fronts, the counts summed) and
// prints the report `strata FILE` prints for the same scenario, byte for byte.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "shipped_profiles.hpp"
#include "strata/io/messages.hpp"
#include "strata/io/transformer_request.hpp"

namespace {

namespace search = strata::search;
using entry = search::transformer_front::entry;
static_assert(std::is_trivially_copyable_v<search::ranked_transformer_plan> &&
                  std::is_trivially_copyable_v<entry>,
              "strata-mpi sends plans as bytes: they must be trivially copyable");

// One rank's result as bytes: counts, then the best plans, then the front's entries.
struct header {
  long long candidates, fitting, best, front;
  search::space_usage usage;
};

std::vector<char> pack(const search::transformer_sweep_result& r) {
  const header h{r.candidates, r.fitting, static_cast<long long>(r.best.size()),
                 static_cast<long long>(r.pareto.entries.size()), r.usage};
  std::vector<char> out(sizeof h + r.best.size() * sizeof(search::ranked_transformer_plan) +
                        r.pareto.entries.size() * sizeof(entry));
  char* at = out.data();
  std::memcpy(at, &h, sizeof h);
  at += sizeof h;
  if (!r.best.empty()) std::memcpy(at, r.best.data(), r.best.size() * sizeof r.best[0]);
  at += r.best.size() * sizeof(search::ranked_transformer_plan);
  if (!r.pareto.entries.empty())
    std::memcpy(at, r.pareto.entries.data(), r.pareto.entries.size() * sizeof(entry));
  return out;
}

search::transformer_sweep_result unpack(const char* at) {
  header h{};
  std::memcpy(&h, at, sizeof h);
  at += sizeof h;
  search::transformer_sweep_result r;
  r.candidates = h.candidates;
  r.fitting = h.fitting;
  r.usage = h.usage;
  r.best.resize(static_cast<std::size_t>(h.best));
  if (h.best > 0) std::memcpy(r.best.data(), at, r.best.size() * sizeof r.best[0]);
  at += r.best.size() * sizeof(search::ranked_transformer_plan);
  r.pareto.entries.resize(static_cast<std::size_t>(h.front));
  if (h.front > 0)
    std::memcpy(r.pareto.entries.data(), at, r.pareto.entries.size() * sizeof(entry));
  return r;
}

int fail(int rank, const std::string& field, const std::string& what) {
  if (rank == 0) std::cerr << "strata-mpi: error: " << strata::io::error_text(field, what) << '\n';
  return 2;
}

// The error of the first rank that has one (empty: none), on rank 0; every rank learns whether
// there was one (a collective: all ranks call it together). The sentence travels to rank 0, so
// a limit hit or a mistake found on rank 3 reads the same as on rank 0.
bool first_error(int rank, int ranks, std::string& error) {
  const int mine = error.empty() ? ranks : rank;
  int first = ranks;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == ranks) return false;
  if (first != 0) {
    if (rank == first) {
      const int n = static_cast<int>(error.size());
      MPI_Send(&n, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
      MPI_Send(error.data(), n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    } else if (rank == 0) {
      int n = 0;
      MPI_Recv(&n, 1, MPI_INT, first, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      error.resize(static_cast<std::size_t>(n));
      MPI_Recv(error.data(), n, MPI_CHAR, first, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  return true;
}

int run(int rank, int ranks, int argc, char** argv) {
  std::string path;
  bool timing = false;
  double limit = 0;  // seconds; 0: none
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--timing")
      timing = true;
    else if (a == "--time-limit") {
      // the same range and sentence as `strata --time-limit`
      char* end = nullptr;
      const char* v = i + 1 < argc ? argv[++i] : "";
      limit = std::strtod(v, &end);
      if (*v == '\0' || *end != '\0' || !(limit >= 0 && limit <= 1e9))
        return fail(rank, "--time-limit",
                    "must be a number of seconds in [0, 1e9] (got \"" + std::string(v) + "\")");
    } else if (a == "--help" || a == "-h") {
      if (rank == 0)
        std::cout << "usage: mpirun -n R strata-mpi FILE|- [--timing] [--time-limit S]\n";
      return 0;
    } else if (path.empty())
      path = a;
    else
      return fail(rank, "command line", "unexpected argument '" + a + "'");
  }
  if (path.empty()) return fail(rank, "scenario", "missing (required)");
  const auto start = std::chrono::steady_clock::now();

  // rank 0 reads the scenario and sends its text to every rank
  std::string text, error;
  if (rank == 0) {
    try {
      text = strata::io::detail::read_file(path, "scenario", "scenario file");
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  long long size = error.empty() ? static_cast<long long>(text.size()) : -1;
  MPI_Bcast(&size, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (size < 0) return fail(rank, "scenario", error);
  text.resize(static_cast<std::size_t>(size));
  MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, MPI_COMM_WORLD);

  // every rank parses it and sweeps its part
  strata::io::transformer_request q;
  search::transformer_sweep_result mine;
  try {
    const auto j = strata::io::detail::parse_json(text);
    if (!strata::io::is_transformer_scenario(j) || !j.contains("search"))
      throw strata::plan_error("search: strata-mpi runs a transformer scenario with \"search\"");
    q = strata::io::parse_transformer_request(j, strata_cli::h100_sxm_profile);
    auto& s = q.scenario;
    // each rank stops its part at the time limit, counted from the start
    if (limit > 0)
      s.space.progress = [start, limit](double f) {
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit)
          throw strata::plan_error(strata::io::search_stopped("--time-limit", limit, f));
        return true;
      };
    mine = search::sweep(s.net, s.machine, s.setup, s.profile, s.space, {rank, ranks});
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (first_error(rank, ranks, error)) return fail(rank, "scenario", error);

  // rank 0 gathers the parts and merges them
  const std::vector<char> bytes = pack(mine);
  int n = static_cast<int>(bytes.size());
  std::vector<int> sizes(static_cast<std::size_t>(ranks)), offsets(sizes.size());
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<char> all;
  if (rank == 0) {
    int total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) offsets[r] = total, total += sizes[r];
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(bytes.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  if (rank != 0) return 0;
  try {
    std::vector<search::transformer_sweep_result> parts;
    for (std::size_t r = 0; r < sizes.size(); ++r) parts.push_back(unpack(all.data() + offsets[r]));
    const auto merged = search::merge(parts, q.scenario.space.keep);
    const nlohmann::json report = strata::io::search_report_json(q, merged);
    strata::io::check_finite(report, "");
    std::cout << report.dump(2) << '\n';
    std::cout.flush();
    if (!std::cout) return fail(rank, "output", "cannot write the report to standard output");
  } catch (const std::exception& e) {
    return fail(rank, "scenario", e.what());
  }
  if (timing)
    std::fprintf(stderr, "strata-mpi: %d rank%s, %.3f s\n", ranks, ranks == 1 ? "" : "s",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int rc = run(rank, ranks, argc, argv);
  MPI_Finalize();
  return rc;
}
