/* daemon/pool/dag.c: a small task graph with AND / OR gates, checked for cycles at run.
 *
 * Build on one thread (nodes, edges), then jd_dag_run: Kahn's algorithm over the
 * in-degrees finds any cycle before anything runs.  A finishing node walks its successors:
 * an AND node is ready when its count of unfinished predecessors drops to zero, an OR node
 * when the first predecessor finishes (an exchange on its `fired` flag lets exactly one
 * predecessor release it).  So every node runs exactly once.
 *
 * Ready nodes are not tasks themselves.  A ready node goes on the graph's ready list (one
 * for plain nodes, one for fiber nodes), and a "drainer" task is queued for it; a drainer
 * takes any one node of its kind from the list and runs it.  The first ready plain
 * successor of a finishing node is run next by the same thread instead (a continuation:
 * no queue round trip along a chain).  The point of the indirection: a thread outside the
 * pool that waits in jd_dag_wait takes plain nodes from the list and runs them itself, as
 * oneTBB's wait_for_all does, so a small graph waited on from outside needs no hand-off
 * to a worker and back (on this 2-CPU machine the six-node graph took ~3 µs through the
 * workers, most of it hand-offs).  A drainer that finds the list empty (the waiter got
 * there first) just ends.  As many drainers are queued as nodes are listed, so no node is
 * ever stranded.  Drainers may outlive jd_dag_wait, so the graph is reference counted:
 * jd_dag_destroy drops the owner's reference and the last drainer frees it.
 *
 * Drainers run even under an immediate destroy (JD_TASK_KEEP): there they drop the nodes
 * they take (counted as dropped tasks) but still release their successors, so every node
 * ends once and jd_dag_wait returns.
 *
 * Small graphs (up to 8 nodes, 4 successors per node) need no allocation but the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

#define SMALL_NODES 8
#define SMALL_SUCC 4

struct dag_node {
	jd_task_fn fn;
	void *arg;
	unsigned char payload[JD_TASK_PAYLOAD_MAX];
	size_t payload_len;
	unsigned flags;
	enum jd_gate gate;
	atomic_int remaining;	/* AND: predecessors not finished yet */
	atomic_bool fired;	/* released (OR: by the first predecessor) */
	int npred;
	int nsucc, capsucc;
	int *succ;		/* heap array, or NULL: succ_small */
	int succ_small[SMALL_SUCC];
	struct dag_node *next_ready; /* ready list link (dag lock) */
	struct jd_dag *dag;
};

struct jd_dag {
	struct jd_pool *pool;
	struct dag_node *nodes;	/* node_small or heap */
	int n, cap;
	bool ran;
	struct jd_wg wg;	/* nodes not finished */
	atomic_uint lock;	/* over the ready lists */
	struct dag_node *ready[2]; /* plain, fiber: listed, not yet taken */
	atomic_int refs;	/* the owner + queued drainers */
	struct dag_node node_small[SMALL_NODES];
};

static int *succ_of(struct dag_node *nd)
{
	return nd->succ ? nd->succ : nd->succ_small;
}

int jd_dag_create(struct jd_dag **out, struct jd_pool *p)
{
	struct jd_dag *d = malloc(sizeof(*d));
	if (!d)
		return JSCHED_ENOMEM;
	d->pool = p;
	d->nodes = d->node_small;
	d->n = 0;
	d->cap = SMALL_NODES;
	d->ran = false;
	jd_wg_init(&d->wg);
	atomic_init(&d->lock, 0);
	d->ready[0] = d->ready[1] = NULL;
	atomic_init(&d->refs, 1);
	*out = d;
	return 0;
}

static void dag_free(struct jd_dag *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->nodes[i].succ);
	if (d->nodes != d->node_small)
		free(d->nodes);
	free(d);
}

static void dag_unref(struct jd_dag *d)
{
	if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) == 1)
		dag_free(d);
}

void jd_dag_destroy(struct jd_dag *d)
{
	if (d)
		dag_unref(d);
}

