/* install: the `copier [--verify] SRC... DESTDIR` form.
 *
 * An init container runs this to put the wrapper server into a shared
 * emptyDir volume: each source becomes DESTDIR/<basename>, mode 0555, written
 * to a temporary name, fsynced and renamed over the target (then the
 * directory is fsynced), so the function container never runs a partial
 * binary. Targets that already hold the same bytes with mode 0555 are left
 * alone, so restarting the init container is cheap and harmless. A source
 * named "wrapper-server" also gets the probe name "grpc-health-probe" as a
 * relative symlink to it (the wrapper server is a multi-call binary). */
#ifndef COPIER_INSTALL_H
#define COPIER_INSTALL_H

#define COP_INSTALL_MODE 0555
#define COP_SERVER_NAME "wrapper-server"
#define COP_PROBE_NAME "grpc-health-probe"

/* Installs srcs[0..n-1] into destdir; verify re-reads every target and
 * compares it with its source afterwards. Messages go to stderr.
 * Returns the exit code: 0 success, 1 failure. */
int cop_install(char **srcs, int n, const char *destdir, int verify);

/* The last path component of path ("" when path ends with '/'). */
const char *cop_basename(const char *path);

#endif
