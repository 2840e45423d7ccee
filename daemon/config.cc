#include "daemon/config.h"

#include "daemon/config_text.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace rpmad {
namespace {

using config_text::AllDigits;
using config_text::Invalid;
using config_text::Quoted;

// Well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF). YAML has no way to write other bytes: yaml-cpp reads them but
// writes U+FFFD instead, so RedactedYaml would show another value.
bool IsUtf8(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
        const unsigned char lead = byte(0);
        size_t length;
        uint32_t code;
        if (lead < 0x80) {
            ++i;
            continue;
        } else if ((lead & 0xe0) == 0xc0) {
            length = 2;
            code = lead & 0x1f;
        } else if ((lead & 0xf0) == 0xe0) {
            length = 3;
            code = lead & 0x0f;
        } else if ((lead & 0xf8) == 0xf0) {
            length = 4;
            code = lead & 0x07;
        } else {
            return false;
        }
        if (i + length > text.size())
            return false;
        for (size_t k = 1; k < length; ++k) {
            if ((byte(k) & 0xc0) != 0x80)
                return false;
            code = code << 6 | (byte(k) & 0x3f);
        }
        static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < kSmallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
            return false;
        i += length;
    }
    return true;
}

// ---- small helpers ----------------------------------------------------------

std::string JoinNames(std::span<const std::string_view> names) {
    std::string joined;
    for (std::string_view name : names) {
        if (!joined.empty())
            joined += ", ";
        joined += name;
    }
    return joined;
}

// Edit distance, for "did you mean" hints on misspelt keys and values.
size_t Distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// "; did you mean "x"?" when one candidate is close to `word`, else "".
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
    std::string_view best;
    size_t best_distance = 3;
    for (std::string_view candidate : candidates) {
        size_t d = Distance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best.empty() ? "" : "; did you mean " + Quoted(best) + "?";
}

StatusCode CodeForErrno(int error) {
    switch (error) {
        case ENOENT:
        case ENOTDIR:
            return StatusCode::kNotFound;
        case EACCES:
        case EPERM:
            return StatusCode::kPermissionDenied;
        default:
            return StatusCode::kFailedPrecondition;
    }
}

// The whole file, or a status whose message says which file (and for which
// key, when `key` is not empty) and why, with the system's words for it.
StatusOr<std::string> ReadWholeFile(const std::string &path, std::string_view key) {
    auto failure = [&](int error) {
        std::string who = key.empty() ? "cannot read " : std::string(key) + ": cannot read ";
        return Status(CodeForErrno(error),
                      who + Quoted(path) + ": " + std::strerror(error) +
                          "; check the path and that rpmad's user may read it");
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return failure(errno);
    std::string text;
    char buffer[4096];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int error = errno;
            ::close(fd);
            return failure(error);
        }
        if (n == 0)
            break;
        text.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return text;
}

// The first line of the token file with surrounding whitespace removed.
StatusOr<std::string> ReadAdminTokenFile(const std::string &path) {
    constexpr std::string_view kKey = "control.admin_token_file";
    StatusOr<std::string> text = ReadWholeFile(path, kKey);
    if (!text.ok())
        return text.status();
    std::string_view line = *text;
    line = line.substr(0, line.find('\n'));
    constexpr std::string_view kSpace = " \t\r\f\v";
    size_t begin = line.find_first_not_of(kSpace);
    if (begin == std::string_view::npos) {
        return Invalid(std::string(kKey) + ": " + Quoted(path) +
                       " holds no token on its first line; write the token there (an empty "
                       "token would switch authentication off)");
    }
    line = line.substr(begin, line.find_last_not_of(kSpace) - begin + 1);
    return std::string(line);
}

// ---- the keys of the file -----------------------------------------------------

// One entry per key of the file, in the file's order; the parser, the
// validation's line numbers and RedactedYaml all walk this one table.
using FieldRef = std::variant<std::string *, bool *, uint32_t *, uint64_t *, Persistence *,
                              std::vector<DevdaxRegionConfig> *>;
struct Key {
    std::string_view path;  // dotted: section.subsection.name
    FieldRef (*field)(Config &);
    std::span<const std::string_view> choices = {};  // empty: any value of its type
};

