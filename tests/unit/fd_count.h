/* fd_count: how many descriptors the test process has open, from
 * /proc/self/fd: a test counts before and after to show that nothing it
 * called left one open (or closed one it did not own). */
#ifndef FD_COUNT_H
#define FD_COUNT_H

int fd_count_open(void);

#endif
