/* A KRM function for tests/e2e/test_sandbox_incluster.py, which builds it
 * static and mounts it into the runner's pod as the exec runtime's binary.
 *
 * Built plainly it answers its ResourceList unchanged: the normal call.
 * Built with -DSTEAL=\"PATH\" it first reads PATH (the runner pod's
 * service-account token) as a hostile function would: if it can, it answers
 * as if nothing happened and says on stderr how many bytes it got, so the
 * call succeeds and the test sees the attack worked; if it cannot, it fails
 * with the error, which the runner keeps in its answer. Built with
 * -DCONNECT_PORT=N it first connects to 127.0.0.1:N (the API server, which
 * the runner's host network reaches), likewise. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
#ifdef STEAL
    FILE *secret = fopen(STEAL, "r");
    if (!secret) {
        fprintf(stderr, "cannot read %s: %s\n", STEAL, strerror(errno));
        return 1;
    }
    char stolen[4096];
    size_t n = fread(stolen, 1, sizeof stolen, secret);
    fclose(secret);
    fprintf(stderr, "read %zu bytes of %s\n", n, STEAL);
#endif
#ifdef CONNECT_PORT
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(CONNECT_PORT),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    if (sock < 0 || connect(sock, (struct sockaddr *)&to, sizeof to) < 0) {
        fprintf(stderr, "cannot connect to 127.0.0.1:%d: %s\n", CONNECT_PORT, strerror(errno));
        return 1;
    }
    close(sock);
    fprintf(stderr, "connected to 127.0.0.1:%d\n", CONNECT_PORT);
#endif
    char chunk[65536];
    size_t n_read;
    while ((n_read = fread(chunk, 1, sizeof chunk, stdin)) > 0)
        if (fwrite(chunk, 1, n_read, stdout) != n_read)
            return 1;
    return ferror(stdin) || fflush(stdout) ? 1 : 0;
}
