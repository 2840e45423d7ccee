// File operations the region store relies on for crash safety. A person reads these messages in a
// log or in rpmactl's output, so each names the file and the system error.
#ifndef DAEMON_DURABLE_FILE_H
#define DAEMON_DURABLE_FILE_H

#include <string>
#include <string_view>

#include "daemon/status.h"

namespace rpmad {

// fsync()s a directory, which makes the names created, renamed or removed in
// it durable.
Status SyncDirectory(const std::string &dir);

// rename() and unlink(); NOT_FOUND when `from` or `path` does not exist.
Status RenameFile(const std::string &from, const std::string &to);
Status RemoveFile(const std::string &path);

// The whole content of `path`. NOT_FOUND when it does not exist.
StatusOr<std::string> ReadWholeFile(const std::string &path);

// How far a replace got. `status` is ok once the new content is durable.
// `visible` is false when the replace failed before its rename (the old file
// is untouched) and true once the new content is what `path` holds, also
// when the directory sync after the rename failed: a restart then reads the
// new content, though a power cut may still bring back the old one (after a
// failed fsync the disk's state is unknown), so the caller must treat the
// change as made, not as undone.
struct Replacement {
    Status status;
    bool visible = false;
};

// Replaces `path` by `contents` so that a crash at any point leaves either
// the old or the new file whole under `path`: writes `path`.tmp, syncs it,
// renames it over `path` and syncs the directory. When `previous_path` is
// not empty the file being replaced is first hard-linked there (through a
// link at `previous_path`.tmp renamed over it), so the generation before is
// kept and `previous_path`, too, always holds a whole file; when `path` does
// not exist `previous_path` is left as it is. On failure before the rename
// the temporary files are removed.
Replacement ReplaceFileDurably(const std::string &path, std::string_view contents,
                               const std::string &previous_path);

// Test hook: called before every step of the functions above that changes a
// directory (write a new file, link, rename, remove, sync a directory) with
// what it is about to do, e.g. "rename /pool/catalog.tmp to /pool/catalog".
// It returns 0 to let the step run or an errno to make it fail as the
// system would; a test that plays a crash ends the process in it. rpmad
// never sets it. nullptr removes it.
using StepHook = int (*)(const std::string &step);
void SetStepHookForTesting(StepHook hook);

}  // namespace rpmad

#endif  // DAEMON_DURABLE_FILE_H
