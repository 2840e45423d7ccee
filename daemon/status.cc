#include "daemon/status.h"

#include <cerrno>
#include <cstring>

namespace rpmad {

Status ErrnoStatus(int err, std::string_view what) {
    StatusCode code = StatusCode::kInternal;
    switch (err) {
        case ENOENT:
        case ENOTDIR:
            code = StatusCode::kNotFound;
            break;
        case EACCES:
        case EPERM:
        case EROFS:
            code = StatusCode::kPermissionDenied;
            break;
        case ENOSPC:
        case EDQUOT:
            code = StatusCode::kResourceExhausted;
            break;
        case EISDIR:
        case ELOOP:
        case ENAMETOOLONG:
            code = StatusCode::kFailedPrecondition;
            break;
        default:
            break;
    }
    return Status(code, std::string(what) + ": " + std::strerror(err));
}

}  // namespace rpmad
