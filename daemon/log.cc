#include "daemon/log.h"

#include <librpma.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace rpmad {
namespace {

// "%*": the syslog priority prefix the journal reads from a service's stderr.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg &msg, const std::tm &,
                spdlog::memory_buf_t &dest) override {
        static constexpr const char *kPrefix[] = {"<7>", "<7>", "<6>", "<4>", "<3>", "<2>", ""};
        const std::string_view prefix = kPrefix[msg.level];
        dest.append(prefix.data(), prefix.data() + prefix.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<SyslogPriorityFlag>();
    }
};

std::shared_ptr<spdlog::logger> &Logger() {
    static auto logger = std::make_shared<spdlog::logger>(
        "rpmad", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    return logger;
}

// librpma's log function: its messages become rpmad's debug/info/... lines.
void ForwardRpmaLog(enum rpma_log_level level, const char *file_name, int line_no,
                    const char *function_name, const char *message_format, ...) {
    (void)file_name;
    (void)line_no;
    char text[512];
    va_list args;
    va_start(args, message_format);
    vsnprintf(text, sizeof(text), message_format, args);
    va_end(args);
    const auto spd_level = level <= RPMA_LOG_LEVEL_ERROR     ? spdlog::level::err
                           : level == RPMA_LOG_LEVEL_WARNING ? spdlog::level::warn
                           : level == RPMA_LOG_LEVEL_NOTICE  ? spdlog::level::info
                                                             : spdlog::level::debug;
    Log().log(spd_level, "rpma: {}: {}", function_name ? function_name : "?", text);
}

}  // namespace

spdlog::logger &Log() {
    return *Logger();
}

Status SetLogLevel(const std::string &level) {
    const auto parsed = spdlog::level::from_str(level);
    if (parsed == spdlog::level::off && level != "off")
        return Status(StatusCode::kInvalidArgument,
                      "unknown log level '" + level +
                          "': use trace, debug, info, warn, error, critical or off");
    Log().set_level(parsed);
    Log().flush_on(parsed);
    // librpma's threshold follows: debug lines from it only when asked for.
    rpma_log_set_threshold(RPMA_LOG_THRESHOLD, parsed <= spdlog::level::debug
                                                   ? RPMA_LOG_LEVEL_DEBUG
                                                   : RPMA_LOG_LEVEL_WARNING);
    return Status();
}

Status SetUpLogging(const std::string &target, const std::string &level) {
    const bool journal =
        target == "journal" || (target == "auto" && std::getenv("JOURNAL_STREAM") != nullptr);
    if (!journal && target != "stderr" && target != "auto")
        return Status(StatusCode::kInvalidArgument,
                      "unknown log target '" + target + "': use auto, stderr or journal");
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    if (journal)
        formatter->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%v");
    else
        formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
    Log().set_formatter(std::move(formatter));
    rpma_log_set_function(ForwardRpmaLog);
    return SetLogLevel(level);
}

}  // namespace rpmad
