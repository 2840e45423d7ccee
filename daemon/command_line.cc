#include "daemon/command_line.h"

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "rpma_version.h"

namespace rpmad {
namespace {

constexpr size_t kOptionColumn = 28;  // "  --data-listen HOST:PORT" fits
constexpr size_t kTextWidth = 78;

// Word-wraps `text` to `width` columns; CLI11 indents each "\n" of an option's
// description to the description column, so wrapped help stays aligned.
std::string Wrap(std::string_view text, size_t width) {
    std::string wrapped;
    size_t column = 0;
    std::istringstream paragraphs{std::string(text)};
    bool first_paragraph = true;
    for (std::string paragraph; std::getline(paragraphs, paragraph);) {
        if (!first_paragraph)
            wrapped += '\n';
        first_paragraph = false;
        column = 0;
        std::istringstream words(paragraph);
        for (std::string word; words >> word;) {
            if (column > 0 && column + 1 + word.size() > width) {
                wrapped += '\n';
                column = 0;
            } else if (column > 0) {
                wrapped += ' ';
                ++column;
            }
            wrapped += word;
            column += word.size();
        }
    }
    return wrapped;
}

std::string Describe(std::string_view text) {
    return Wrap(text, kTextWidth - kOptionColumn);
}

std::string Choices(std::span<const std::string_view> choices) {
    std::string joined;
    for (std::string_view choice : choices) {
        if (!joined.empty())
            joined += " | ";
        joined += choice;
    }
    return joined;
}

// The values given on the command line; unset = not given.
struct Flags {
    std::optional<std::string> config_file, check_file;
    std::optional<std::string> listen, data_listen, provider, pool_dir, log_level;
    bool version = false;
};

// Registers every option on `app`, with help text that reads like a manual
// page; defaults are taken from `defaults` so the help cannot drift from them.
void DescribeCommandLine(CLI::App &app, Flags &flags, const Config &defaults) {
    app.description(
        Wrap("rpmad serves persistent-memory regions to rpma clients. Its control plane (gRPC) "
             "creates and deletes regions and opens sessions; on its data plane (rpma, over RDMA "
             "verbs or software RDMA over TCP) clients write, read and flush a region's bytes "
             "with one-sided operations.\n\nCommand-line flags override the configuration file, "
             "which overrides the built-in defaults.",
             kTextWidth) +
        "\n");
    app.set_help_flag("-h,--help", "Print this help and exit.");
    app.add_flag("--version", flags.version, "Print \"rpmad " RPMA_VERSION "\" and exit.");
    app.add_option("-c,--config", flags.config_file,
                   Describe("Read the configuration from FILE (YAML; every key is described in "
                            "rpmad.yaml(5) and in the documented default file). Without "
                            "--config the built-in defaults apply: the values of that file as "
                            "shipped."))
        ->type_name("FILE");
    app.add_option("--check-config", flags.check_file,
                   Describe("Check FILE (syntax, keys, values, readable TLS and token files) "
                            "and exit: prints \"FILE: OK\" and exits 0, or says what to fix and "
                            "exits 1. Starts nothing; takes no other option."))
        ->type_name("FILE");
    app.add_option("--listen", flags.listen,
                   Describe("Control-plane (gRPC) address; overrides control.listen. "
                            "Default: " +
                            defaults.control_listen + ". IPv6 in brackets: [::1]:7300."))
        ->type_name("HOST:PORT");
    app.add_option("--data-listen", flags.data_listen,
                   Describe("Data-plane (rpma) address; overrides data.listen. Default: " +
                            defaults.data_listen + "."))
        ->type_name("HOST:PORT");
    app.add_option("--provider", flags.provider,
                   Describe(Choices(kProviders) +
                            ": which rpma provider carries the data; overrides data.provider. "
                            "auto picks verbs when an RDMA device serves the data-plane "
                            "address, else tcp. Default: " +
                            defaults.provider + "."))
        ->type_name("NAME");
    app.add_option("--pool-dir", flags.pool_dir,
                   Describe("Directory of the region files and their catalog; overrides "
                            "storage.pool_dir. Default for this user: " +
                            defaults.pool_dir + "."))
        ->type_name("DIR");
    app.add_option("--log-level", flags.log_level,
                   Describe(Choices(kLogLevels) + ": least severe messages logged; overrides " +
                            "logging.level. Default: " + defaults.log_level + "."))
        ->type_name("LEVEL");
    app.footer(
        "Files:\n"
        "  /etc/rpmad/rpmad.yaml\n"
        "      The configuration file as installed: every key with its default and what\n"
        "      it means. The rpmad service reads it with --config.\n"
        "\n"
        "Exit status: 0 on success, 1 when the configuration is invalid, 2 when the\n"
        "command line is.\n"
        "\n"
        "See also: rpmad.yaml(5), rpmactl(1).");
    app.get_formatter()->column_width(kOptionColumn);
}

Invocation Exit(int code) {
    Invocation invocation;
    invocation.action = Action::kExit;
    invocation.exit_code = code;
    return invocation;
}

Invocation UsageError(std::ostream &err, const std::string &message) {
    err << "rpmad: " << message << "\nRun \"rpmad --help\" for the options.\n";
    return Exit(2);
}

Invocation ConfigError(std::ostream &err, const Status &status) {
    err << "rpmad: " << status.message() << "\n";
    return Exit(1);
}

// Checks each override on its own, so a bad flag value is a usage error
// that names the flag rather than the config key it overrides.
Status CheckOverrides(const Flags &flags) {
    if (flags.listen) {
        if (auto split = SplitHostPort(*flags.listen, "--listen"); !split.ok()) {
            return split.status();
        }
    }
    if (flags.data_listen) {
        if (auto split = SplitHostPort(*flags.data_listen, "--data-listen"); !split.ok()) {
            return split.status();
        }
    }
    if (flags.provider) {
        if (Status s = CheckChoice(*flags.provider, kProviders, "--provider"); !s.ok())
            return s;
    }
    if (flags.log_level) {
        if (Status s = CheckChoice(*flags.log_level, kLogLevels, "--log-level"); !s.ok()) {
            return s;
        }
    }
    return Status();
}

}  // namespace

Invocation ParseInvocation(int argc, const char *const *argv, std::ostream &out,
                           std::ostream &err) {
    Config defaults = DefaultConfig();
    Flags flags;
    CLI::App app;
    app.name("rpmad");
    DescribeCommandLine(app, flags, defaults);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        out << app.help();
        return Exit(0);
    } catch (const CLI::ParseError &e) {
        return UsageError(err, e.what());
    }
    if (flags.version) {
        out << "rpmad " RPMA_VERSION "\n";
        return Exit(0);
    }

