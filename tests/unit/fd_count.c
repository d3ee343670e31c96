/* fd_count: the test process's open descriptors; see fd_count.h. */
#include "fd_count.h"

#include <criterion/criterion.h>
#include <dirent.h>

int fd_count_open(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;   /* the listing's own */
}
