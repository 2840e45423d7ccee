// Where in a config file each key was written. Private to the config target.
#ifndef DAEMON_CONFIG_LOCATOR_H
#define DAEMON_CONFIG_LOCATOR_H

#include <map>
#include <optional>
#include <string>

#include "daemon/status.h"

namespace rpmad::config_text {

// Where in the file a key was written, so that any error about it, found
// while reading or while validating, can point at the line.
class Locator {
  public:
    Locator() = default;
    explicit Locator(std::string origin) : origin_(std::move(origin)) {}

    void Record(const std::string &path, int line) { lines_.emplace(path, line); }
    std::optional<int> LineOf(const std::string &path) const {
        auto it = lines_.find(path);
        return it == lines_.end() ? std::nullopt : std::optional<int>(it->second);
    }

    // "file:line: " (or "file: " for a key the file leaves out, "" with no file).
    std::string Where(const std::string &path) const {
        if (origin_.empty())
            return "";
        std::optional<int> line = LineOf(path);
        return line ? origin_ + ":" + std::to_string(*line) + ": " : origin_ + ": ";
    }
    Status At(const std::string &path, const Status &status) const {
        return status.ok() ? status : Status(status.code(), Where(path) + status.message());
    }

  private:
    std::string origin_;
    std::map<std::string, int> lines_;
};

}  // namespace rpmad::config_text

#endif  // DAEMON_CONFIG_LOCATOR_H
