// File operations the region store relies on for crash safety, and the one
// place where an errno becomes a Status. A person reads these messages in a
// log or in rpmactl's output, so each names the file and the system error.
#ifndef DAEMON_DURABLE_FILE_H
#define DAEMON_DURABLE_FILE_H

#include <string>
#include <string_view>

#include "daemon/status.h"

namespace rpmad {

// "<what>: <strerror(err)>" with the code a caller can act on: ENOSPC and
// EDQUOT are RESOURCE_EXHAUSTED, EACCES, EPERM and EROFS are
// PERMISSION_DENIED, anything else (EIO above all) is INTERNAL.
Status ErrnoStatus(int err, std::string_view what);

// fsync()s a directory, which makes the names created, renamed or removed in
// it durable.
Status SyncDirectory(const std::string &dir);

// The whole content of `path`. NOT_FOUND when it does not exist.
StatusOr<std::string> ReadWholeFile(const std::string &path);

// Replaces `path` by `contents` so that a crash at any point leaves either
// the old or the new file whole under `path`: writes `path`.tmp, syncs it,
// renames it over `path` and syncs the directory. When `previous_path` is
// not empty the file being replaced is first hard-linked there, so the
// generation before is kept (the link never leaves `path` missing).
// On failure before the rename the old `path` is untouched and the temporary
// file is removed. A failure of the final directory sync is reported too,
// although the new content is then already visible.
Status ReplaceFileDurably(const std::string &path, std::string_view contents,
                          const std::string &previous_path);

}  // namespace rpmad

#endif  // DAEMON_DURABLE_FILE_H
