// RedactedYaml: a Config back to YAML in the file's layout.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "daemon/config.h"
#include "daemon/config_schema.h"
#include "daemon/config_text.h"

namespace rpmad {
namespace {

using config_schema::FieldRef;
using config_schema::Key;
using config_text::AllDigits;

void EmitSize(YAML::Emitter &out, uint64_t bytes) {
    std::string formatted = FormatSize(bytes);
    if (AllDigits(formatted)) {
        out << formatted;
    } else {
        out << YAML::DoubleQuoted << formatted;
    }
}

void EmitValue(YAML::Emitter &out, const Key &key, Config &config) {
    FieldRef field = key.field(config);
    if (auto *text = std::get_if<std::string *>(&field)) {
        // Choices are words, written bare as in the documented file.
        if (key.choices.empty())
            out << YAML::DoubleQuoted;
        out << **text;
    } else if (auto *flag = std::get_if<bool *>(&field)) {
        out << **flag;
    } else if (auto *count = std::get_if<uint32_t *>(&field)) {
        out << **count;
    } else if (auto *size = std::get_if<uint64_t *>(&field)) {
        EmitSize(out, **size);
    } else if (auto *persistence = std::get_if<Persistence *>(&field)) {
        out << std::string(PersistenceName(**persistence));
    } else if (auto *regions = std::get_if<std::vector<DevdaxRegionConfig> *>(&field)) {
        if ((*regions)->empty())
            out << YAML::Flow;
        out << YAML::BeginSeq;
        for (const DevdaxRegionConfig &region : **regions) {
            out << YAML::BeginMap;
            out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << region.name;
            out << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted << region.path;
            for (auto [name, bytes] : {std::pair<const char *, uint64_t>{"offset", region.offset},
                                       {"size", region.size}}) {
                out << YAML::Key << name << YAML::Value;
                EmitSize(out, bytes);
            }
            out << YAML::EndMap;
        }
        out << YAML::EndSeq;
    }
}

}  // namespace

std::string RedactedYaml(const Config &config) {
    Config shown = config;
    if (!shown.admin_token_file.empty()) {
        shown.admin_token.clear();  // the file's path says where it is; the token stays there
    } else if (!shown.admin_token.empty()) {
        shown.admin_token = "<redacted>";
    }
    YAML::Emitter out;
    out << YAML::BeginMap;
    std::vector<std::string_view> open;  // the sections the emitter is inside of
    for (const Key &key : config_schema::Keys()) {
        std::vector<std::string_view> parts = config_schema::SplitPath(key.path);
        std::string_view name = parts.back();
        parts.pop_back();
        size_t shared = 0;
        while (shared < open.size() && shared < parts.size() && open[shared] == parts[shared]) {
            ++shared;
        }
        for (; open.size() > shared; open.pop_back())
            out << YAML::EndMap;
        for (; open.size() < parts.size(); open.push_back(parts[open.size()])) {
            out << YAML::Key << std::string(parts[open.size()]) << YAML::Value << YAML::BeginMap;
        }
        out << YAML::Key << std::string(name) << YAML::Value;
        EmitValue(out, key, shown);
    }
    for (; !open.empty(); open.pop_back())
        out << YAML::EndMap;
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace rpmad
