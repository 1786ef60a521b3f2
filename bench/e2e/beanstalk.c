/* bench/e2e/beanstalk.c: beanstalkd as the baseline job server, and the tiny client and
 * worker that speak its text protocol (beanstalkd's doc/protocol.txt) over TCP loopback.
 *
 * beanstalkd is what a user who wants "a queue of small jobs and some workers" installs
 * from Debian.  It has no notion of running a job: a producer puts a job into a tube, a
 * worker process reserves it, does the work, and deletes it.  To compare a round trip with
 * jschedd's "submit and learn the result", the worker here also puts a reply into a second
 * tube that the client reserves: put -> reserve -> delete -> reply.
 *
 * The client is written for the benchmark, not as a library: blocking I/O, TCP_NODELAY (a
 * request is one small write, and Nagle's delay would measure the kernel, not the server),
 * one read buffer, and every error fatal. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

/* A port the kernel picks as free on 127.0.0.1.  Another program may take it before
 * beanstalkd binds it; then beanstalkd exits and the start fails with a message. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		e2e_die("cannot find a free port: %s", strerror(errno));
	close(fd);
	return ntohs(a.sin_port);
}

static int try_connect(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

void e2e_beanstalkd_start(struct e2e_beanstalkd *b)
{
	e2e_beanstalkd_start_binlog(b, NULL, 0);
}

void e2e_beanstalkd_start_binlog(struct e2e_beanstalkd *b, const char *dir, int fsync_ms)
{
	char port[16], f[16];

	b->port = free_port();
	snprintf(port, sizeof(port), "%d", b->port);
	snprintf(f, sizeof(f), "%d", fsync_ms);
	char *argv[] = {(char *)(uintptr_t)"/usr/bin/beanstalkd", (char *)(uintptr_t)"-l",
			(char *)(uintptr_t)"127.0.0.1", (char *)(uintptr_t)"-p", port,
			dir ? (char *)(uintptr_t)"-b" : NULL, (char *)(uintptr_t)dir,
			(char *)(uintptr_t)"-f", f, NULL};
	b->pid = e2e_spawn_server(argv, NULL);
	for (int i = 0; i < 1000; i++) {
		int status, fd = try_connect(b->port);

		if (fd >= 0) {
			close(fd);
			return;
		}
		if (waitpid(b->pid, &status, WNOHANG) == b->pid)
			e2e_die("beanstalkd exited at start on port %d (status 0x%x)", b->port, (unsigned)status);
		e2e_sleep_ms(10);
	}
	e2e_die("beanstalkd did not accept a connection within 10 s");
}

void e2e_beanstalkd_stop(struct e2e_beanstalkd *b)
{
	int status;

	kill(b->pid, SIGTERM);
	waitpid(b->pid, &status, 0);
	e2e_untrack(b->pid);
}

void bs_connect(struct bs_conn *c, int port)
{
	c->fd = try_connect(port);
	c->len = c->off = 0;
	if (c->fd < 0)
		e2e_die("cannot connect to beanstalkd on port %d: %s", port, strerror(errno));
}

void bs_close(struct bs_conn *c)
{
	close(c->fd);
	c->fd = -1;
}

void bs_send(struct bs_conn *c, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(c->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			e2e_die("beanstalkd: write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* Make at least `want` unread bytes available in the buffer (want <= its size). */
static void fill(struct bs_conn *c, size_t want)
{
	if (c->off > 0 && c->len - c->off < want) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	while (c->len - c->off < want) {
		ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			e2e_die("beanstalkd: read: %s", n == 0 ? "connection closed" : strerror(errno));
		c->len += (size_t)n;
	}
}

void bs_line(struct bs_conn *c, char *line, size_t size)
{
	for (;;) {
		char *start = c->buf + c->off;
		char *nl = memchr(start, '\n', c->len - c->off);

		if (nl) {
			size_t n = (size_t)(nl - start);
			size_t keep = n > 0 && start[n - 1] == '\r' ? n - 1 : n;

			if (keep >= size)
				keep = size - 1;
			memcpy(line, start, keep);
			line[keep] = '\0';
			c->off += n + 1;
			return;
		}
		if (c->len - c->off >= sizeof(c->buf) - 1)
			e2e_die("beanstalkd: reply line too long");
		fill(c, c->len - c->off + 1);
	}
}

void bs_cmd(struct bs_conn *c, const char *cmd, const char *expect, char *line, size_t size)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "%s\r\n", cmd);

	bs_send(c, buf, (size_t)n);
	bs_line(c, line, size);
	if (strncmp(line, expect, strlen(expect)) != 0)
		e2e_die("beanstalkd: '%s' answered '%s'", cmd, line);
}

uint64_t bs_put(struct bs_conn *c, const char *body, size_t len)
{
	char buf[256], line[64];
	uint64_t id;

	if (len > sizeof(buf) - 64)
		e2e_die("beanstalkd: body too long for bs_put");
	int n = snprintf(buf, sizeof(buf), "put 1024 0 60 %zu\r\n", len);
	memcpy(buf + n, body, len);
	memcpy(buf + (size_t)n + len, "\r\n", 2);
	bs_send(c, buf, (size_t)n + len + 2);
	bs_line(c, line, sizeof(line));
	if (sscanf(line, "INSERTED %" SCNu64, &id) != 1)
		e2e_die("beanstalkd: put answered '%s'", line);
	return id;
}

uint64_t bs_reserve(struct bs_conn *c, char *body, size_t size)
{
	char line[128];
	uint64_t id;
	size_t len;

	bs_send(c, "reserve\r\n", 9);
	bs_line(c, line, sizeof(line));
	if (sscanf(line, "RESERVED %" SCNu64 " %zu", &id, &len) != 2)
		e2e_die("beanstalkd: reserve answered '%s'", line);
	if (len + 2 > sizeof(c->buf) / 2)
		e2e_die("beanstalkd: job body of %zu bytes is too long here", len);
	fill(c, len + 2);
	size_t keep = len < size ? len : size - 1;
	memcpy(body, c->buf + c->off, keep);
	body[keep] = '\0';
	c->off += len + 2;
	return id;
}

void bs_delete(struct bs_conn *c, uint64_t id)
{
	char cmd[64], line[64];

	snprintf(cmd, sizeof(cmd), "delete %" PRIu64, id);
	bs_cmd(c, cmd, "DELETED", line, sizeof(line));
}

void bs_worker(int port, bool reply)
{
	struct bs_conn *c = malloc(sizeof(*c));
	char line[64], body[256];

	if (!c)
		e2e_die("out of memory");
	bs_connect(c, port);
	bs_cmd(c, "watch jobs", "WATCHING", line, sizeof(line));
	bs_cmd(c, "ignore default", "WATCHING", line, sizeof(line));
	if (reply)
		bs_cmd(c, "use replies", "USING", line, sizeof(line));
	for (;;) {
		uint64_t id = bs_reserve(c, body, sizeof(body));

		bs_delete(c, id);
		if (strcmp(body, "q") == 0)
			break;
		if (reply)
			bs_put(c, body, strlen(body));
	}
	bs_close(c);
	free(c);
	_exit(0);
}
