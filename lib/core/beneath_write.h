/* beneath_write: files written beneath a directory descriptor, never through a
 * symbolic link.
 *
 * Why: runner-client writes files whose names come from other people (a
 * function's path annotations) into directories other people may have
 * filled (a package, a results directory). A link planted on the way would
 * send the write anywhere the user can write. So every directory on a path
 * is entered with O_NOFOLLOW|O_DIRECTORY from the one before, the last name
 * is created with O_EXCL|O_NOFOLLOW, and a file is replaced by renaming a
 * complete new file over it: no step follows a link, whatever was planted
 * before or during the walk. Every writer of the client goes through here.
 *
 * Temporary names are ".krm-staged-PID-N.NAME" (new content not yet in
 * place) and ".krm-backup-PID-N.NAME" (an original kept until a write-back
 * is complete), NAME the target's when it fits NAME_MAX (left out when
 * not, so a long target's temporary name still fits): recognisable after a
 * crash (BENEATH_STAGED, BENEATH_BACKUP), and saying what they were for. */
#ifndef KRM_BENEATH_WRITE_H
#define KRM_BENEATH_WRITE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define BENEATH_STAGED ".krm-staged-"
#define BENEATH_BACKUP ".krm-backup-"
#define BENEATH_TMP_MAX (NAME_MAX + 1) /* room for a temporary name and its NUL */

/* Opens the directory rel[0..len) ('/'-separated, relative; len 0: root_fd
 * itself) beneath root_fd, as an O_PATH descriptor. Returns it, or -1 with
 * errno set: ELOOP when a component is a symbolic link, ENOTDIR when one is
 * not a directory, ENOENT when one is missing, or openat's error; then
 * *bad_len (when not NULL) is the length of rel's prefix that failed. */
int beneath_open_dir(int root_fd, const char *rel, size_t len, size_t *bad_len);

/* What name is in dir_fd, not following a link: 0 when absent, else the
 * S_IFMT bits of its mode (S_IFLNK for a link), mode's permission bits in
 * *perm (when not NULL); -1 with errno on another error. */
int beneath_kind(int dir_fd, const char *name, mode_t *perm);

/* Creates a fresh entry named prefix + "PID-N" (+ "." + for_name when not
 * NULL and it fits) in dir_fd: a file opened for writing
 * (O_EXCL|O_NOFOLLOW, mode) when is_dir is 0, returning its descriptor; a
 * directory (mode) when is_dir is 1, returning 0. The name goes to
 * name[BENEATH_TMP_MAX]. -1 with errno on failure. */
int beneath_create_fresh(int dir_fd, const char *prefix, const char *for_name, int is_dir,
                         mode_t mode, char *name);

/* Keeps a second name for dir_fd's `name` (a hard link, not following a
 * link): a fresh BENEATH_BACKUP name for it in backup[BENEATH_TMP_MAX].
 * 0, or -1 with linkat's errno (EPERM, EOPNOTSUPP, EMLINK where the file
 * system or the file allows no further link; backup then holds a name
 * that was free, for a rename instead). */
int beneath_link_backup(int dir_fd, const char *name, char *backup);

/* Renames dir_fd's `from` to `to`, failing with EEXIST when `to` exists
 * (RENAME_NOREPLACE; where the file system lacks it, a check just before
 * a plain rename). */
int beneath_rename_noreplace(int dir_fd, const char *from, const char *to);

/* Replaces (or creates) dir_fd's `name` with data: written whole under a
 * fresh BENEATH_STAGED name, then renamed over it. Refuses, before writing
 * anything, a name that is a symbolic link (ELOOP) or a directory
 * (EISDIR). 0, or -1 with errno (nothing left behind). */
int beneath_replace(int dir_fd, const char *name, const void *data, size_t len, mode_t mode);

#endif
