/* daemon/pool/dag.c: a small task graph with AND / OR gates, checked for cycles at run.
 *
 * Build on one thread (nodes, edges), then jd_dag_run: Kahn's algorithm over the
 * in-degrees finds any cycle before anything runs; then the roots are submitted as one
 * batch.  A finishing node walks its successors: an AND node is ready when its count of
 * unfinished predecessors drops to zero, an OR node when the first predecessor finishes
 * (an exchange on its `fired` flag lets exactly one predecessor release it; the later
 * ones find it fired).  So every node runs exactly once.  The first ready plain successor
 * runs next on the same worker, in the same task (a continuation: no queue round trip for
 * a chain); the others are spawned.  Completion is one wait group counting the nodes.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

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
	int *succ;
	struct jd_dag *dag;
};

struct jd_dag {
	struct jd_pool *pool;
	struct dag_node *nodes;
	int n, cap;
	bool ran;
	struct jd_wg wg;
};

int jd_dag_create(struct jd_dag **out, struct jd_pool *p)
{
	struct jd_dag *d = calloc(1, sizeof(*d));
	if (!d)
		return JSCHED_ENOMEM;
	d->pool = p;
	jd_wg_init(&d->wg);
	*out = d;
	return 0;
}

void jd_dag_destroy(struct jd_dag *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->n; i++)
		free(d->nodes[i].succ);
	free(d->nodes);
	free(d);
}

int jd_dag_add(struct jd_dag *d, const struct jd_task_spec *t, enum jd_gate gate)
{
	if (d->ran || jd_task_check(t) || (gate != JD_GATE_AND && gate != JD_GATE_OR))
		return JSCHED_EINVAL;
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 8;
		struct dag_node *nodes = realloc(d->nodes, (size_t)cap * sizeof(*nodes));
		if (!nodes)
			return JSCHED_ENOMEM;
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
	nd->gate = gate;
	return d->n++;
}

int jd_dag_edge(struct jd_dag *d, int from, int to)
{
	if (d->ran || from < 0 || to < 0 || from >= d->n || to >= d->n || from == to)
		return JSCHED_EINVAL;
	struct dag_node *f = &d->nodes[from];
	if (f->nsucc == f->capsucc) {
		int cap = f->capsucc ? f->capsucc * 2 : 4;
		int *s = realloc(f->succ, (size_t)cap * sizeof(*s));
		if (!s)
			return JSCHED_ENOMEM;
		f->succ = s;
		f->capsucc = cap;
	}
	f->succ[f->nsucc++] = to;
	d->nodes[to].npred++;
	return 0;
}

static void node_task(void *arg);

/* release: queue a ready node as a task of its own. */
static void release(struct dag_node *nd)
{
	struct jd_task_spec s = {.fn = node_task, .arg = nd, .flags = nd->flags};
	struct jd_worker *w = jd_self();
	int rc = w && w->pool == nd->dag->pool ? jd_spawn(&s)
					       : jd_pool_submit(nd->dag->pool, &s);
	if (rc)
		node_task(nd); /* out of memory: run it here rather than lose it */
}

static void node_task(void *arg)
{
	struct dag_node *nd = arg;
	while (nd) {
		struct jd_dag *d = nd->dag;
		nd->fn(nd->payload_len ? (void *)nd->payload : nd->arg);
		struct dag_node *next = NULL;
		for (int i = 0; i < nd->nsucc; i++) {
			struct dag_node *s = &d->nodes[nd->succ[i]];
			bool ready;
			if (s->gate == JD_GATE_OR)
				ready = !atomic_exchange_explicit(&s->fired, true,
								  memory_order_acq_rel);
			else
				ready = atomic_fetch_sub_explicit(&s->remaining, 1,
								  memory_order_acq_rel) == 1;
			if (!ready)
				continue;
			if (!next && !(s->flags & JD_TASK_FIBER))
				next = s;
			else
				release(s);
		}
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
	int *indeg = malloc((size_t)d->n * 2 * sizeof(int));
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
		for (int k = 0; k < nd->nsucc; k++)
			if (--indeg[nd->succ[k]] == 0)
				queue[tail++] = nd->succ[k];
	}
	if (tail < d->n) {
		free(indeg);
		return JSCHED_EDEPENDENCY_CYCLE;
	}
	struct jd_task_spec stack_specs[8];
	struct jd_task_spec *specs =
		nroots <= 8 ? stack_specs : malloc((size_t)nroots * sizeof(*specs));
	if (!specs) {
		free(indeg);
		return JSCHED_ENOMEM;
	}
	for (int i = 0; i < d->n; i++) {
		struct dag_node *nd = &d->nodes[i];
		nd->dag = d;
		atomic_init(&nd->remaining, nd->npred);
		atomic_init(&nd->fired, nd->npred == 0);
	}
	for (int i = 0; i < nroots; i++)
		specs[i] = (struct jd_task_spec){
			.fn = node_task, .arg = &d->nodes[queue[i]], .flags = d->nodes[queue[i]].flags};
	free(indeg);
	jd_wg_add(&d->wg, d->n);
	d->ran = true;
	int rc = jd_pool_submit_batch(d->pool, specs, (size_t)nroots);
	if (specs != stack_specs)
		free(specs);
	if (rc) {
		d->ran = false;
		jd_wg_init(&d->wg);
	}
	return rc;
}

int jd_dag_wait(struct jd_dag *d)
{
	return jd_wg_wait(&d->wg);
}
