/* top.c: `jsched top`, the live view of the daemon.
 *
 * On a terminal it is a curses program: every interval (or key) it fetches the metrics
 * document and a page of the running and queued jobs, lays the screen out again and lets
 * curses send only the cells that changed (erase, draw, refresh: curses keeps the screen
 * it sent and writes the difference).  Every line is cut at the screen's width, so
 * nothing wraps, down to 80x24; a resize (KEY_RESIZE) lays it out for the new size.
 * Views: jobs (the clients beside the jobs, running then queued), clients (every column),
 * workers (latencies and workers).  The tables are made by libsmartcols at the width of
 * their panel, and the panel draws its lines.
 *
 * Off a terminal, or with --once / -n, it prints the metrics view once per interval, for
 * scripts and logs.
 */
#include "libclient/tool/tool.h"

#include <curses.h>

#include "libclient/tool/lazy_curses.h" /* ncurses, loaded when top starts drawing */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum view { VIEW_JOBS, VIEW_CLIENTS, VIEW_WORKERS, VIEW_COUNT };
static const char *const view_names[VIEW_COUNT] = { "jobs", "clients", "workers" };

/* The clients' sort keys (s cycles through them). */
enum csort { SORT_NAME, SORT_QUEUED, SORT_RUNNING, SORT_SHARE, SORT_COUNT };
static const char *const sort_names[SORT_COUNT] = { "name", "queued", "running", "share" };

struct top {
	struct jsched_conn *conn;
	const struct cli_cmd *cmd;
	enum view view;
	enum csort sort;
	bool admin; /* list every uid's jobs */
	json_t *m;  /* the last metrics document */
	json_t *running, *queued; /* arrays of records (a page of each) */
	char error[256]; /* the last failure, shown on the status line */
};

static double numv(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_number(v) ? json_number_value(v) : 0;
}

/* The queued count of a client entry (all priorities). */
static double queued_of(const json_t *cl)
{
	const json_t *q = json_object_get(cl, "queued");
	return numv(q, "critical") + numv(q, "high") + numv(q, "normal") + numv(q, "low");
}

static enum csort sort_key;

static int cmp_clients(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *nx = json_string_value(json_object_get(x, "name")), *ny = json_string_value(json_object_get(y, "name"));
	double kx = 0, ky = 0;
	switch (sort_key) {
	case SORT_QUEUED: kx = queued_of(x), ky = queued_of(y); break;
	case SORT_RUNNING: kx = numv(x, "running"), ky = numv(y, "running"); break;
	case SORT_SHARE: kx = numv(x, "share"), ky = numv(y, "share"); break;
	default: break;
	}
	if (kx != ky)
		return kx < ky ? 1 : -1; /* largest first */
	return strcmp(nx != NULL ? nx : "", ny != NULL ? ny : "");
}

