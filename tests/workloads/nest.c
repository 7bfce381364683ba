/* Pointer chains and char arrays with known values, for member reads through more than one
 * pointer (issue #46: `bio->bi_bdev->bd_disk->disk_name`, `oc->chosen->pid`).
 *
 * usage: nest N
 * Builds a ring of three nodes, "n0" -> "n1" -> "n2" -> "n0", each node's `up` pointing at a
 * shared holder whose `owner` is node 2, and calls nest_visit(node i % 3, i) for i = 1..N.
 * Call i therefore sees: n->id = i % 3, n->next->id = (i + 1) % 3, n->next->next->name =
 * "n" (i + 2) % 3, n->link.up->owner->id = 2, and n->hole->id a failed read (a NULL pointer on
 * the way). Each call is preceded by nest_next(node i % 3), which returns node (i + 1) % 3:
 * its members are read through `ret` at the return. */
#include <stdlib.h>

struct node;

struct holder {
    long pad;
    struct node *owner;
};

struct node {
    int id;
    char name[12];
    struct node *next;
    struct {
        struct holder *up;
    } link;
    struct node *hole;
};

__attribute__((noinline)) int nest_visit(struct node *n, int call) {
    return n->id + call + n->next->id + (n->hole != 0);
}

__attribute__((noinline)) struct node *nest_next(struct node *n) { return n->next; }

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 1;
    static struct node nodes[3] = {
        {0, "n0", 0, {0}, 0},
        {1, "n1", 0, {0}, 0},
        {2, "n2", 0, {0}, 0},
    };
    static struct holder holder = {7, &nodes[2]};
    for (int i = 0; i < 3; i++) {
        nodes[i].next = &nodes[(i + 1) % 3];
        nodes[i].link.up = &holder;
    }
    long sum = 0;
    for (int i = 1; i <= calls; i++)
        sum += nest_visit(&nodes[i % 3], i) + (nest_next(&nodes[i % 3]) == 0);
    return sum < 0;
}
