/* commands: runner-client's subcommands. Each takes the arguments after
 * its name and returns the process exit code: 0 success, 1 failure of the
 * call, 2 bad usage. */
#ifndef KRM_RC_COMMANDS_H
#define KRM_RC_COMMANDS_H


/* eval without --kube (eval.c); main.c sends eval --kube to cmd_eval_kube. */
int cmd_eval(int argc, char **argv);
/* render: eval with the input directory's Kptfile as the pipeline (eval.c). */
int cmd_render(int argc, char **argv);
int cmd_health(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_pod(int argc, char **argv);
/* pod list / pod delete (pod_kube.c): sub is "list" or "delete". */
int cmd_pod_kube(const char *sub, int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* pod_run.c: eval --kube (a function pod on a cluster) and pod create. */
int cmd_eval_kube(int argc, char **argv);
int cmd_pod_create(int argc, char **argv);

#endif
