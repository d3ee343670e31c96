/* health_probe: grpc-health-probe, built into our programs.
 *
 * Porch's pod template runs `/wrapper-server-tools/grpc-health-probe -addr
 * localhost:9446` as the function pods' readiness probe, and Porch's
 * function-runner Deployment `/home/nonroot/grpc-health-probe -addr
 * localhost:9445` as the runner's. Shipping the probe inside the server
 * (wrapper-server and runner-client select it by argv[0]) saves a second
 * binary in every image. Command line and exit codes follow
 * grpc-health-probe v0.4.11: 0 SERVING, 1 bad arguments, 2 connection
 * failure, 3 RPC failure, 4 not SERVING. */
#ifndef KRM_GRPC_HEALTH_PROBE_H
#define KRM_GRPC_HEALTH_PROBE_H

/* The name a program was invoked as (argv[0] without its directory) is
 * "grpc-health-probe". */
int probe_invoked_as(const char *argv0);

/* argv[0] is the name the probe was invoked as; program names the binary
 * for -version. Returns the exit code. */
int probe_main(const char *program, int argc, char **argv);

#endif