    if (flags.check_file) {
        if (flags.config_file || flags.listen || flags.data_listen || flags.provider ||
            flags.pool_dir || flags.log_level) {
            return UsageError(err, "--check-config takes no other option");
        }
        StatusOr<Config> config = LoadConfigFile(*flags.check_file);
        if (!config.ok())
            return ConfigError(err, config.status());
        out << *flags.check_file << ": OK\n";
        return Exit(0);
    }

    if (Status s = CheckOverrides(flags); !s.ok())
        return UsageError(err, s.message());
    Invocation invocation;
    invocation.config = std::move(defaults);
    invocation.config_origin = kEmbeddedDefault;
    if (flags.config_file) {
        StatusOr<Config> loaded = LoadConfigFile(*flags.config_file);
        if (!loaded.ok())
            return ConfigError(err, loaded.status());
        invocation.config = std::move(*loaded);
        invocation.config_origin = *flags.config_file;
    }
    Config &config = invocation.config;
    if (flags.listen)
        config.control_listen = *flags.listen;
    if (flags.data_listen)
        config.data_listen = *flags.data_listen;
    if (flags.provider)
        config.provider = *flags.provider;
    if (flags.log_level)
        config.log_level = *flags.log_level;
    if (flags.pool_dir) {
        StatusOr<std::string> pool_dir = ResolvePoolDir(*flags.pool_dir);
        if (!pool_dir.ok())
            return ConfigError(err, pool_dir.status());
        config.pool_dir = *pool_dir;
    }
    if (Status s = ValidateConfig(config); !s.ok()) {
        return ConfigError(err, Status(s.code(), invocation.config_origin +
                                                     " with the command line: " + s.message()));
    }
    return invocation;
}

}  // namespace rpmad
