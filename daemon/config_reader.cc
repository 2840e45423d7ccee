// ParseConfig and LoadConfigFile: YAML text to a Config, key by key.
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "daemon/config.h"
#include "daemon/config_files.h"
#include "daemon/config_locator.h"
#include "daemon/config_schema.h"
#include "daemon/config_text.h"
#include "daemon/config_validation.h"
#include "daemon/did_you_mean.h"
#include "daemon/utf8.h"

namespace rpmad {
namespace {

using config_schema::ChildrenOf;
using config_schema::FieldRef;
using config_schema::FindKey;
using config_schema::Key;
using config_text::AllDigits;
using config_text::CheckConfig;
using config_text::Invalid;
using config_text::Locator;
using config_text::Quoted;
using config_text::ReadWholeFile;

std::string Describe(const YAML::Node &node) {
    switch (node.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return Quoted(node.Scalar());
        default:
            return "nothing";
    }
}

int LineOf(const YAML::Node &node) {
    return node.Mark().line + 1;
}

// Reads the mappings of a config file into a Config, key by key, with the
// table of config_schema.cc as the schema.
class ConfigReader {
  public:
    explicit ConfigReader(std::string origin) : origin_(std::move(origin)), where_(origin_) {}

    const Locator &where() const { return where_; }

    Status ReadMapping(const YAML::Node &node, const std::string &section, Config *config) {
        if (node.IsNull())
            return Status();  // an empty section keeps its defaults
        std::vector<std::string_view> children = ChildrenOf(section);
        if (!node.IsMap()) {
            std::string what = section.empty() ? "the top level" : section;
            return Error(LineOf(node), what + ": expected a mapping of " + JoinNames(children) +
                                           ", got " + Describe(node) +
                                           "; indent its keys under it, one per line");
        }
        // Each entry by value: `it->first` is a member of a temporary proxy,
        // and a reference to it dangles.
        for (const auto &entry : node) {
            const YAML::Node name = entry.first;
            int line = LineOf(name);
            if (!name.IsScalar()) {
                return Error(line, (section.empty() ? "the top level" : section) +
                                       ": keys are plain names, not " + Describe(name));
            }
            std::string path = section.empty() ? name.Scalar() : section + "." + name.Scalar();
            if (std::optional<int> first = where_.LineOf(path)) {
                return Error(line, path + ": given twice (first on line " + std::to_string(*first) +
                                       "); keep one");
            }
            where_.Record(path, line);
            if (const Key *key = FindKey(path)) {
                if (Status s = ReadValue(entry.second, path, line, *key, config); !s.ok()) {
                    return s;
                }
            } else if (!ChildrenOf(path).empty()) {
                if (Status s = ReadMapping(entry.second, path, config); !s.ok())
                    return s;
            } else {
                std::string within = section.empty() ? "at the top level" : "in " + section;
                return Error(line, path + ": unknown key" + DidYouMean(name.Scalar(), children) +
                                       "; the keys " + within + " are " + JoinNames(children) +
                                       " (see rpmad.yaml(5))");
            }
        }
        return Status();
    }

  private:
    Status Error(int line, std::string message) const {
        return Invalid(origin_ + ":" + std::to_string(line) + ": " + std::move(message));
    }

    Status Expected(int line, const std::string &path, std::string_view what,
                    const YAML::Node &value) const {
        return Error(line, path + ": expected " + std::string(what) + ", got " + Describe(value));
    }

    Status ReadValue(const YAML::Node &value, const std::string &path, int line, const Key &key,
                     Config *config) {
        // A key with a fixed set of values is checked here, where the line is known.
        if (!key.choices.empty()) {
            if (!value.IsScalar()) {
                return Expected(line, path, "one of " + JoinNames(key.choices), value);
            }
            if (Status s = CheckChoice(value.Scalar(), key.choices, path); !s.ok()) {
                return Error(line, s.message());
            }
        }
        FieldRef field = key.field(*config);
        if (auto *text = std::get_if<std::string *>(&field)) {
            if (value.IsNull()) {
                (*text)->clear();
            } else if (value.IsScalar()) {
                if (!IsUtf8(value.Scalar()))
                    return Error(line, path + ": not valid UTF-8; rpmad.yaml must be UTF-8 text");
                **text = value.Scalar();
            } else {
                return Expected(line, path, "a string (quote it: \"...\")", value);
            }
        } else if (auto *flag = std::get_if<bool *>(&field)) {
            if (!value.IsScalar() || !YAML::convert<bool>::decode(value, **flag)) {
                return Expected(line, path, "true or false", value);
            }
        } else if (auto *count = std::get_if<uint32_t *>(&field)) {
            const std::string text = value.IsScalar() ? value.Scalar() : "";
            auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), **count);
            if (!AllDigits(text) || error != std::errc() || end != text.data() + text.size()) {
                return Expected(line, path, "a whole number from 0 to 4294967295", value);
            }
        } else if (auto *size = std::get_if<uint64_t *>(&field)) {
            if (!value.IsScalar()) {
                return Expected(line, path, "a size such as 4096 or \"64MiB\"", value);
            }
            StatusOr<uint64_t> bytes = ParseSize(value.Scalar());
            if (!bytes.ok())
                return Error(line, path + ": " + bytes.status().message());
            **size = *bytes;
        } else if (auto *persistence = std::get_if<Persistence *>(&field)) {
            // Checked against kPersistenceNames above, which lists the enum in order.
            auto found = std::find(key.choices.begin(), key.choices.end(), value.Scalar());
            **persistence = static_cast<Persistence>(found - key.choices.begin());
        } else if (auto *regions = std::get_if<std::vector<DevdaxRegionConfig> *>(&field)) {
            return ReadDevdaxRegions(value, path, line, *regions);
        }
        return Status();
    }

