#pragma once
// portico's command line (getopt_long, as nginx users expect of -c, -t, -T, -v, -V).
#include <optional>
#include <string>

namespace portico::proxy {

struct CommandLine {
  std::string config_path;
  bool test_only = false;   // -t: check the configuration, exit
  bool dump_config = false; // -T: check it and print it with every default filled in
  std::string signal;       // -s stop|quit|reopen|reload: signal the running portico
  std::string pid_file;     // --pid-file: whose pid -s signals (else [server] pid_file)
};

// -s NAME: the signal it stands for (nginx's names), or 0 for none of them.
int signal_for(const std::string& name);

// Parses argv. nullopt: nothing to run, with *exit_code set (0 after --help or a version, 2
// after a usage error, which has been printed).
std::optional<CommandLine> parse_command_line(int argc, char** argv, int* exit_code);

} // namespace portico::proxy
