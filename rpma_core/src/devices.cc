#include "rpma_core/src/devices.h"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/providers.h"

namespace rpma {
namespace {

constexpr std::string_view kAuto = "auto";

// "auto, verbs, tcp": what RPMA_PROVIDER accepts, for its error message.
std::string ProviderChoices() {
    std::string choices(kAuto);
    for (const provider::Ops *ops : provider::Providers())
        choices.append(", ").append(ops->name);
    return choices;
}

}  // namespace

int LookupContext(const char *addr, enum rpma_util_ibv_context_type type, ibv_context **ctx) {
    const char *env = getenv("RPMA_PROVIDER");
    const std::string_view choice = env != nullptr && *env != '\0' ? env : kAuto;
    const bool any = choice == kAuto;
    const bool local = type == RPMA_UTIL_IBV_CONTEXT_LOCAL;
    for (const provider::Ops *ops : provider::Providers()) {
        if (!any && choice != ops->name)
            continue;
        const int err = ops->lookup(addr, local, ctx);
        if (err == 0)
            return 0;
        // auto goes on only when this provider serves no such address; a
        // device that fails is an error worth seeing.
        if (err == ENODEV && any)
            continue;
        RPMA_LOG_ERROR("provider %s cannot serve '%s'%s", ops->name, addr,
                       any ? "" : " (chosen by RPMA_PROVIDER; unset it to let another try)");
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    if (any) {
        RPMA_LOG_ERROR("no provider serves '%s'", addr);
        return RPMA_E_PROVIDER;
    }
    RPMA_LOG_ERROR("RPMA_PROVIDER='%s' is not one of %s", env, ProviderChoices().c_str());
    return RPMA_E_INVAL;
}

const provider::Ops *OwnerOf(ibv_context *ctx, provider::Device **device) {
    for (const provider::Ops *ops : provider::Providers()) {
        if (provider::Device *found = ops->device(ctx); found != nullptr) {
            *device = found;
            return ops;
        }
    }
    return nullptr;
}

provider::Device *FindDevice(ibv_context *ctx) {
    provider::Device *device = nullptr;
    OwnerOf(ctx, &device);
    return device;
}

}  // namespace rpma
