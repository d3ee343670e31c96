/* numparse: strict number parsing for command lines: whole string, decimal,
 * no sign, within a maximum. Shared by every CLI in the project. */
#ifndef KRM_NUMPARSE_H
#define KRM_NUMPARSE_H

int parse_uint(const char *text, unsigned long long max, unsigned long long *out);

#endif