// uint32_t fields are counts, uint64_t fields are sizes in bytes.
const Key kKeys[] = {
    {"control.listen", [](Config &c) -> FieldRef { return &c.control_listen; }},
    {"control.admin_token", [](Config &c) -> FieldRef { return &c.admin_token; }},
    {"control.admin_token_file", [](Config &c) -> FieldRef { return &c.admin_token_file; }},
    {"control.tls.cert_file", [](Config &c) -> FieldRef { return &c.tls.cert_file; }},
    {"control.tls.key_file", [](Config &c) -> FieldRef { return &c.tls.key_file; }},
    {"control.tls.client_ca_file", [](Config &c) -> FieldRef { return &c.tls.client_ca_file; }},
    {"control.tls.require_client_cert",
     [](Config &c) -> FieldRef { return &c.tls.require_client_cert; }},
    {"data.listen", [](Config &c) -> FieldRef { return &c.data_listen; }},
    {"data.provider", [](Config &c) -> FieldRef { return &c.provider; }, kProviders},
    {"data.persistence", [](Config &c) -> FieldRef { return &c.persistence; }, kPersistenceNames},
    {"storage.pool_dir", [](Config &c) -> FieldRef { return &c.pool_dir; }},
    {"storage.capacity", [](Config &c) -> FieldRef { return &c.capacity; }},
    {"storage.devdax_regions", [](Config &c) -> FieldRef { return &c.devdax_regions; }},
    {"limits.max_regions", [](Config &c) -> FieldRef { return &c.max_regions; }},
    {"limits.max_region_size", [](Config &c) -> FieldRef { return &c.max_region_size; }},
    {"limits.max_sessions", [](Config &c) -> FieldRef { return &c.max_sessions; }},
    {"sessions.token_ttl_seconds", [](Config &c) -> FieldRef { return &c.token_ttl_seconds; }},
    {"sessions.client_tokens_file", [](Config &c) -> FieldRef { return &c.client_tokens_file; }},
    {"sessions.max_per_identity",
     [](Config &c) -> FieldRef { return &c.max_sessions_per_identity; }},
    {"sessions.max_pending_per_peer",
     [](Config &c) -> FieldRef { return &c.max_pending_per_peer; }},
    {"logging.level", [](Config &c) -> FieldRef { return &c.log_level; }, kLogLevels},
    {"logging.target", [](Config &c) -> FieldRef { return &c.log_target; }, kLogTargets},
    {"metrics.listen", [](Config &c) -> FieldRef { return &c.metrics_listen; }},
};

const Key *FindKey(std::string_view path) {
    for (const Key &key : kKeys) {
        if (key.path == path)
            return &key;
    }
    return nullptr;
}

// The names directly under `section` ("" = top level), in the file's order.
std::vector<std::string_view> ChildrenOf(std::string_view section) {
    std::vector<std::string_view> children;
    for (const Key &key : kKeys) {
        std::string_view rest = key.path;
        if (!section.empty()) {
            if (!rest.starts_with(section) || rest.size() <= section.size() ||
                rest[section.size()] != '.') {
                continue;
            }
            rest.remove_prefix(section.size() + 1);
        }
        std::string_view name = rest.substr(0, rest.find('.'));
        if (std::find(children.begin(), children.end(), name) == children.end()) {
            children.push_back(name);
        }
    }
    return children;
}

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

// ---- validation ---------------------------------------------------------------

Status CheckReadable(const std::string &path, std::string_view key) {
    StatusOr<std::string> text = ReadWholeFile(path, key);
    return text.ok() ? Status() : text.status();
}

Status CheckAtLeast(uint64_t value, uint64_t minimum, std::string_view key, std::string what) {
    if (value >= minimum)
        return Status();
    return Invalid(std::string(key) + ": " + std::to_string(value) + " is too small; " + what);
}

Status CheckAdminToken(const Config &config) {
    if (config.admin_token_file.empty())
        return Status();
    StatusOr<std::string> token = ReadAdminTokenFile(config.admin_token_file);
    if (!token.ok())
        return token.status();
    if (config.admin_token.empty()) {
        return Status(StatusCode::kFailedPrecondition,
                      "control.admin_token_file: the token has not been read from " +
                          Quoted(config.admin_token_file) + " (ResolveAdminToken does that)");
    }
    if (config.admin_token != *token) {
        return Invalid(
            "control.admin_token: set together with control.admin_token_file; give the token "
            "in one of them and leave the other empty");
    }
    return Status();
}

