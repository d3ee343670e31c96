/* probe: grpc-health-probe, built into the wrapper server binary.
 *
 * Porch's pod template runs `/wrapper-server-tools/grpc-health-probe -addr
 * localhost:9446` as the readiness probe. Shipping the probe inside the
 * server (selected by argv[0], or `wrapper-server probe ...`) saves a second
 * static binary in every pod. Command line and exit codes follow
 * grpc-health-probe v0.4.11: 0 SERVING, 1 bad arguments, 2 connection
 * failure, 3 RPC failure, 4 not SERVING. */
#ifndef KRM_WS_PROBE_H
#define KRM_WS_PROBE_H

/* argv[0] is the program name; returns the exit code. */
int probe_main(int argc, char **argv);

#endif
