/* rl_scan: finds the `items` of a block-style ResourceList without libyaml,
 * when it can be sure of them; see rl_scan.c for why and how. */
#ifndef KRM_RL_SCAN_H
#define KRM_RL_SCAN_H

#include <stddef.h>

/* Where the value of the root mapping's first `items` key lies, when that
 * value is a block sequence of block mappings in the subset the scanner
 * understands. Cutting bytes [begin, end) out of the document leaves a
 * document that libyaml parses exactly as the original, except that `items`
 * reads as null; lines after the cut move up by `lines`. */
typedef struct rl_items_cut {
    size_t begin, end;     /* the lines of the value: after "items:\n", up to the next root key */
    size_t first_line;     /* zero-based number of the first cut line */
    size_t lines;          /* line breaks in [begin, end) */
    size_t n_items;        /* entries of the sequence; every one is a mapping */
} rl_items_cut;

/* 1 and *cut filled when data[0..len) has such an `items` and everything up
 * to its end is in the subset; 0 when the caller must parse it all. */
int rl_scan_items(const char *data, size_t len, rl_items_cut *cut);

#endif
