/* daemon/core/diskcpu.c: the CPU that takes a disk's completion interrupts (diskcpu.h). */
#include "daemon/core/diskcpu.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

enum { MAX_IRQS = 64 };

struct irq {
	unsigned n;
	uint64_t count;		/* from /proc/interrupts, over every CPU */
	int cpu;		/* its one CPU, or -1 (several, or unreadable) */
	char name[48];
};

/* none: -1, with why filled. */
__attribute__((format(printf, 3, 4))) static int none(char *why, size_t len, const char *fmt,
						      ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* read_cpu: the CPU list in file (effective_affinity_list) if it names one CPU, else
 * -1. */
static int read_cpu(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[64], *end;
	long v;

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	v = strtol(line, &end, 10);
	if (end == line || v < 0 || v > INT_MAX || (*end && *end != '\n'))
		return -1; /* empty, or a list or range: several CPUs */
	return (int)v;
}

/* find_counts: each irq's count and name, from the interrupts file. */
static void find_counts(const char *file, struct irq *irqs, size_t n)
{
	FILE *f = fopen(file, "r");
	char line[4096];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		unsigned long num = strtoul(p, &end, 10);
		uint64_t sum = 0;
		size_t i;

		if (end == p || *end != ':')
			continue;
		for (i = 0; i < n && irqs[i].n != num; i++)
			;
		if (i == n)
			continue;
		p = end + 1;
		for (;;) {
			unsigned long long c;

			while (*p == ' ' || *p == '\t')
				p++;
			if (!isdigit((unsigned char)*p))
				break;
			c = strtoull(p, &end, 10);
			sum += c;
			p = end;
		}
		irqs[i].count = sum;
		/* the name is the line's last word */
		end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = 0;
		while (end > p && !isspace((unsigned char)end[-1]))
			end--;
		snprintf(irqs[i].name, sizeof(irqs[i].name), "%s", end);
	}
	fclose(f);
}

int jd_disk_irq_cpu_at(dev_t dev, const char *sys, const char *proc, char *why,
		       size_t whylen)
{
	char link[PATH_MAX], path[PATH_MAX], dir[PATH_MAX + 16], file[PATH_MAX];
	struct irq irqs[MAX_IRQS];
	size_t n = 0, sys_len = strlen(sys), used = 0;
	uint64_t max = 0;
	int cpu = -1;
	struct dirent *e;
	DIR *d = NULL;
	char *slash;

	if (major(dev) == 0)
		return none(why, whylen, "%s", "not on a block device");
	snprintf(link, sizeof(link), "%s/dev/block/%u:%u", sys, major(dev), minor(dev));
	if (!realpath(link, path))
		return none(why, whylen, "no %s", link);
	/* Up from the disk (or its partition) to the function whose interrupts it uses. */
	while (strlen(path) > sys_len) {
		snprintf(dir, sizeof(dir), "%s/msi_irqs", path);
		if ((d = opendir(dir)))
			break;
		if (!(slash = strrchr(path, '/')))
			break;
		*slash = 0;
	}
	if (!d)
		return none(why, whylen, "no MSI interrupts above %s", link);
	while ((e = readdir(d)) && n < MAX_IRQS) {
		char *end;
		unsigned long v = strtoul(e->d_name, &end, 10);

		if (end == e->d_name || *end)
			continue;
		irqs[n].n = (unsigned)v;
		irqs[n].count = 0;
		irqs[n].name[0] = 0;
		snprintf(file, sizeof(file), "%s/irq/%lu/effective_affinity_list", proc, v);
		irqs[n].cpu = read_cpu(file);
		n++;
	}
	closedir(d);
	snprintf(file, sizeof(file), "%s/interrupts", proc);
	find_counts(file, irqs, n);
	for (size_t i = 0; i < n; i++)
		if (irqs[i].count > max)
			max = irqs[i].count;
	if (max == 0)
		return none(why, whylen, "no interrupts counted for %s", path);
	for (size_t i = 0; i < n; i++) {
		if (irqs[i].count * 16 < max)
			continue; /* a configuration interrupt, not the traffic's */
		if (irqs[i].cpu < 0 || (cpu >= 0 && irqs[i].cpu != cpu))
			return none(why, whylen, "the interrupts of %s go to several CPUs", path);
		cpu = irqs[i].cpu;
		used = i;
	}
	if (why && whylen)
		snprintf(why, whylen, "interrupt %u (%s) on CPU %d", irqs[used].n,
			 irqs[used].name[0] ? irqs[used].name : "?", cpu);
	return cpu;
}

int jd_disk_irq_cpu(const char *path, char *why, size_t whylen)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s", path);
	while (stat(p, &st) < 0) { /* not made yet: the disk of the parent that exists */
		char *slash = strrchr(p, '/');

		if (!slash || !p[1])
			return none(why, whylen, "cannot stat %s", path);
		slash[slash == p] = 0; /* "/a" goes up to "/" */
	}
	return jd_disk_irq_cpu_at(st.st_dev, "/sys", "/proc", why, whylen);
}