/* Sort the document's clients array in place by the chosen key. */
static void sort_clients(json_t *m, enum csort key)
{
	json_t *arr = json_object_get(m, "clients");
	size_t n = json_array_size(arr);
	json_t **v = n > 0 ? malloc(n * sizeof *v) : NULL;
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	sort_key = key;
	qsort(v, n, sizeof *v, cmp_clients);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

/* One page of the jobs in a state (the first `limit`, oldest first): the records of a
 * list reply (new), or NULL.  One page is what fits on the screen; the rest is counted in
 * the header from the metrics. */
static json_t *list_page(struct top *t, const char *state, int limit)
{
	char req[160], *reply = NULL;
	snprintf(req, sizeof req, "{\"op\":\"list\",\"states\":[\"%s\"],\"limit\":%d%s}", state, limit > 0 ? limit : 1,
		 t->admin ? ",\"all\":true" : "");
	if (jsched_request(t->conn, req, &reply) < 0)
		return NULL;
	json_t *v = json_loads(reply, 0, NULL);
	jsched_free(reply);
	json_t *jobs = json_incref(json_object_get(v, "jobs"));
	json_decref(v);
	return jobs;
}

/* Fetch what the screen shows; false (t->error set) when the daemon is gone. */
static bool refresh_data(struct top *t, int rows)
{
	int rc = 0;
	json_t *m = tool_fetch_metrics(t->conn, t->cmd, &rc);
	if (m == NULL) {
		snprintf(t->error, sizeof t->error, "%s", jsched_error_message(t->conn));
		return false;
	}
	json_decref(t->m);
	t->m = m;
	sort_clients(t->m, t->sort);
	json_decref(t->running);
	json_decref(t->queued);
	t->running = t->queued = NULL;
	if (t->view == VIEW_JOBS) {
		t->running = list_page(t, "running", rows);
		int left = rows - (int)json_array_size(t->running);
		t->queued = left > 0 ? list_page(t, "queued", left) : NULL;
	}
	t->error[0] = '\0';
	return true;
}

/* Draw text at (y, x), cut at `width` cells (and the screen's edge): nothing wraps. */
static void put(int y, int x, int width, const char *text)
{
	if (y < 0 || y >= LINES || x >= COLS || width <= 0)
		return;
	if (x + width > COLS)
		width = COLS - x;
	mvaddnstr(y, x, text, width);
}

/* Draw a libsmartcols table in the panel (y, x, width, height): the table is laid out for
 * the panel's width, and lines past its height are dropped.  Frees tb. */
static void put_table(struct libscols_table *tb, int y, int x, int width, int height)
{
	char *text = NULL;
	scols_table_set_termforce(tb, SCOLS_TERMFORCE_ALWAYS);
	scols_table_set_termwidth(tb, (size_t)(width > 0 ? width : 1));
	if (scols_print_table_to_string(tb, &text) == 0 && text != NULL) {
		int line = 0;
		for (char *s = text; *s != '\0' && line < height; line++) {
			size_t len = strcspn(s, "\n");
			char save = s[len];
			s[len] = '\0';
			if (line == 0)
				attron(A_BOLD);
			put(y + line, x, width, s);
			if (line == 0)
				attroff(A_BOLD);
			s[len] = save;
			s += len + (save != '\0');
		}
	}
	free(text);
	scols_unref_table(tb);
}

/* A table with these titles (NULL-terminated; the truncated columns are those in trunc). */
static struct libscols_table *table_of(const char *const *titles, const char *trunc)
{
	struct libscols_table *tb = scols_new_table();
	for (size_t i = 0; tb != NULL && titles[i] != NULL; i++) {
		bool cut = strstr(trunc, titles[i]) != NULL;
		scols_table_new_column(tb, titles[i], cut ? 0.3 : 1, cut ? SCOLS_FL_TRUNC : (i > 0 ? SCOLS_FL_RIGHT : 0));
	}
	return tb;
}

static void add_row(struct libscols_table *tb, const char *const *cells)
{
	struct libscols_line *ln = tb != NULL ? scols_table_new_line(tb, NULL) : NULL;
	for (size_t i = 0; ln != NULL && cells[i] != NULL; i++)
		scols_line_set_data(ln, i, cells[i]);
}

/* The narrow clients table of the jobs view. */
static struct libscols_table *clients_narrow(const json_t *m)
{
	static const char *const titles[] = { "CLIENT", "W", "QUEUED", "RUN", "SHARE", NULL };
	struct libscols_table *tb = table_of(titles, "CLIENT");
	size_t i;
	const json_t *cl;
	json_array_foreach(json_object_get(m, "clients"), i, cl) {
		char w[32], q[32], r[32], sh[32];
		snprintf(w, sizeof w, "%.0f", numv(cl, "weight"));
		tool_count(q, sizeof q, queued_of(cl));
		tool_count(r, sizeof r, numv(cl, "running"));
		snprintf(sh, sizeof sh, "%.2f", numv(cl, "share"));
		const char *name = json_string_value(json_object_get(cl, "name"));
		const char *cells[] = { name != NULL ? name : "?", w, q, r, sh, NULL };
		add_row(tb, cells);
	}
	return tb;
}

/* The job list: running, then queued. */
static struct libscols_table *jobs_table(const struct top *t)
{
	static const char *const titles[] = { "ID", "STATE", "CLIENT", "AGE", "COMMAND", NULL };
	struct libscols_table *tb = table_of(titles, "COMMAND CLIENT");
	int64_t now = tool_now_ms();
	const json_t *lists[] = { t->running, t->queued };
	for (size_t k = 0; k < 2; k++) {
		size_t i;
		const json_t *r;
		json_array_foreach(lists[k], i, r) {
			char id[32], age[32], what[300];
			snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(r, "job")));
			double since = numv(r, "started_ms") > 0 ? numv(r, "started_ms") : numv(r, "submitted_ms");
			tool_duration(age, sizeof age, now - (int64_t)since);
			const char *command = json_string_value(json_object_get(r, "command"));
			const char *fn = json_string_value(json_object_get(r, "fn"));
			if (command != NULL)
				snprintf(what, sizeof what, "%s", command);
			else
				snprintf(what, sizeof what, "--fn %s", fn != NULL ? fn : "?");
			const char *state = json_string_value(json_object_get(r, "state"));
			const char *client = json_string_value(json_object_get(r, "client"));
			const char *cells[] = { id, state != NULL ? state : "?", client != NULL ? client : "-", age, what,
						NULL };
			add_row(tb, cells);
		}
	}
	return tb;
}

