/*
 * The credential calls strace's %creds class holds, each once or twice, for
 * tests/trace_cli.rs: the group lists given and filled (two, none, NULL, and a size the
 * kernel refuses), the ids getresuid and getresgid fill, the set*id calls with -1 (keep),
 * and prctl(2) by its options: the capability bounding set (a capability, and a number
 * past the last), the ambient set, the secure bits set and got, the dumpable flag, the
 * parent-death signal, the timer slack, the keep-caps flag, no_new_privs read, the task's
 * name set and got (one past the 15 bytes the kernel keeps), and an option the kernel does
 * not know. Run as root: every call but the refused ones succeeds,
 * and each change is put back.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(void) {
    gid_t given[2] = {4, 24};
    gid_t filled[32];
    uid_t r, e, s;
    if (setgroups(2, given) != 0)
        return 1;
    getgroups(0, NULL);
    getgroups(32, filled);
    getgroups(1, filled);
    setgroups(0, filled);
    getgroups(32, filled);
    setgroups(0, NULL);
    getresuid(&r, &e, &s);
    getresgid(&r, &e, &s);
    setresuid(-1, -1, -1);
    setresgid(-1, -1, -1);
    setreuid(-1, -1);
    setregid(-1, -1);
    setuid(0);
    setgid(0);
    setfsuid(-1);
    setfsgid(-1);
    prctl(PR_CAPBSET_READ, 0 /* CAP_CHOWN */);
    prctl(PR_CAPBSET_READ, 0x30);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0 /* CAP_CHOWN */, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    prctl(PR_SET_SECUREBITS, 1 << 4 /* SECBIT_KEEP_CAPS */);
    prctl(PR_GET_SECUREBITS);
    prctl(PR_SET_SECUREBITS, 0);
    prctl(PR_GET_SECUREBITS);
    prctl(PR_GET_DUMPABLE);
    prctl(PR_SET_DUMPABLE, 1);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_PDEATHSIG, 0);
    prctl(PR_SET_TIMERSLACK, 50000);
    prctl(PR_SET_KEEPCAPS, 0);
    prctl(PR_GET_KEEPCAPS);
    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    char name[16];
    prctl(PR_SET_NAME, "creds-worker");
    prctl(PR_GET_NAME, name);
    prctl(PR_SET_NAME, "a-name-past-fifteen");
    prctl(PR_GET_NAME, name);
    prctl(0x7ff, 1, 2, 3, 4);
    return 0;
}
