/* daemon/pool/fiber.c: fibers: guard-paged stacks, start, suspend, wake, overflow report.
 *
 * Stacks.  One mmap'd arena per pool holds every stack of both size classes, each with a
 * PROT_NONE guard page just below it (stacks grow down), so an overflow faults instead of
 * silently writing into the neighbour.  The arena is MAP_NORESERVE: a stack costs memory
 * only for the pages it has touched.  Free fibers of a class sit on a spin-locked stack.
 * Each guard page splits the mapping, so the arena is 2 mappings per fiber, which a fork()
 * copies; jd_pool_config.fibers_dontfork keeps the arena out of children (the daemon
 * engineer measured exec jobs through libuv's fork at 590 -> 895 per second with it).
 *
 * Suspend and wake (the protocol JLib arrived at after shipping the opposite order as a
 * bug: "become parkable before publishing as a waiter").  A fiber that waits first sets
 * its state to WANTS_SUSPEND, then links itself into the event's waiter list, then
 * switches to its worker.  The worker, back on its own stack, CASes WANTS_SUSPEND ->
 * SUSPENDED.  A waker CASes SUSPENDED -> RUNNING and queues the fiber's resume record, or,
 * if the fiber has not finished switching out yet, WANTS_SUSPEND -> RESUME_PENDING; the
 * worker's CAS then fails and it runs the fiber again at once.  Every wake is seen exactly
 * once, whichever side gets there first, and no fiber is ever resumed while its registers
 * are still being saved.  A waiter is woken at most once per suspend because only the one
 * who claims its wait (jd_wait_claim) calls jd_fiber_wake.
 *
 * Thread-local storage.  A fiber resumes on the worker where it suspended: its resume
 * record goes to that worker's resume queue, which thieves do not touch.  The first
 * version let any worker resume it, and tests/pool/test_fiber.c caught what JLib warns
 * about: GCC computed errno's address once before a wait and used it after, so a fiber
 * that had moved read another thread's errno (6 wrong values in 1000 moving waits).
 * Tasks that hold nothing thread-derived across waits may opt back in to moving with
 * JD_TASK_MIGRATE.  Either way errno's value is saved before the switch and restored
 * after it (other tasks on the thread may have changed it meanwhile), each in a function
 * of its own, and the pool reads its own thread-local state only through jd_self()
 * (never inlined).
 *
 * Overflow.  A SIGSEGV handler, on a per-worker alternate signal stack, checks whether
 * the fault address lies in a guard page of a registered arena; if so it writes
 * "fiber stack overflow" with the task's function (symbol name when known), argument,
 * fiber and worker to stderr, restores the default action and returns, so the fault
 * repeats and the process dies of SIGSEGV as it would have.  Other faults go to the
 * handler that was installed before (sanitizers install one) or to the default.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

#define MAX_ARENAS 64

static _Atomic(struct jd_pool *) arenas[MAX_ARENAS];
static struct sigaction old_segv;
static pthread_mutex_t segv_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page_size;

static size_t round_page(size_t n)
{
	return (n + page_size - 1) / page_size * page_size;
}

int jd_fibers_init(struct jd_pool *p, const struct jd_pool_config *cfg)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	unsigned counts[2] = {cfg->fibers ? cfg->fibers : 64 * p->nworkers,
			      cfg->large_fibers ? cfg->large_fibers : 8 * p->nworkers};
	size_t stacks[2] = {cfg->fiber_stack ? cfg->fiber_stack : 64 * 1024,
			    cfg->large_fiber_stack ? cfg->large_fiber_stack : 512 * 1024};
	size_t total = 0;
	for (int c = 0; c < 2; c++) {
		if (stacks[c] < 16 * 1024 || stacks[c] > ((size_t)1 << 30))
			return JSCHED_EINVAL;
		struct jd_fiber_class *k = &p->fclass[c];
		atomic_init(&k->lock, 0);
		k->count = counts[c];
		k->stack = round_page(stacks[c]);
		k->stride = page_size + k->stack;
		total += (size_t)k->count * k->stride;
	}
	p->arena_size = total;
	p->arena = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			0);
	if (p->arena == MAP_FAILED) {
		p->arena = NULL;
		return JSCHED_ENOMEM;
	}
	char *at = p->arena;
	for (int c = 0; c < 2; c++) {
		struct jd_fiber_class *k = &p->fclass[c];
		k->lo = at;
		k->fibers = calloc(k->count ? k->count : 1, sizeof(*k->fibers));
		if (!k->fibers)
			return JSCHED_ENOMEM;
		k->free = NULL;
		for (unsigned i = k->count; i-- > 0;) {
			struct jd_fiber *f = &k->fibers[i];
			f->stack_lo = at + (size_t)i * k->stride + page_size;
			f->stack_size = k->stack;
			f->large = c == 1;
			atomic_init(&f->state, JD_FS_FREE);
			jd_cancel_init(&f->stop);
			f->resume.kind = JD_TK_RESUME;
			f->resume.arg = f;
			f->resume.fn = NULL;
			f->resume.wg = NULL;
			f->resume.flags = 0;
			if (mprotect(f->stack_lo, k->stack, PROT_READ | PROT_WRITE))
				return JSCHED_ENOMEM;
			f->next_free = k->free;
			k->free = f;
		}
		at += (size_t)k->count * k->stride;
	}
	if (cfg->fibers_dontfork && madvise(p->arena, p->arena_size, MADV_DONTFORK))
		return JSCHED_EINTERNAL;
	return 0;
}

void jd_fibers_fini(struct jd_pool *p)
{
	for (int c = 0; c < 2; c++) {
		struct jd_fiber_class *k = &p->fclass[c];
		if (!k->fibers)
			continue;
		for (unsigned i = 0; i < k->count; i++)
			jd_ctx_destroy(&k->fibers[i].ctx);
		free(k->fibers);
		k->fibers = NULL;
	}
	if (p->arena)
		munmap(p->arena, p->arena_size);
	p->arena = NULL;
}

struct jd_fiber *jd_fiber_acquire(struct jd_pool *p, bool large)
{
	/* Never a standard stack for a large task: the worker's own stack (where an
	 * exhausted fiber task runs) is bigger than either. */
	struct jd_fiber_class *k = &p->fclass[large ? 1 : 0];
	jd_spin_lock(&k->lock);
	struct jd_fiber *f = k->free;
	if (f)
		k->free = f->next_free;
	jd_spin_unlock(&k->lock);
	return f;
}