static struct libscols_table *clients_wide(const json_t *m)
{
	struct libscols_table *tb = table_of(tool_client_titles, "CLIENT");
	if (tb != NULL)
		tool_fill_clients(tb, m);
	return tb;
}

static struct libscols_table *workers_table(const json_t *m)
{
	static const char *const titles[] = { "WORKER", "TASKS", "STEALS", "PARKS", "BUSY", "FIBERS", NULL };
	struct libscols_table *tb = table_of(titles, "");
	size_t i;
	const json_t *w;
	json_array_foreach(json_object_get(m, "workers"), i, w) {
		char id[32], a[32], b[32], c[32], d[32], e[32];
		snprintf(id, sizeof id, "%zu", i);
		tool_count(a, sizeof a, numv(w, "tasks"));
		tool_count(b, sizeof b, numv(w, "steals"));
		tool_count(c, sizeof c, numv(w, "parks"));
		tool_duration(d, sizeof d, (int64_t)numv(w, "busy_ms"));
		tool_count(e, sizeof e, numv(w, "fibers_in_use"));
		const char *cells[] = { id, a, b, c, d, e, NULL };
		add_row(tb, cells);
	}
	return tb;
}

static struct libscols_table *latency_table(const json_t *m)
{
	static const char *const titles[] = { "LATENCY", "P50", "P90", "P99", "MAX", "COUNT", "P50 1M",
					      "P99 1M", "P99 5M", NULL };
	struct libscols_table *tb = table_of(titles, "");
	static const char *const kinds[] = { "queue_wait", "run", "end_to_end", NULL };
	const json_t *lat = json_object_get(m, "latency_us");
	const json_t *l1 = json_object_get(m, "latency_us_1m"), *l5 = json_object_get(m, "latency_us_5m");
	for (size_t i = 0; kinds[i] != NULL; i++) {
		const json_t *h = json_object_get(lat, kinds[i]);
		const json_t *h1 = json_object_get(l1, kinds[i]), *h5 = json_object_get(l5, kinds[i]);
		char a[32], b[32], c[32], d[32], e[32], f[32], g[32], k[32];
		const char *cells[] = { kinds[i], tool_us(a, sizeof a, numv(h, "p50")), tool_us(b, sizeof b, numv(h, "p90")),
					tool_us(c, sizeof c, numv(h, "p99")), tool_us(d, sizeof d, numv(h, "max")),
					tool_count(e, sizeof e, numv(h, "count")), tool_us(f, sizeof f, numv(h1, "p50")),
					tool_us(g, sizeof g, numv(h1, "p99")), tool_us(k, sizeof k, numv(h5, "p99")), NULL };
		add_row(tb, cells);
	}
	return tb;
}