Status CheckTls(const TlsConfig &tls, const Locator &where) {
    if (tls.cert_file.empty() != tls.key_file.empty()) {
        std::string missing = tls.cert_file.empty() ? "cert_file" : "key_file";
        std::string present = tls.cert_file.empty() ? "key_file" : "cert_file";
        return where.At("control.tls." + present,
                        Invalid("control.tls." + missing + ": empty while control.tls." + present +
                                " is set; give both (TLS) or neither (plaintext gRPC)"));
    }
    const std::pair<const std::string *, std::string> files[] = {
        {&tls.cert_file, "control.tls.cert_file"},
        {&tls.key_file, "control.tls.key_file"},
        {&tls.client_ca_file, "control.tls.client_ca_file"},
    };
    for (const auto &[file, key] : files) {
        if (!file->empty()) {
            if (Status s = CheckReadable(*file, key); !s.ok())
                return where.At(key, s);
        }
    }
    if (!tls.client_ca_file.empty() && !tls.enabled()) {
        return where.At("control.tls.client_ca_file",
                        Invalid("control.tls.client_ca_file: client certificates need TLS; set "
                                "control.tls.cert_file and control.tls.key_file too"));
    }
    if (tls.require_client_cert && tls.client_ca_file.empty()) {
        return where.At(
            "control.tls.require_client_cert",
            Invalid("control.tls.require_client_cert: true needs control.tls.client_ca_file to "
                    "verify client certificates against; set it, or set this to false"));
    }
    return Status();
}

Status CheckListenAddresses(const Config &config, const Locator &where) {
    StatusOr<HostPort> control = SplitHostPort(config.control_listen, "control.listen");
    if (!control.ok())
        return where.At("control.listen", control.status());
    StatusOr<HostPort> data = SplitHostPort(config.data_listen, "data.listen");
    if (!data.ok())
        return where.At("data.listen", data.status());
    if (control->host == data->host && control->port == data->port && control->port != "0") {
        return where.At("data.listen",
                        Invalid("data.listen: " + Quoted(config.data_listen) +
                                " is also control.listen; give each plane its own port"));
    }
    if (config.metrics_listen.empty())
        return Status();
    StatusOr<HostPort> metrics = SplitHostPort(config.metrics_listen, "metrics.listen");
    if (!metrics.ok())
        return where.At("metrics.listen", metrics.status());
    for (const auto &[other, key] : {std::pair(*control, "control.listen"), {*data, "data.listen"}})
        if (metrics->host == other.host && metrics->port == other.port && metrics->port != "0")
            return where.At("metrics.listen",
                            Invalid("metrics.listen: " + Quoted(config.metrics_listen) +
                                    " is also " + key + "; give the metrics a port of their own"));
    return Status();
}

Status CheckDevdaxRegions(const std::vector<DevdaxRegionConfig> &regions) {
    constexpr std::string_view kKey = "storage.devdax_regions";
    for (size_t i = 0; i < regions.size(); ++i) {
        const DevdaxRegionConfig &region = regions[i];
        const std::string entry = std::string(kKey) + "[" + std::to_string(i) + "]";
        if (region.name.empty())
            return Invalid(entry + ".name: missing; every devdax region needs a name");
        if (region.path.empty() || region.path[0] != '/') {
            return Invalid(entry + ".path: " + Quoted(region.path) +
                           " is not an absolute path; give the device, e.g. /dev/dax0.0");
        }
        for (size_t j = 0; j < i; ++j) {
            if (regions[j].name == region.name) {
                return Invalid(entry + ".name: " + Quoted(region.name) + " is also the name of " +
                               std::string(kKey) + "[" + std::to_string(j) +
                               "]; give each region its own");
            }
        }
    }
    return Status();
}

