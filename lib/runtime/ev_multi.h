/* ev_multi: tries evaluators in order, like Porch's multi-evaluator.
 *
 * The next evaluator is tried only when the current one answers NOT_FOUND
 * (it has no such function); success and every other error are final, so a
 * function that fails is never silently re-run elsewhere. When all say
 * NOT_FOUND the caller gets NOT_FOUND with the last message. Unlike Porch,
 * whose order comes from a Go map and changes between runs, the order is
 * the one given. */
#ifndef KRM_EV_MULTI_H
#define KRM_EV_MULTI_H

#include <stddef.h>

#include "runtime/evaluator.h"

/* Takes ownership of the n evaluators (destroyed with it). n may be 0: every
 * call then fails with FAILED_PRECONDITION. NULL on ENOMEM. */
evaluator *ev_multi_new(loop *l, evaluator **evs, size_t n);

#endif