static void fiber_release(struct jd_pool *p, struct jd_fiber *f)
{
	struct jd_fiber_class *k = &p->fclass[f->large ? 1 : 0];
	atomic_store_explicit(&f->state, JD_FS_FREE, memory_order_relaxed);
	jd_spin_lock(&k->lock);
	f->next_free = k->free;
	k->free = f;
	jd_spin_unlock(&k->lock);
}

/* fiber_main: the first frame of every fiber: run the task, then hand the fiber back to
 * whichever worker runs it now (f->ret is re-read: it may have moved). */
static void fiber_main(void *arg)
{
	struct jd_fiber *f = arg;
	struct jd_task *t = f->task;
	t->fn(t->arg);
	atomic_store_explicit(&f->state, JD_FS_DEAD, memory_order_release);
	jd_ctx_switch_final(&f->ctx, f->ret);
}

void jd_fiber_start(struct jd_worker *w, struct jd_fiber *f, struct jd_task *t)
{
	f->task = t;
	f->starter = w;
	atomic_fetch_add_explicit(&w->fibers_in_use, 1, memory_order_relaxed);
	jd_ctx_make(&f->ctx, f->stack_lo, f->stack_size, fiber_main, f);
	atomic_store_explicit(&f->state, JD_FS_RUNNING, memory_order_relaxed);
	jd_fiber_run(w, f);
}