// Every rule of ValidateConfig; `where` adds the file and line when known.
Status CheckConfig(const Config &config, const Locator &where) {
    if (Status s = CheckListenAddresses(config, where); !s.ok())
        return s;
    if (Status s = CheckAdminToken(config); !s.ok()) {
        return where.At(
            config.admin_token.empty() ? "control.admin_token_file" : "control.admin_token", s);
    }
    if (Status s = CheckTls(config.tls, where); !s.ok())
        return s;
    if (Status s = CheckChoice(config.provider, kProviders, "data.provider"); !s.ok()) {
        return where.At("data.provider", s);
    }
    if (config.pool_dir.empty() || config.pool_dir[0] != '/') {
        return where.At("storage.pool_dir",
                        Invalid("storage.pool_dir: " + Quoted(config.pool_dir) +
                                " is not an absolute path; give one, or leave it empty for the "
                                "default (" +
                                DefaultPoolDir() + ")"));
    }
    if (Status s = CheckDevdaxRegions(config.devdax_regions); !s.ok()) {
        return where.At("storage.devdax_regions", s);
    }
    const struct {
        uint64_t value, minimum;
        std::string key, what;
    } minimums[] = {
        {config.max_regions, 1, "limits.max_regions", "at least one region must be allowed"},
        {config.max_region_size, kMinRegionSize, "limits.max_region_size",
         "a region is at least one page, 4KiB"},
        {config.max_sessions, 1, "limits.max_sessions", "at least one session must be allowed"},
        {config.token_ttl_seconds, 1, "sessions.token_ttl_seconds",
         "a client needs at least a second to connect with its token"},
    };
    for (const auto &m : minimums) {
        if (Status s = CheckAtLeast(m.value, m.minimum, m.key, m.what); !s.ok()) {
            return where.At(m.key, s);
        }
    }
    if (Status s = CheckChoice(config.log_level, kLogLevels, "logging.level"); !s.ok()) {
        return where.At("logging.level", s);
    }
    if (Status s = CheckChoice(config.log_target, kLogTargets, "logging.target"); !s.ok()) {
        return where.At("logging.target", s);
    }
    return Status();
}

// ---- reading YAML -------------------------------------------------------------

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
// table above as the schema.
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

// ---- writing YAML -------------------------------------------------------------

std::vector<std::string_view> SplitPath(std::string_view path) {
    std::vector<std::string_view> parts;
    for (size_t dot; (dot = path.find('.')) != std::string_view::npos;) {
        parts.push_back(path.substr(0, dot));
        path.remove_prefix(dot + 1);
    }
    parts.push_back(path);
    return parts;
}

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

// ---- public functions ---------------------------------------------------------

Status CheckChoice(std::string_view value, std::span<const std::string_view> choices,
                   std::string_view key) {
    if (std::find(choices.begin(), choices.end(), value) != choices.end())
        return Status();
    return Invalid(std::string(key) + ": " + Quoted(value) + " is not a valid value" +
                   DidYouMean(value, choices) + "; use one of " + JoinNames(choices));
}

std::string_view PersistenceName(Persistence persistence) {
    return kPersistenceNames[static_cast<size_t>(persistence)];
}

Config DefaultConfig() {
    Config config;
    config.pool_dir = DefaultPoolDir();
    return config;
}

Status ResolveAdminToken(Config *config) {
    if (config->admin_token_file.empty())
        return Status();
    if (!config->admin_token.empty()) {
        return Invalid(
            "control.admin_token_file: set together with control.admin_token; give the token "
            "in one of them and leave the other empty");
    }
    StatusOr<std::string> token = ReadAdminTokenFile(config->admin_token_file);
    if (!token.ok())
        return token.status();
    config->admin_token = *token;
    return Status();
}

Status ResolveClientTokens(Config *config) {
    constexpr std::string_view kKey = "sessions.client_tokens_file";
    config->client_tokens.clear();
    if (config->client_tokens_file.empty())
        return Status();
    const std::string &path = config->client_tokens_file;
    StatusOr<std::string> text = ReadWholeFile(path, kKey);
    if (!text.ok())
        return text.status();
    std::istringstream lines(*text);
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
        ++number;
        std::istringstream words(line);
        std::string name, token, extra;
        words >> name >> token >> extra;
        if (name.empty() || name[0] == '#')
            continue;
        const std::string at =
            std::string(kKey) + ": " + Quoted(path) + " line " + std::to_string(number) + ": ";
        if (token.empty() || !extra.empty())
            return Invalid(at + "expected NAME TOKEN (two words); write one client per line");
        for (const ClientToken &earlier : config->client_tokens) {
            if (earlier.name == name)
                return Invalid(at + "the name " + Quoted(name) +
                               " is given twice; give each client its own");
            if (earlier.token == token)
                return Invalid(at + "the token of " + Quoted(name) + " is also " +
                               Quoted(earlier.name) + "'s; give each client its own");
        }
        config->client_tokens.push_back({name, token});
    }
    if (config->client_tokens.empty())
        return Invalid(std::string(kKey) + ": " + Quoted(path) +
                       " holds no token; write one NAME TOKEN line per client (an empty file "
                       "would let no client open sessions)");
    return Status();
}

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

Status ValidateConfig(const Config &config) {
    return CheckConfig(config, Locator());
}

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
    for (const Key &key : kKeys) {
        std::vector<std::string_view> parts = SplitPath(key.path);
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
