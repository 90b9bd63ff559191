#pragma once
// The subcommands of strata, each in its own translation unit: `add_*` declares its options on
// the app, `run_*` runs it once the command line named it (tools/cli/simulate.cpp, tools.cpp).
#include <CLI/CLI.hpp>

namespace strata_cli {

CLI::App* add_simulate_command(CLI::App& app);
int run_simulate_command(const CLI::App& sim_cmd);

CLI::App* add_fit_command(CLI::App& app);
int run_fit_command();

CLI::App* add_replay_command(CLI::App& app);
int run_replay_command();

CLI::App* add_replay_ps_command(CLI::App& app);
int run_replay_ps_command(const CLI::App& rps_cmd);

CLI::App* add_calibrate_command(CLI::App& app);
int run_calibrate_command();

}  // namespace strata_cli