void jd_fiber_run(struct jd_worker *w, struct jd_fiber *f)
{
	/* Only ever called on the worker's own stack (never from inside a fiber), so the
	 * worker's one thread context is free to hold this stack while f runs. */
	for (;;) {
		f->ret = &w->thread_ctx;
		f->worker = w;
		w->cur_fiber = f;
		jd_ctx_switch(&w->thread_ctx, &f->ctx);
		w->cur_fiber = NULL;
		int s = atomic_load_explicit(&f->state, memory_order_acquire);
		if (s == JD_FS_DEAD) {
			struct jd_task *t = f->task;
			atomic_fetch_sub_explicit(&f->starter->fibers_in_use, 1,
						  memory_order_relaxed);
			f->task = NULL;
			fiber_release(w->pool, f);
			jd_task_complete(w, t);
			return;
		}
		int expect = JD_FS_WANTS_SUSPEND;
		if (atomic_compare_exchange_strong_explicit(&f->state, &expect, JD_FS_SUSPENDED,
							    memory_order_acq_rel,
							    memory_order_acquire))
			return; /* its waker will queue it */
		/* RESUME_PENDING: woken while it was switching out; run it again now. */
		atomic_store_explicit(&f->state, JD_FS_RUNNING, memory_order_relaxed);
	}
}

__attribute__((noinline)) static void save_errno(struct jd_fiber *f)
{
	f->saved_errno = errno;
}

__attribute__((noinline)) static void restore_errno(struct jd_fiber *f)
{
	errno = f->saved_errno;
}

void jd_fiber_suspend(struct jd_fiber *f)
{
	struct jd_worker *w = f->worker; /* counted where it suspended */
	save_errno(f);
	atomic_fetch_add_explicit(&w->fibers_suspended, 1, memory_order_relaxed);
	jd_ctx_switch(&f->ctx, f->ret);
	/* Resumed (on w, or anywhere for JD_TASK_MIGRATE). */
	atomic_fetch_sub_explicit(&w->fibers_suspended, 1, memory_order_relaxed);
	restore_errno(f);
}

void jd_fiber_wake(struct jd_fiber *f)
{
	int s = atomic_load_explicit(&f->state, memory_order_acquire);
	for (;;) {
		if (s == JD_FS_SUSPENDED) {
			if (atomic_compare_exchange_weak_explicit(&f->state, &s, JD_FS_RUNNING,
								  memory_order_acq_rel,
								  memory_order_acquire))
				break;
		} else if (s == JD_FS_WANTS_SUSPEND) {
			if (atomic_compare_exchange_weak_explicit(&f->state, &s,
								  JD_FS_RESUME_PENDING,
								  memory_order_acq_rel,
								  memory_order_acquire))
				return; /* its worker will see it */
		} else {
			fprintf(stderr, "jschedd: fatal: fiber %p woken in state %d\n", (void *)f,
				s);
			abort();
		}
	}
	/* It is switched out: queue its resume record.  A fiber lives on the worker where
	 * it suspended (its resume queue is not stealable), unless its task said
	 * JD_TASK_MIGRATE: then on this worker's own deque if the caller is a worker of
	 * the same pool (it will likely run it next), else on the inbox of the worker that
	 * ran it last, where any worker may take it. */
	struct jd_worker *last = f->worker;
	struct jd_pool *p = last->pool;
	if (!(f->task->flags & JD_TASK_MIGRATE)) {
		jd_push_resume(p, last, &f->resume);
		return;
	}
	struct jd_worker *me = jd_self();
	if (me && me->pool == p && jd_push_local(me, &f->resume) == 0)
		return;
	jd_push_inbox(p, last, &f->resume, &f->resume, 1);
}

/* ---- overflow reporting --------------------------------------------------------------- */

static void put_str(char *buf, size_t *at, size_t cap, const char *s)
{
	while (*s && *at + 1 < cap)
		buf[(*at)++] = *s++;
}

static void put_hex(char *buf, size_t *at, size_t cap, uintptr_t v)
{
	char tmp[2 + 16];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	put_str(buf, at, cap, "0x");
	while (n-- > 0 && *at + 1 < cap)
		buf[(*at)++] = tmp[n];
}

static void put_dec(char *buf, size_t *at, size_t cap, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n-- > 0 && *at + 1 < cap)
		buf[(*at)++] = tmp[n];
}

/* report: if addr is in a guard page of some pool's arena, write the report and return
 * true. */
