/* Threads as a small worker pool makes them (issue #42's corpus): four threads, each opens,
 * reads and closes a file and takes a mutex the others contend for; the main thread joins
 * them. Each thread's calls are fixed; their interleaving is not. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int total;

static void *work(void *arg) {
    char buf[64];
    int fd = open("/etc/hostname", O_RDONLY);
    int n = read(fd, buf, sizeof buf);
    close(fd);
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&lock);
        total += n;
        pthread_mutex_unlock(&lock);
    }
    usleep(1000 * (1 + (long)arg));
    return 0;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], 0);
    return total == 0;
}