int jd_dag_add(struct jd_dag *d, const struct jd_task_spec *t, enum jd_gate gate)
{
	if (d->ran || jd_task_check(t) || (gate != JD_GATE_AND && gate != JD_GATE_OR))
		return JSCHED_EINVAL;
	if (d->n == d->cap) {
		int cap = d->cap * 2;
		struct dag_node *nodes = malloc((size_t)cap * sizeof(*nodes));
		if (!nodes)
			return JSCHED_ENOMEM;
		memcpy(nodes, d->nodes, (size_t)d->n * sizeof(*nodes));
		if (d->nodes != d->node_small)
			free(d->nodes);
		d->nodes = nodes;
		d->cap = cap;
	}
	struct dag_node *nd = &d->nodes[d->n];
	memset(nd, 0, sizeof(*nd));
	nd->fn = t->fn;
	nd->arg = t->arg;
	nd->payload_len = t->payload_len;
	if (t->payload_len)
		memcpy(nd->payload, t->payload, t->payload_len);
	nd->flags = t->flags;
	if (nd->flags & JD_TASK_LARGE_STACK)
		nd->flags |= JD_TASK_FIBER;
	nd->gate = gate;
	nd->capsucc = SMALL_SUCC;
	return d->n++;
}

int jd_dag_edge(struct jd_dag *d, int from, int to)
{
	if (d->ran || from < 0 || to < 0 || from >= d->n || to >= d->n || from == to)
		return JSCHED_EINVAL;
	struct dag_node *f = &d->nodes[from];
	if (f->nsucc == f->capsucc) {
		int cap = f->capsucc * 2;
		int *s = malloc((size_t)cap * sizeof(*s));
		if (!s)
			return JSCHED_ENOMEM;
		memcpy(s, succ_of(f), (size_t)f->nsucc * sizeof(*s));
		free(f->succ);
		f->succ = s;
		f->capsucc = cap;
	}
	succ_of(f)[f->nsucc++] = to;
	d->nodes[to].npred++;
	return 0;
}

static int kind_of(const struct dag_node *nd)
{
	return nd->flags & JD_TASK_FIBER ? 1 : 0;
}

static void run_chain(struct dag_node *nd);

static struct dag_node *take_ready(struct jd_dag *d, int kind)
{
	jd_spin_lock(&d->lock);
	struct dag_node *nd = d->ready[kind];
	if (nd)
		d->ready[kind] = nd->next_ready;
	jd_spin_unlock(&d->lock);
	return nd;
}

static void drainer(void *arg)
{
	struct dag_node *trigger = arg; /* only its kind and graph matter */
	struct jd_dag *d = trigger->dag;
	struct dag_node *nd = take_ready(d, kind_of(trigger));
	if (nd)
		run_chain(nd);
	dag_unref(d);
}

/* unlist_and_run: take back those of nds[0..k) that nobody has taken yet, and run them here. */
static void unlist_and_run(struct jd_dag *d, struct dag_node **nds, int k)
{
	struct dag_node *mine[16];
	int n = 0;
	jd_spin_lock(&d->lock);
	for (int i = 0; i < k; i++) {
		struct dag_node **at = &d->ready[kind_of(nds[i])];
		while (*at && *at != nds[i])
			at = &(*at)->next_ready;
		if (*at) {
			*at = nds[i]->next_ready;
			mine[n++] = nds[i];
		}
	}
	jd_spin_unlock(&d->lock);
	for (int i = 0; i < n; i++)
		run_chain(mine[i]);
}

/* list: put ready nodes on the ready lists and queue one drainer each.  Returns 0, or
 * the error of the submit; then the chunk that failed is run here (those of it that
 * nobody took meanwhile), and the rest is not listed. */
static int list(struct jd_dag *d, struct dag_node **nds, int n)
{
	struct jd_task_spec specs[16];
	int done = 0;
	while (done < n) {
		int k = n - done < 16 ? n - done : 16;
		jd_spin_lock(&d->lock);
		for (int i = 0; i < k; i++) {
			struct dag_node *nd = nds[done + i];
			nd->next_ready = d->ready[kind_of(nd)];
			d->ready[kind_of(nd)] = nd;
		}
		jd_spin_unlock(&d->lock);
		for (int i = 0; i < k; i++)
			specs[i] = (struct jd_task_spec){.fn = drainer,
							 .arg = nds[done + i],
							 .flags = nds[done + i]->flags | JD_TASK_KEEP};
		atomic_fetch_add_explicit(&d->refs, k, memory_order_relaxed);
		int rc = jd_pool_submit_batch(d->pool, specs, (size_t)k);
		if (rc) {
			atomic_fetch_sub_explicit(&d->refs, k, memory_order_relaxed);
			unlist_and_run(d, nds + done, k);
			return rc;
		}
		done += k;
	}
	return 0;
}

