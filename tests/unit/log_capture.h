/* log_capture: a unit test's log lines (lib/core/log, written to fd 2)
 * kept out of the run's output while the test passes, and shown when it
 * does not.
 *
 * log_capture_start sends fd 2 to a temporary file; log_capture_end (the
 * test reached its end) puts fd 2 back and drops what was written. A test
 * that fails never reaches log_capture_end: as its process exits, or
 * before a sanitizer's report kills it, the lines captured are written to
 * the real stderr under a header, then the report. A test killed by a
 * signal without a sanitizer loses them (Criterion still names it).
 * log_capture_end belongs at the end of the test's body, not in a suite's
 * .fini: Criterion runs that after a failed assertion too. */
#ifndef LOG_CAPTURE_H
#define LOG_CAPTURE_H

#include "core/buf.h"

void log_capture_start(void);
void log_capture_end(void);
/* Appends what has been captured so far to out: for a test whose log line
 * is the behaviour it checks. */
void log_capture_text(buf *out);

#endif
