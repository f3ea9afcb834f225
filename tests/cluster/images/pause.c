/* The sandbox ("pause") program of pinscope's test cluster: PID 1 of every pod sandbox. It holds the pod's
 * namespaces open, reaps the zombies the kernel hands it, and exits on SIGINT or SIGTERM, as kubernetes'
 * build/pause/linux/pause.c does. Built static by tests/cluster/build. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
	(void)sig;
	_exit(0);
}

static void on_child(int sig) {
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
}

int main(int argc, char **argv) {
	struct sigaction stop, child;

	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		puts("pause (pinscope test cluster)");
		return 0;
	}
	if (getpid() != 1)
		fprintf(stderr, "pause: warning: not PID 1\n");
	memset(&stop, 0, sizeof(stop));
	stop.sa_handler = on_stop;
	memset(&child, 0, sizeof(child));
	child.sa_handler = on_child;
	child.sa_flags = SA_NOCLDSTOP;
	if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0) {
		perror("pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
}
