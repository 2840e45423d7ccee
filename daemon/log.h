// rpmad's log: one line per event, naming the region, session or peer it
// concerns. Under systemd (JOURNAL_STREAM set, or logging.target: journal)
// lines go to stderr without timestamps and with a "<N>" syslog priority
// prefix, which the journal turns into the line's priority; otherwise they
// go to stderr with a timestamp. librpma's own messages are routed here too.
// Session tokens are never logged.
#ifndef DAEMON_LOG_H
#define DAEMON_LOG_H

#include <spdlog/spdlog.h>

#include <string>

#include "daemon/status.h"

namespace rpmad {

spdlog::logger &Log();

// target: auto | stderr | journal; level: trace ... off (rpmad.yaml's names).
Status SetUpLogging(const std::string &target, const std::string &level);
// For SIGHUP: a new level takes effect for every later line.
Status SetLogLevel(const std::string &level);

}  // namespace rpmad

#endif  // DAEMON_LOG_H