/* Lay the whole screen out from the data in t. */
static void draw(const struct top *t)
{
	erase();
	char line[512], when[16], up[32], a[32], b[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(when, sizeof when, "%H:%M:%S", localtime_r(&now, &tm));
	const char *version = json_string_value(json_object_get(t->m, "version"));
	snprintf(line, sizeof line, "jsched top  %s  up %s  %s", when, tool_uptime(up, sizeof up, t->m),
		 version != NULL ? version : "jschedd");
	attron(A_BOLD);
	put(0, 0, COLS, line);
	attroff(A_BOLD);
	const json_t *jobs = json_object_get(t->m, "jobs"), *tp = json_object_get(t->m, "throughput");
	const json_t *e2e = json_object_get(json_object_get(t->m, "latency_us"), "end_to_end");
	snprintf(line, sizeof line, "jobs %.0f running, %.0f queued, %.0f waiting, %.0f scheduled; %.0f ok, "
		 "%.0f failed; %s/s; e2e p99 %s",
		 numv(jobs, "running"), numv(jobs, "queued"), numv(jobs, "waiting"), numv(jobs, "scheduled"),
		 numv(jobs, "succeeded"),
		 numv(jobs, "failed"), tool_count(a, sizeof a, numv(tp, "1s")), tool_us(b, sizeof b, numv(e2e, "p99")));
	put(1, 0, COLS, line);
	int body = 3, height = LINES - body - 1;
	switch (t->view) {
	case VIEW_JOBS: {
		int left = COLS >= 100 ? 44 : COLS * 2 / 5;
		put_table(clients_narrow(t->m), body, 0, left - 1, height);
		put_table(jobs_table(t), body, left, COLS - left, height);
		break;
	}
	case VIEW_CLIENTS:
		put_table(clients_wide(t->m), body, 0, COLS, height);
		break;
	default:
		put_table(latency_table(t->m), body, 0, COLS, 5);
		put_table(workers_table(t->m), body + 5, 0, COLS, height - 5);
		break;
	}
	snprintf(line, sizeof line, "%s%sview %s (j c w, tab)  sort %s (s)  q quits", t->error,
		 t->error[0] != '\0' ? "  " : "", view_names[t->view], sort_names[t->sort]);
	attron(A_REVERSE);
	put(LINES - 1, 0, COLS, line);
	attroff(A_REVERSE);
	refresh();
}

/* The interactive loop; returns the exit status. */
static int interactive(struct top *t)
{
	if (initscr() == NULL)
		return CLI_EXIT_FAILED;
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	int rc = CLI_EXIT_OK;
	bool fetch = true;
	for (;;) {
		if (fetch && !refresh_data(t, LINES - 5) && t->m == NULL) {
			rc = CLI_EXIT_UNAVAILABLE;
			break;
		}
		if (t->m != NULL)
			draw(t);
		timeout((int)t->cmd->interval_ms);
		int key = getch();
		fetch = true;
		if (key == 'q' || key == 'Q')
			break;
		switch (key) {
		case '\t': t->view = (enum view)((t->view + 1) % VIEW_COUNT); break;
		case 'j': t->view = VIEW_JOBS; break;
		case 'c': t->view = VIEW_CLIENTS; break;
		case 'w': t->view = VIEW_WORKERS; break;
		case 's':
			t->sort = (enum csort)((t->sort + 1) % SORT_COUNT);
			sort_clients(t->m, t->sort);
			fetch = false; /* re-sort what is there: no round trip */
			break;
		case KEY_RESIZE: fetch = false; break; /* lay out again at the new size */
		default: break;	/* ERR (the interval passed), space, anything else: fetch */
		}
	}
	endwin();
	if (rc != CLI_EXIT_OK)
		fprintf(stderr, "jsched top: %s\n", t->error);
	return rc;
}

/* cmd_top: see tool.h. */
int cmd_top(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct top t = { .conn = conn, .cmd = cmd };
	const char *hello = jsched_hello_json(conn);
	json_t *h = hello != NULL ? json_loads(hello, 0, NULL) : NULL;
	t.admin = json_is_true(json_object_get(json_object_get(h, "identity"), "admin"));
	json_decref(h);
	int rc = CLI_EXIT_OK;
	if (cmd->count == 0 && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
		rc = interactive(&t);
	} else {
		for (long n = 0; cmd->count == 0 || n < cmd->count; n++) {
			if (n > 0) {
				struct timespec ts = { .tv_sec = cmd->interval_ms / 1000,
						       .tv_nsec = (long)(cmd->interval_ms % 1000) * 1000000 };
				while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
					;
				putchar('\n');
			}
			struct cli_cmd once = *cmd;
			once.json = false;
			printf("jsched top  (every %.1f s, client %s)\n", (double)cmd->interval_ms / 1000.0,
			       jsched_client_name(conn) != NULL ? jsched_client_name(conn) : "?");
			fflush(stdout);
			rc = cmd_metrics(conn, &once);
			fflush(stdout);
			if (rc != CLI_EXIT_OK)
				return rc;
		}
	}
	json_decref(t.m);
	json_decref(t.running);
	json_decref(t.queued);
	return rc;
}