/* run_chain: run nd, release its successors, and go on with the first ready plain one
 * (on this thread); the others are listed. */
static void run_chain(struct dag_node *nd)
{
	while (nd) {
		struct jd_dag *d = nd->dag;
		if (atomic_load_explicit(&d->pool->stopping, memory_order_relaxed) !=
		    JD_STOP_IMMEDIATE)
			nd->fn(nd->payload_len ? (void *)nd->payload : nd->arg);
		else /* dropped, but released as if finished so that the graph ends */
			atomic_fetch_add_explicit(&d->pool->dropped, 1, memory_order_relaxed);
		struct dag_node *next = NULL, *more[16];
		int nmore = 0;
		int *succ = succ_of(nd);
		for (int i = 0; i < nd->nsucc; i++) {
			struct dag_node *s = &d->nodes[succ[i]];
			bool ready;
			if (s->gate == JD_GATE_OR)
				ready = !atomic_exchange_explicit(&s->fired, true,
								  memory_order_acq_rel);
			else
				ready = atomic_fetch_sub_explicit(&s->remaining, 1,
								  memory_order_acq_rel) == 1;
			if (!ready)
				continue;
			if (!next && !kind_of(s)) {
				next = s;
				continue;
			}
			more[nmore++] = s;
			if (nmore == 16) {
				list(d, more, nmore); /* on error it ran them here */
				nmore = 0;
			}
		}
		if (nmore)
			list(d, more, nmore);
		jd_wg_done(&d->wg); /* nd is finished; if it was the last, next is NULL */
		nd = next;
	}
}

int jd_dag_run(struct jd_dag *d)
{
	if (d->ran)
		return JSCHED_EINVAL;
	if (d->n == 0) {
		d->ran = true;
		return 0;
	}
	/* Kahn: repeatedly remove nodes without unvisited predecessors. */
	int small[2 * 64];
	int *indeg = d->n <= 64 ? small : malloc((size_t)d->n * 2 * sizeof(int));
	if (!indeg)
		return JSCHED_ENOMEM;
	int *queue = indeg + d->n, head = 0, tail = 0;
	for (int i = 0; i < d->n; i++) {
		indeg[i] = d->nodes[i].npred;
		if (!indeg[i])
			queue[tail++] = i;
	}
	int nroots = tail;
	while (head < tail) {
		struct dag_node *nd = &d->nodes[queue[head++]];
		int *succ = succ_of(nd);
		for (int k = 0; k < nd->nsucc; k++)
			if (--indeg[succ[k]] == 0)
				queue[tail++] = succ[k];
	}
	int rc = 0;
	if (tail < d->n) {
		rc = JSCHED_EDEPENDENCY_CYCLE;
		goto out;
	}
	for (int i = 0; i < d->n; i++) {
		struct dag_node *nd = &d->nodes[i];
		nd->dag = d;
		atomic_init(&nd->remaining, nd->npred);
		atomic_init(&nd->fired, nd->npred == 0);
	}
	jd_wg_add(&d->wg, d->n);
	d->ran = true;
	for (int i = 0; i < nroots; i += 16) {
		struct dag_node *roots[16];
		int k = nroots - i < 16 ? nroots - i : 16;
		for (int j = 0; j < k; j++)
			roots[j] = &d->nodes[queue[i + j]];
		if (list(d, roots, k) != 0) {
			/* Out of memory: list() ran this chunk here; run the other roots
			 * here too, so the graph still runs to the end. */
			for (int j = i + k; j < nroots; j++)
				run_chain(&d->nodes[queue[j]]);
			break;
		}
	}
out:
	if (indeg != small)
		free(indeg);
	return rc;
}

int jd_dag_wait(struct jd_dag *d)
{
	if (!jd_self()) {
		/* Outside the pool: run ready plain nodes here while there are any. */
		struct dag_node *nd;
		while (!jd_event_is_set(&d->wg.zero) && (nd = take_ready(d, 0)))
			run_chain(nd);
	}
	return jd_wg_wait(&d->wg);
}