static bool report(const char *addr)
{
	for (int i = 0; i < MAX_ARENAS; i++) {
		struct jd_pool *p = atomic_load_explicit(&arenas[i], memory_order_acquire);
		if (!p || addr < p->arena || addr >= p->arena + p->arena_size)
			continue;
		for (int c = 0; c < 2; c++) {
			struct jd_fiber_class *k = &p->fclass[c];
			if (addr < k->lo || addr >= k->lo + (size_t)k->count * k->stride)
				continue;
			size_t idx = (size_t)(addr - k->lo) / k->stride;
			if ((size_t)(addr - k->lo) % k->stride >= page_size)
				return false; /* inside a stack: not an overflow */
			struct jd_fiber *f = &k->fibers[idx];
			struct jd_task *t = f->task;
			char buf[512];
			size_t at = 0;
			put_str(buf, &at, sizeof(buf), "jschedd: fatal: fiber stack overflow: task ");
			if (t) {
				Dl_info info;
				put_hex(buf, &at, sizeof(buf), (uintptr_t)t->fn);
				if (dladdr((void *)(uintptr_t)t->fn, &info) && info.dli_sname) {
					put_str(buf, &at, sizeof(buf), " (");
					put_str(buf, &at, sizeof(buf), info.dli_sname);
					put_str(buf, &at, sizeof(buf), ")");
				}
				put_str(buf, &at, sizeof(buf), " arg ");
				put_hex(buf, &at, sizeof(buf), (uintptr_t)t->arg);
			} else {
				put_str(buf, &at, sizeof(buf), "(none)");
			}
			put_str(buf, &at, sizeof(buf), c ? ", large fiber " : ", fiber ");
			put_dec(buf, &at, sizeof(buf), idx);
			put_str(buf, &at, sizeof(buf), " (");
			put_dec(buf, &at, sizeof(buf), k->stack);
			put_str(buf, &at, sizeof(buf), "-byte stack), fault at ");
			put_hex(buf, &at, sizeof(buf), (uintptr_t)addr);
			put_str(buf, &at, sizeof(buf), "\n");
			ssize_t r = write(2, buf, at);
			(void)r;
			return true;
		}
	}
	return false;
}

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	if (report(si->si_addr) || old_segv.sa_handler == SIG_DFL ||
	    old_segv.sa_handler == SIG_IGN) {
		/* Die of the fault as the program would have: the default action, and the
		 * faulting instruction runs again when we return. */
		signal(sig, SIG_DFL);
		errno = saved;
		return;
	}
	errno = saved;
	if (old_segv.sa_flags & SA_SIGINFO)
		old_segv.sa_sigaction(sig, si, uc);
	else
		old_segv.sa_handler(sig);
}

static void install_segv(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = segv_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
}

void jd_overflow_register(struct jd_pool *p)
{
	/* (Re)install if someone replaced the handler since (a test framework, a
	 * sanitizer runtime initialised late): ours chains to whatever it replaces. */
	pthread_mutex_lock(&segv_lock);
	struct sigaction cur;
	if (sigaction(SIGSEGV, NULL, &cur) == 0 &&
	    (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != segv_handler))
		install_segv();
	pthread_mutex_unlock(&segv_lock);
	for (int i = 0; i < MAX_ARENAS; i++) {
		struct jd_pool *none = NULL;
		if (atomic_compare_exchange_strong(&arenas[i], &none, p))
			return;
	}
	/* More than MAX_ARENAS pools at once: overflows of this one are bare SIGSEGVs. */
}

void jd_overflow_unregister(struct jd_pool *p)
{
	for (int i = 0; i < MAX_ARENAS; i++) {
		struct jd_pool *me = p;
		if (atomic_compare_exchange_strong(&arenas[i], &me, NULL))
			return;
	}
}

int jd_altstack_init(void **mem)
{
	size_t size = 64 * 1024;
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		*mem = NULL;
		return JSCHED_ENOMEM;
	}
	stack_t ss = {.ss_sp = m, .ss_size = size, .ss_flags = 0};
	if (sigaltstack(&ss, NULL)) {
		munmap(m, size);
		*mem = NULL;
		return JSCHED_EINTERNAL;
	}
	*mem = m;
	return 0;
}

void jd_altstack_fini(void *mem)
{
	if (!mem)
		return;
	stack_t ss = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
	sigaltstack(&ss, NULL);
	munmap(mem, 64 * 1024);
}
