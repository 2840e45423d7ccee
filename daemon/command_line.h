// rpmad's command line: which config to use, the flags that override it, and
// the one-shot actions (--help, --version, --check-config) that print and
// exit. main.cc calls ParseInvocation first and starts nothing unless it
// answers kRun.
#ifndef DAEMON_COMMAND_LINE_H
#define DAEMON_COMMAND_LINE_H

#include <ostream>
#include <string>

#include "daemon/config.h"

namespace rpmad {

enum class Action { kRun, kExit };

struct Invocation {
    Action action = Action::kRun;
    int exit_code = 0;
    Config config;              // validated when action == kRun
    std::string config_origin;  // "embedded default" or the file path
};

// The origin of a Config no file was read for.
inline constexpr char kEmbeddedDefault[] = "embedded default";

// Parses rpmad's arguments. --help/--version print to `out` and return
// kExit/0; usage errors (unknown flags, bad flag values) print to `err` and
// return kExit/2; --check-config FILE loads and validates FILE, prints
// "FILE: OK" to `out` (exit 0) or the error naming key and fix to `err`
// (exit 1). Otherwise loads --config FILE when given (else DefaultConfig()),
// applies the overrides --pool-dir, --listen (control plane), --data-listen,
// --provider, --log-level, validates, and returns kRun (or kExit/1 with the
// error on `err`).
Invocation ParseInvocation(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

}  // namespace rpmad

#endif  // DAEMON_COMMAND_LINE_H
