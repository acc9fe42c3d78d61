/*
 * source_fault.c — source plugins that deliver events wrongly, one way
 * per -D: each gives three good events, then its fault, which reef must
 * report (file, what was wrong) after printing the three.
 *   SRC_TYPE   a string for a u8 field      SRC_RANGE  300 for a u8 field
 *   SRC_ORDER  a time before the previous   SRC_COUNT  a value missing
 *   SRC_OLD    a source description of the size before sources existed
 *   SRC_FAIL   read() itself fails with its message
 * It claims files that start with "SRCFAULT".
 */
#include <stddef.h>
#include <string.h>

#include "reef_plugin.h"

static int detect(const char *path, const uint8_t *head, size_t len)
{
	(void)path;
	return len >= 8 && memcmp(head, "SRCFAULT", 8) == 0;
}

static const char *error(void *state)
{
	(void)state;
	return "the log's index is missing";
}

static reef_status read_it(void *state, const char *path, reef_source *out)
{
	(void)state;
	(void)path;
	static const reef_source_field f[] = { { "level", REEF_TYPE_U8 },
						 { "text", REEF_TYPE_STRING } };
	uint32_t cls, st;
	if (reef_source_class(out, "line", f, 2, &cls) != REEF_OK ||
	    reef_source_stream(out, "main", &st) != REEF_OK)
		return REEF_ERR_INTERNAL;
	for (uint64_t i = 0; i < 3; i++) {
		reef_source_begin(out, st, cls, 1000 + i);
		reef_source_uint(out, i);
		reef_source_string(out, "fine", 4);
		reef_source_end(out);
	}
	reef_source_offset(out, 77);
	reef_source_begin(out, st, cls, 2000);
#if defined SRC_TYPE
	reef_source_string(out, "high", 4);
#elif defined SRC_RANGE
	reef_source_uint(out, 300);
#elif defined SRC_ORDER
	reef_source_uint(out, 1);
	reef_source_string(out, "ok", 2);
	reef_source_end(out);
	reef_source_begin(out, st, cls, 5);
	reef_source_uint(out, 1);
#elif defined SRC_FAIL
	return REEF_ERR_READ;
#else
	reef_source_uint(out, 1);
#endif
#ifndef SRC_COUNT
	reef_source_string(out, "late", 4);
#endif
	return reef_source_end(out) == REEF_OK ? REEF_OK : REEF_ERR_ARG;
}

static const reef_plugin plugin = {
	.abi = REEF_PLUGIN_ABI,
#ifdef SRC_OLD
	.size = offsetof(reef_plugin, detect),
#else
	.size = sizeof(reef_plugin),
#endif
	.name = "srcfault",
	.version = "0.1.0",
	.description = "a source that goes wrong",
	.kinds = REEF_PLUGIN_SOURCE,
	.error = error,
	.detect = detect,
	.read = read_it,
};

const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
