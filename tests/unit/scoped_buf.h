/* scoped_buf: a buf freed when its scope ends, for tests that read the
 * reason a function appended to its `buf *err` in their asserts: no
 * buf_free on every path (a leak fails the unit run under ASan). */
#ifndef KRM_TEST_SCOPED_BUF_H
#define KRM_TEST_SCOPED_BUF_H

#include "core/buf.h"

#define SCOPED_BUF __attribute__((cleanup(buf_free))) buf

#endif
