// The rules a Config must satisfy (ValidateConfig), with the file and line
// of the offending key when the config came from a file. Private to the
// config target.
#ifndef DAEMON_CONFIG_VALIDATION_H
#define DAEMON_CONFIG_VALIDATION_H

#include "daemon/config.h"
#include "daemon/config_locator.h"
#include "daemon/status.h"

namespace rpmad::config_text {

// Every rule of ValidateConfig; `where` adds the file and line when known.
Status CheckConfig(const Config &config, const Locator &where);

}  // namespace rpmad::config_text

#endif  // DAEMON_CONFIG_VALIDATION_H
