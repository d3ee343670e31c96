/* beneath: paths that someone else wrote (a Kptfile's configPath, a name
 * found while walking a package, a FunctionConfig's binary) opened beneath
 * a directory's descriptor without ever leaving it.
 *
 * Why: a path checked as text and then opened by name can still lead out:
 * through a symbolic link on the way, or through a directory renamed or
 * replaced by a link between the check and the open. Here the kernel checks
 * while it resolves: openat2(2) with RESOLVE_BENEATH, and where the kernel
 * has no openat2 (before Linux 5.6, or a seccomp filter that refuses it) a
 * walk that opens one component at a time with O_NOFOLLOW, which cannot be
 * led out either. */
#ifndef KRM_BENEATH_H
#define KRM_BENEATH_H

#include "core/buf.h"

/* kpt's reasons for a configPath it refuses (pkg/api/kptfile/v1). */
#define BENEATH_EMPTY "path must not be empty"
#define BENEATH_ABSOLUTE "path must be relative"
#define BENEATH_OUTSIDE "path must not be outside the package"

/* Writes the clean form of relative `path` to out as Go's filepath.Clean
 * does ("a//b/./c" -> "a/b/c", "x/../y" -> "y"). Returns 0, or -1 with
 * *why set to one of kpt's reasons above: empty (or only blanks), absolute,
 * or climbing above its directory ("..", "../x", "a/../../x"); *why is
 * "out of memory" when out could not grow. */
int beneath_clean(const char *path, buf *out, const char **why);

/* Opens `path` beneath dir_fd with open flags `flags` (as given: add
 * O_CLOEXEC where wanted), following symbolic links as long as they stay
 * beneath dir_fd (a FunctionConfig's binary may be a relative link inside
 * --functions). openat2 only: -1 with errno ENOSYS where the kernel has
 * none, EXDEV where the path or a link leads out. */
int beneath_open_links(int dir_fd, const char *path, int flags);

/* Opens clean relative `path` (beneath_clean's output) beneath dir_fd with
 * open flags `flags` (O_CLOEXEC is added), following no symbolic link at
 * all, on the way or at the end. Returns the descriptor, or -1 with errno:
 * ELOOP a link was met, EXDEV the path leads out (absolute, ".."),
 * ENOTDIR a component on the way is not a directory, or open's error. */
int beneath_open(int dir_fd, const char *path, int flags);

/* Whether beneath_open uses openat2 (1) or walks component by component
 * (0: the kernel has none, or a seccomp filter refuses it). */
int beneath_has_openat2(void);
/* For the tests: 0 makes beneath_open walk as without openat2, 1 goes back
 * to asking the kernel. */
void beneath_use_openat2(int on);

#endif
