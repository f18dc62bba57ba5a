/* The pod sandbox ("pause") program for the testbed's local pause image: it holds the pod's
 * namespaces, reaps zombies (it is PID 1 when the pod shares a PID namespace) and exits on
 * SIGINT/SIGTERM. Built with gcc -static by hack/images.sh. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) { (void)sig; _exit(0); }
static void on_chld(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction term = {0}, chld = {0};
  term.sa_handler = on_term;
  chld.sa_handler = on_chld;
  chld.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGINT, &term, NULL);
  sigaction(SIGTERM, &term, NULL);
  sigaction(SIGCHLD, &chld, NULL);
  for (;;) pause();
  return 1;
}
