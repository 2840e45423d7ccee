// The schema of rpmad.yaml: one entry per key, in the file's order. The
// reader, the validation's line numbers and RedactedYaml all walk this one
// table, so a key added to config_schema.cc is parsed, located and written
// back without another list to keep in step. Private to the config target.
#ifndef DAEMON_CONFIG_SCHEMA_H
#define DAEMON_CONFIG_SCHEMA_H

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/config.h"

namespace rpmad::config_schema {

using FieldRef = std::variant<std::string *, bool *, uint32_t *, uint64_t *, Persistence *,
                              std::vector<DevdaxRegionConfig> *>;
struct Key {
    std::string_view path;  // dotted: section.subsection.name
    FieldRef (*field)(Config &);
    std::span<const std::string_view> choices = {};  // empty: any value of its type
};

// Every key of the file, in the file's order.
std::span<const Key> Keys();
// The key at dotted `path`; null when there is none.
const Key *FindKey(std::string_view path);
// The names directly under `section` ("" = top level), in the file's order.
std::vector<std::string_view> ChildrenOf(std::string_view section);
// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string_view> SplitPath(std::string_view path);

}  // namespace rpmad::config_schema

#endif  // DAEMON_CONFIG_SCHEMA_H
