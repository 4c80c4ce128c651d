#pragma once
// portico's command line (getopt_long, as nginx users expect of -c, -t, -T, -v, -V).
#include <optional>
#include <string>

namespace portico::proxy {

struct CommandLine {
  std::string config_path;
  bool test_only = false;   // -t: check the configuration, exit
  bool dump_config = false; // -T: check it and print it with every default filled in
};

// Parses argv. nullopt: nothing to run, with *exit_code set (0 after --help or a version, 2
// after a usage error, which has been printed).
std::optional<CommandLine> parse_command_line(int argc, char** argv, int* exit_code);

} // namespace portico::proxy
