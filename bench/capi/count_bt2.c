/* bench/capi/count_bt2.c — the same count as count_reef.c through
 * libbabeltrace2's C API: a graph of source.ctf.fs, filter.utils.muxer and
 * a simple sink component that counts the events of each name and sums
 * the payload's integer member FIELD.
 *
 *   count_bt2 FIELD TRACE */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <babeltrace2/babeltrace.h>

struct name_count {
	const bt_event_class *cls;
	const char *name;
	uint64_t n;
};

static struct name_count names[4096];
static size_t nnames;
static uint64_t sum;
static const char *field;
static bt_message_iterator *iter;

static bt_graph_simple_sink_component_initialize_func_status init(bt_message_iterator *it, void *data)
{
	(void)data;
	iter = it;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status consume(bt_message_iterator *it, void *data)
{
	(void)data;
	bt_message_array_const msgs;
	uint64_t count;
	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK: break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END: return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN: return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	default: return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t k = 0; k < count; k++) {
		const bt_message *m = msgs[k];
		if (bt_message_get_type(m) == BT_MESSAGE_TYPE_EVENT) {
			const bt_event *ev = bt_message_event_borrow_event_const(m);
			const bt_event_class *cls = bt_event_borrow_class_const(ev);
			size_t i = 0;
			while (i < nnames && names[i].cls != cls)
				i++;
			if (i == nnames) {
				if (nnames == 4096)
					exit(3);
				names[nnames++] = (struct name_count){cls, bt_event_class_get_name(cls), 0};
			}
			names[i].n++;
			const bt_field *payload = bt_event_borrow_payload_field_const(ev);
			if (payload) {
				const bt_field *f = bt_field_structure_borrow_member_field_by_name_const(payload, field);
				if (f && bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)
					sum += bt_field_integer_unsigned_get_value(f);
			}
		}
		bt_message_put_ref(m);
	}
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct name_count *)a)->name, ((const struct name_count *)b)->name);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: count_bt2 FIELD TRACE\n");
		return 2;
	}
	field = argv[1];
	const bt_plugin *ctf, *utils;
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) != BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &utils) != BT_PLUGIN_FIND_STATUS_OK) {
		fprintf(stderr, "babeltrace2's ctf and utils plugins are not found\n");
		return 1;
	}
	bt_graph *g = bt_graph_create(0);
	bt_value *params = bt_value_map_create();
	bt_value *inputs = NULL;
	bt_value_map_insert_empty_array_entry(params, "inputs", &inputs);
	bt_value_array_append_string_element(inputs, argv[2]);
	const bt_component_source *src;
	const bt_component_filter *mux;
	const bt_component_sink *sink;
	if (bt_graph_add_source_component(g, bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs"), "src",
					  params, BT_LOGGING_LEVEL_NONE, &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_filter_component(g, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"),
					  "mux", NULL, BT_LOGGING_LEVEL_NONE, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(g, "count", init, consume, NULL, NULL, &sink) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		fprintf(stderr, "cannot make the graph\n");
		return 1;
	}
	uint64_t nout = bt_component_source_get_output_port_count(src);
	for (uint64_t i = 0; i < nout; i++) {
		const bt_port_output *o = bt_component_source_borrow_output_port_by_index_const(src, i);
		const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(mux, i);
		if (bt_graph_connect_ports(g, o, in, NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
			fprintf(stderr, "cannot connect port %" PRIu64 "\n", i);
			return 1;
		}
	}
	if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL) !=
	    BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		fprintf(stderr, "cannot connect the sink\n");
		return 1;
	}
	bt_graph_run_status st;
	while ((st = bt_graph_run(g)) == BT_GRAPH_RUN_STATUS_AGAIN)
		;
	if (st != BT_GRAPH_RUN_STATUS_OK) {
		fprintf(stderr, "babeltrace2's graph failed (%d)\n", (int)st);
		return 1;
	}
	qsort(names, nnames, sizeof names[0], by_name);
	for (size_t i = 0; i < nnames; i++)
		printf("%s %" PRIu64 "\n", names[i].name, names[i].n);
	printf("sum %s %" PRIu64 "\n", field, sum);
	bt_value_put_ref(params);
	bt_graph_put_ref(g);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	(void)iter;
	return 0;
}
