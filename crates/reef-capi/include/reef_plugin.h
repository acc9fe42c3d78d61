/*
 * reef_plugin.h — writing a reef plugin in C: a source, a filter, a sink
 * or an analysis that every reef front end loads (docs/plugins.md).
 *
 * A plugin is a shared object that exports one function,
 * reef_plugin_describe(), returning a static description of what it does.
 * It reads each event with the functions of reef_reader.h, given a handle
 * on the host's current message: the host (the reef command) provides
 * those functions itself, so build the plugin without linking anything:
 *
 *     cc -shared -fPIC -O2 -I$(reef_include) my_plugin.c -o my_plugin.so
 *
 * A plugin runs inside reef's process: a plugin that crashes takes reef
 * with it. Everything else it does wrong — a wrong ABI version, a missing
 * function, a failing status, malformed results — is reported by reef
 * with the plugin's name and a non-zero exit.
 */
#ifndef REEF_PLUGIN_H
#define REEF_PLUGIN_H

#include "reef_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface. A host loads plugins built for its own
 * version and refuses others, saying which version each side has. */
#define REEF_PLUGIN_ABI 1

/* What a plugin does (reef_plugin.kinds, any combination). */
#define REEF_PLUGIN_FILTER 1u   /* keeps or drops events: `filter` */
#define REEF_PLUGIN_SINK 2u     /* consumes the messages: `consume`, `finish` */
#define REEF_PLUGIN_ANALYSIS 4u /* consumes them and gives LAMI tables */
#define REEF_PLUGIN_SOURCE 8u   /* reads a format: `detect`, `read` */

/* What a source's `read` delivers its events to (functions below). */
typedef struct reef_source reef_source;

typedef struct reef_plugin {
	/* REEF_PLUGIN_ABI, and sizeof(reef_plugin) as the plugin saw it. */
	uint32_t abi;
	uint32_t size;
	/* Its name on the command line: letters, digits, '-' and '_'. */
	const char *name;
	/* Its own version and a one-line description, for `reef plugins`. */
	const char *version;
	const char *description;
	/* REEF_PLUGIN_FILTER | REEF_PLUGIN_SINK | REEF_PLUGIN_ANALYSIS. */
	uint32_t kinds;

	/* Makes the state of one reading (NULL: the state is NULL). `args`
	 * is the text after `=` on the command line (`--plugin-filter
	 * NAME=ARGS`), or NULL. A status other than REEF_OK refuses to run;
	 * `error` then says why, given the state set so far (maybe NULL). */
	reef_status (*init)(const char *args, void **state);
	/* Frees the state (NULL: nothing to free). Called once per `init`
	 * that succeeded, whatever happened in between. */
	void (*fini)(void *state);
	/* The message of the last failing call ("" or NULL: none). */
	const char *(*error)(void *state);

	/* Filters: 1 keeps `event`, 0 drops it, a negative reef_status stops
	 * the reading with `error`'s message. Called for events only, in time
	 * order, after `--filter`; notices are always kept. */
	int (*filter)(void *state, const reef_reader *event);

	/* Sinks and analyses: every message in time order (events and
	 * notices; `kind` says which). A status other than REEF_OK stops the
	 * reading. */
	reef_status (*consume)(void *state, const reef_reader *message,
			       reef_message_kind kind);
	/* Sinks and analyses: the reading ended (`status`: REEF_END, or the
	 * reading's error, REEF_ERR_READ, when the traces are damaged: what
	 * came before was given). An analysis sets `*lami` to its results, a
	 * LAMI 1.0 results document (JSON, UTF-8, NUL-terminated) that stays
	 * valid until `fini`; a sink leaves it. */
	reef_status (*finish)(void *state, reef_status status, const char **lami);
	/* An analysis: its LAMI 1.0 metadata document (title, table classes),
	 * static. NULL for other kinds. */
	const char *(*metadata)(void);

	/* Sources. These fields came after the first release of ABI 1: a
	 * host reads them only when `size` covers them, so a plugin built
	 * before them still loads (as a plugin of no source kind). */

	/* Whether the file `path` is in the plugin's format, from its first
	 * `len` bytes `head` (up to 4096; fewer for a shorter file): 1 yes,
	 * 0 no. Called for each input file that is neither a CTF trace nor
	 * claimed by a built-in format, so keep it cheap. NULL: the source
	 * is chosen only by name (`-i NAME`). */
	int (*detect)(const char *path, const uint8_t *head, size_t len);
	/* Reads `path` and delivers its events through the reef_source_*
	 * functions on `out` (valid during the call only): declare event
	 * classes and streams, then each event in its stream's time order.
	 * A status other than REEF_OK ends the reading with `error`'s
	 * message after the events delivered before it. */
	reef_status (*read)(void *state, const char *path, reef_source *out);
} reef_plugin;

/* Sources: delivering events. Every function returns REEF_OK, or
 * REEF_ERR_ARG with reef_error_message() saying what was wrong; the
 * first such misuse also ends the conversion (reef reports it, with the
 * file and the source's offset, after the events completed before it).
 *
 * The types of fields. */
typedef enum reef_source_type {
	REEF_TYPE_U8 = 1,
	REEF_TYPE_U16,
	REEF_TYPE_U32,
	REEF_TYPE_U64,
	REEF_TYPE_S8,
	REEF_TYPE_S16,
	REEF_TYPE_S32,
	REEF_TYPE_S64,
	REEF_TYPE_F32,
	REEF_TYPE_F64,
	REEF_TYPE_STRING /* UTF-8, no NUL byte */
} reef_source_type;

typedef struct reef_source_field {
	const char *name; /* letters, digits and '_', not starting with a digit */
	reef_source_type type;
} reef_source_field;

/* The clock of every timestamp: `frequency` Hz, its zero `offset_ns` ns
 * after the Unix epoch. Default: 1 GHz, 0 (ns since the epoch). Before
 * the first event. */
reef_status reef_source_clock(reef_source *out, uint64_t frequency,
			      int64_t offset_ns);
/* Declares an event class of `count` fields; its id in *id. */
reef_status reef_source_class(reef_source *out, const char *name,
			      const reef_source_field *fields, size_t count,
			      uint32_t *id);
/* Declares a stream (babeltrace2 shows it as the file `PATH#NAME`); its
 * id in *id. Events of one stream come in time order. */
reef_status reef_source_stream(reef_source *out, const char *name,
			       uint32_t *id);
/* An event: begin it, give one value per field in the class's order, end
 * it. An integer value fits its field's type (an unsigned or signed
 * value either way when it fits); a float field takes a float or an
 * integer. */
reef_status reef_source_begin(reef_source *out, uint32_t stream,
			      uint32_t class_id, uint64_t timestamp);
reef_status reef_source_uint(reef_source *out, uint64_t value);
reef_status reef_source_int(reef_source *out, int64_t value);
reef_status reef_source_float(reef_source *out, double value);
reef_status reef_source_string(reef_source *out, const char *value,
			       size_t len);
reef_status reef_source_end(reef_source *out);
/* Where in its file the source is (a byte offset): errors name it. */
reef_status reef_source_offset(reef_source *out, uint64_t offset);

/* The one function a plugin exports. */
const reef_plugin *reef_plugin_describe(void);

#ifdef __cplusplus
}
#endif

#endif /* REEF_PLUGIN_H */
