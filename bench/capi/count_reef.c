/* bench/capi/count_reef.c — counts the events of each name and sums the
 * integer field FIELD, through libreef_reader's C API. Prints
 * "NAME COUNT" lines sorted by name, then "sum FIELD SUM".
 *
 *   count_reef FIELD TRACE... */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reef_reader.h>

struct name_count {
	const char *name;
	uint64_t n;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct name_count *)a)->name, ((const struct name_count *)b)->name);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: count_reef FIELD TRACE...\n");
		return 2;
	}
	reef_reader *r;
	if (reef_reader_open((const char *const *)argv + 2, (size_t)argc - 2, NULL, &r) != REEF_OK) {
		fprintf(stderr, "%s\n", reef_error_message());
		return 1;
	}
	/* Event names are stable pointers: counted by pointer. */
	struct name_count names[4096];
	size_t nnames = 0;
	uint64_t sum = 0;
	reef_message_kind kind;
	reef_status st;
	while ((st = reef_reader_next(r, &kind)) == REEF_OK) {
		if (kind != REEF_MESSAGE_EVENT)
			continue;
		const char *name;
		reef_event_name(r, &name);
		size_t i = 0;
		while (i < nnames && names[i].name != name)
			i++;
		if (i == nnames) {
			if (nnames == 4096)
				return 3;
			names[nnames++] = (struct name_count){name, 0};
		}
		names[i].n++;
		uint64_t v;
		if (reef_event_uint(r, argv[1], &v) == REEF_OK)
			sum += v;
	}
	if (st != REEF_END) {
		fprintf(stderr, "%s\n", reef_error_message());
		return 1;
	}
	qsort(names, nnames, sizeof names[0], by_name);
	for (size_t i = 0; i < nnames; i++)
		printf("%s %" PRIu64 "\n", names[i].name, names[i].n);
	printf("sum %s %" PRIu64 "\n", argv[1], sum);
	reef_reader_close(r);
	return 0;
}