    // A list of {name, path, offset, size}; what the values mean is
    // CheckDevdaxRegions' and the region store's to judge.
    Status ReadDevdaxRegions(const YAML::Node &value, const std::string &path, int line,
                             std::vector<DevdaxRegionConfig> *regions) {
        static constexpr std::string_view kFields[] = {"name", "path", "offset", "size"};
        regions->clear();
        if (value.IsNull())
            return Status();
        if (!value.IsSequence()) {
            return Expected(line, path, "a list of regions, each {name, path, offset, size}",
                            value);
        }
        for (const YAML::Node &item : value) {
            const std::string entry = path + "[" + std::to_string(regions->size()) + "]";
            if (!item.IsMap()) {
                return Expected(LineOf(item), entry, "a mapping of name, path, offset, size", item);
            }
            DevdaxRegionConfig region;
            for (const auto &field : item) {
                const YAML::Node name = field.first;
                const YAML::Node text = field.second;
                const std::string key = entry + "." + (name.IsScalar() ? name.Scalar() : "?");
                const int at = LineOf(name);
                if (!name.IsScalar() || std::find(std::begin(kFields), std::end(kFields),
                                                  name.Scalar()) == std::end(kFields)) {
                    return Error(at, key + ": unknown key" +
                                         DidYouMean(name.IsScalar() ? name.Scalar() : "", kFields) +
                                         "; a devdax region has name, path, offset and size");
                }
                if (!text.IsScalar())
                    return Expected(at, key, "a single value", text);
                if (!IsUtf8(text.Scalar()))
                    return Error(at, key + ": not valid UTF-8; rpmad.yaml must be UTF-8 text");
                if (name.Scalar() == "name") {
                    region.name = text.Scalar();
                } else if (name.Scalar() == "path") {
                    region.path = text.Scalar();
                } else {
                    StatusOr<uint64_t> bytes = ParseSize(text.Scalar());
                    if (!bytes.ok())
                        return Error(at, key + ": " + bytes.status().message());
                    (name.Scalar() == "offset" ? region.offset : region.size) = *bytes;
                }
            }
            regions->push_back(std::move(region));
        }
        return Status();
    }

    std::string origin_;
    Locator where_;
};

}  // namespace

StatusOr<Config> ParseConfig(std::string_view yaml, const std::string &origin) {
    Config config;
    ConfigReader reader(origin);
    try {
        YAML::Node root = YAML::Load(std::string(yaml));
        if (Status s = reader.ReadMapping(root, "", &config); !s.ok())
            return s;
    } catch (const YAML::Exception &e) {
        return Invalid(origin + ":" + std::to_string(e.mark.line + 1) +
                       ": not valid YAML: " + e.msg +
                       "; check the indentation and quoting on this line or the one before");
    }
    const Locator &where = reader.where();
    StatusOr<std::string> pool_dir = ResolvePoolDir(config.pool_dir);
    if (!pool_dir.ok())
        return where.At("storage.pool_dir", pool_dir.status());
    config.pool_dir = *pool_dir;
    if (Status s = ResolveAdminToken(&config); !s.ok()) {
        return where.At("control.admin_token_file", s);
    }
    if (Status s = ResolveClientTokens(&config); !s.ok())
        return where.At("sessions.client_tokens_file", s);
    if (Status s = CheckConfig(config, where); !s.ok())
        return s;
    return config;
}

StatusOr<Config> LoadConfigFile(const std::string &path) {
    StatusOr<std::string> text = ReadWholeFile(path, "");
    if (!text.ok()) {
        return Status(text.status().code(), "config file: " + text.status().message());
    }
    return ParseConfig(*text, path);
}

}  // namespace rpmad
