/* state_step: the check and log every state machine in lib/ does on a move.
 * A machine keeps a table of the states each state may go to (a bit per
 * state, STATE_BIT) and calls state_step before it assigns the new state. */
#ifndef CORE_STATE_STEP_H
#define CORE_STATE_STEP_H

#define STATE_BIT(s) (1u << (s))

/* Whether `next[from]` allows `to`. Logs the move at verbosity 4, or a
 * refused one as an error, each naming the machine by `who` (printf). The
 * caller asserts the answer, so the assert names its own file and line. */
int state_step(const unsigned *next, const char *const *names, int from, int to,
               const char *who_fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
